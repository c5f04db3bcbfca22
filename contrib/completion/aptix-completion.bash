# bash completion for aptix.
#
#	source contrib/completion/aptix-completion.bash
#
# Completes command names (from 'aptix --list-cmds=all'), the long
# options of each command (from its option table: 'aptix <cmd>
# --dump-options', what -h and the man page show), the global options,
# conversation ids and ref names (from 'aptix for-each-ref'), config
# keys (from 'aptix config --list-keys') and directories after -C. A
# '-C <dir>' on the command line is passed on, so that what is offered
# comes from the store in <dir>.

# aptix with the -C options of the line being completed
__aptix() {
	aptix "${__aptix_C[@]}" "$@" 2>/dev/null
}

__aptix_commands() {
	__aptix --list-cmds=all
}

__aptix_options() {
	if [ "$1" = aptix ]; then
		__aptix --dump-options
	else
		__aptix "$1" --dump-options
	fi | awk -F '\t' '$1 == "option" && $3 != "" { print $3 }' | sort -u
}

__aptix_conversations() {
	__aptix for-each-ref --format='%(conversation)'
}

__aptix_names() {
	__aptix_conversations
	__aptix for-each-ref --format='%(refname)'
	echo HEAD
}

__aptix_config_keys() {
	__aptix config --list-keys | cut -f1
}

# COMPREPLY from a list of words
__aptix_reply() {
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$2")
}

# The value of an option (prev, or --opt= in cur): 1 when completed.
__aptix_option_value() {
	local prev=$1 cur=$2 opt=$1 val=$2
	case $cur in
	--*=*) opt=${cur%%=*} val=${cur#*=} ;;
	esac
	case $opt in
	--conversation|--session|-c)
		# usage -c / --conversation; chat --session takes a session too
		[ "$opt" = -c ] && [ "$__aptix_cmd" != usage ] && return 1
		if [ "$opt" = --session ]; then
			__aptix_reply "$(__aptix_names)" "$val"
		else
			__aptix_reply "$(__aptix_conversations)" "$val"
		fi
		;;
	--file|--files-from|-F)
		mapfile -t COMPREPLY < <(compgen -f -- "$val")
		;;
	--status)
		# search's: a session's status
		[ "$__aptix_cmd" = search ] || return 1
		__aptix_reply "created committed awaiting_tool_results failed archived" "$val"
		;;
	--format|-o|--output)
		# export's; log's --format takes a pretty format
		[ "$__aptix_cmd" = export ] || return 1
		if [ "$opt" = --format ]; then
			__aptix_reply "session-md json markdown" "$val"
		else
			mapfile -t COMPREPLY < <(compgen -f -- "$val")
		fi
		;;
	*)
		return 1
		;;
	esac
	if [ "$opt" != "$prev" ]; then
		local i
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]=$opt=${COMPREPLY[i]}
		done
	fi
	return 0
}

# The arguments after the command (words[start..] are the command's).
__aptix_arguments() {
	local cmd=$1 cur=$2 sub=$3
	case $cmd in
	help)
		__aptix_reply "$(__aptix_commands)" "$cur" ;;
	config)
		# the key comes first; no value is guessed
		[ -z "$sub" ] && __aptix_reply "$(__aptix_config_keys)" "$cur" ;;
	conversation)
		case $sub in
		'') __aptix_reply "list rename archive unarchive delete" "$cur" ;;
		rename|archive|unarchive|delete)
			__aptix_reply "$(__aptix_conversations)" "$cur" ;;
		esac
		;;
	switch|usage|sessions|share)
		__aptix_reply "$(__aptix_conversations)" "$cur" ;;
	remote)
		case $sub in
		'') __aptix_reply "add remove" "$cur" ;;
		remove|rm) __aptix_reply "$(__aptix remote)" "$cur" ;;
		esac
		;;
	push)
		# the remote first, then conversations
		if [ -z "$sub" ]; then
			__aptix_reply "$(__aptix remote)" "$cur"
		else
			__aptix_reply "$(__aptix_conversations)" "$cur"
		fi
		;;
	fetch)
		[ -z "$sub" ] && __aptix_reply "$(__aptix remote)" "$cur" ;;
	clone)
		[ -n "$sub" ] && mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	show|log|fork|rerun|rev-parse|cat-object|diff|reflog|update-ref|\
	symbolic-ref|chat|export)
		__aptix_reply "$(__aptix_names)" "$cur" ;;
	continue|status|index|credscan|hash-object|purge)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	import)
		# the tool first, then its files or directories
		if [ -z "$sub" ]; then
			__aptix_reply "codex claude gemini opencode json session-md" "$cur"
		else
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		fi
		;;
	esac
}

_aptix() {
	local cur prev cmd i sub= start
	local -a __aptix_C=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-C)
			i=$((i + 1))
			[ $i -lt $COMP_CWORD ] &&
				__aptix_C+=(-C "${COMP_WORDS[i]/#\~/$HOME}")
			;;
		-c) i=$((i + 1)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; start=$((i + 1)); break ;;
		esac
	done
	COMPREPLY=()
	if [ -z "$cmd" ]; then
		case $prev in
		-C)
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			return ;;
		-c)
			compopt -o nospace 2>/dev/null
			__aptix_reply "$(__aptix_config_keys | sed 's/$/=/')" "$cur"
			return ;;
		esac
		case $cur in
		-*) __aptix_reply "$(__aptix_options aptix) -C -c" "$cur" ;;
		*) __aptix_reply "$(__aptix_commands)" "$cur" ;;
		esac
		return
	fi
	local __aptix_cmd=$cmd
	__aptix_option_value "$prev" "$cur" && return
	case $prev in
	-*)	# the value of another option (-m <text>, --model <model>)
		if __aptix "$cmd" --dump-options | awk -F '\t' -v o="$prev" \
			'$1 == "option" && ($2 == o || $3 == o) && $4 != "" { f = 1 }
			 END { exit !f }'; then
			return
		fi
		;;
	esac
	case $cur in
	--*)
		__aptix_reply "$(__aptix_options "$cmd")" "$cur"
		return ;;
	esac
	# the first argument that is not an option: a subcommand or a key
	for ((i = start; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) sub=${COMP_WORDS[i]}; break ;;
		esac
	done
	__aptix_arguments "$cmd" "$cur" "$sub"
}

complete -F _aptix aptix
