# bash completion for aptix.
#
#	source contrib/completion/aptix-completion.bash
#
# Completes command names (from 'aptix --list-cmds=all'), the long
# options of each command (from its option table: 'aptix <cmd>
# --dump-options', what -h and the man page show), the global options,
# conversation ids and ref names (from 'aptix for-each-ref').

__aptix_commands() {
	aptix --list-cmds=all 2>/dev/null
}

__aptix_options() {
	if [ "$1" = aptix ]; then
		aptix --dump-options 2>/dev/null
	else
		aptix "$1" --dump-options 2>/dev/null
	fi | awk -F '\t' '$1 == "option" && $3 != "" { print $3 }' | sort -u
}

__aptix_names() {
	aptix for-each-ref --format='%(conversation)' 2>/dev/null
	aptix for-each-ref --format='%(refname)' 2>/dev/null
	echo HEAD
}

_aptix() {
	local cur cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-C|-c) i=$((i + 1)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [ -z "$cmd" ]; then
		case $cur in
		-*) mapfile -t COMPREPLY < <(compgen -W "$(__aptix_options aptix) -C -c" -- "$cur") ;;
		*) mapfile -t COMPREPLY < <(compgen -W "$(__aptix_commands)" -- "$cur") ;;
		esac
		return
	fi
	case $cur in
	--*)
		mapfile -t COMPREPLY < <(compgen -W "$(__aptix_options "$cmd")" -- "$cur")
		;;
	*)
		case $cmd in
		show|log|fork|rerun|rev-parse|cat-object|switch|diff|reflog|update-ref|symbolic-ref)
			mapfile -t COMPREPLY < <(compgen -W "$(__aptix_names)" -- "$cur")
			;;
		*)
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			;;
		esac
		;;
	esac
}

complete -F _aptix aptix
