#compdef aptix
# zsh completion for aptix. Installed as _aptix in a directory of
# $fpath (make install: $(PREFIX)/share/zsh/vendor-completions).
#
# The commands and their options come from aptix itself, so that they
# are those of the binary: 'aptix --list-cmds=help' (name, category,
# one-line help) and 'aptix <cmd> --dump-options' (the option table
# that -h and the man page show). Conversation ids and refs come from
# 'aptix for-each-ref', config keys from 'aptix config --list-keys'. A
# '-C <dir>' on the command line is passed on, so that what is offered
# comes from the store in <dir>.

# aptix with the -C of the line being completed
_aptix_run() {
	local -a dir
	[[ -n ${_aptix_dir-} ]] && dir=(-C ${~_aptix_dir})
	aptix $dir "$@" 2>/dev/null
}

_aptix_commands() {
	local -a cmds
	cmds=(${(f)"$(_aptix_run --list-cmds=help |
		awk -F '\t' '{ gsub(/:/, "\\:", $1); print $1 ":" $3 }')"})
	_describe -t commands 'aptix command' cmds
}

_aptix_options() {
	local -a opts
	opts=(${(f)"$(_aptix_run "$1" --dump-options |
		awk -F '\t' '$1 == "option" {
			h = $6; gsub(/:/, "\\:", h)
			if ($3 != "") print $3 ":" h
			if ($2 != "") print $2 ":" h
		}')"})
	_describe -t options 'aptix option' opts
}

_aptix_conversations() {
	local -a convs
	convs=(${(f)"$(_aptix_run for-each-ref --format='%(conversation)')"})
	compadd -a convs
}

_aptix_names() {
	local -a names
	names=(HEAD ${(f)"$(_aptix_run for-each-ref \
		--format='%(conversation)')"} \
		${(f)"$(_aptix_run for-each-ref --format='%(refname)')"})
	compadd -a names
}

_aptix_config_keys() {
	local -a keys
	keys=(${(f)"$(_aptix_run config --list-keys | cut -f1)"})
	compadd "$@" -a keys
}

# Does option $2 of command $1 take a value?
_aptix_takes_value() {
	_aptix_run "$1" --dump-options | awk -F '\t' -v o="$2" \
		'$1 == "option" && ($2 == o || $3 == o) && $4 != "" { f = 1 }
		 END { exit !f }'
}

# The arguments of command $1 (words[1] is the command).
_aptix_arguments() {
	local prev=$words[CURRENT-1] sub= i
	case $prev in
	--conversation) _aptix_conversations; return ;;
	--session) _aptix_names; return ;;
	-c) [[ $1 == usage ]] && { _aptix_conversations; return } ;;
	--file|--files-from|-F) _files; return ;;
	--format) [[ $1 == export ]] && {
		local -a formats=(session-md json markdown)
		compadd -a formats; return } ;;
	-o|--output) [[ $1 == export ]] && { _files; return } ;;
	--status) [[ $1 == search ]] && {
		local -a st=(created committed awaiting_tool_results failed archived)
		compadd -a st; return } ;;
	-*) _aptix_takes_value $1 $prev && return ;;
	esac
	for ((i = 2; i < CURRENT; i++)); do
		[[ $words[i] != -* ]] && { sub=$words[i]; break }
	done
	case $1 in
	help) _aptix_commands ;;
	config) [[ -z $sub ]] && _aptix_config_keys ;;
	conversation)
		case $sub in
		'') local -a subs=(list rename archive unarchive delete)
			compadd -a subs ;;
		rename|archive|unarchive|delete) _aptix_conversations ;;
		esac
		;;
	switch|usage|sessions|share) _aptix_conversations ;;
	remote)
		case $sub in
		'') local -a subs=(add remove)
			compadd -a subs ;;
		remove|rm) local -a rems=(${(f)"$(_aptix_run remote)"})
			compadd -a rems ;;
		esac
		;;
	push|fetch)
		if [[ -z $sub ]]; then
			local -a rems=(${(f)"$(_aptix_run remote)"})
			compadd -a rems
		elif [[ $1 == push ]]; then
			_aptix_conversations
		fi
		;;
	clone) [[ -n $sub ]] && _directories ;;
	show|log|fork|rerun|rev-parse|cat-object|diff|reflog|update-ref|\
	symbolic-ref|chat|export)
		_aptix_names ;;
	continue|status|index|credscan|hash-object|purge) _files ;;
	import)
		if [[ -z $sub ]]; then
			local -a tools=(codex claude gemini opencode json session-md)
			compadd -a tools
		else
			_files
		fi
		;;
	esac
}

_aptix() {
	local curcontext=$curcontext state line _aptix_dir
	typeset -A opt_args

	_arguments -C \
		'*-C[run as if started in <path>]:path:_directories' \
		'*-c[set a configuration value for this command]:key=value:_aptix_config_keys -S =' \
		'(-p --paginate --no-pager)'{-p,--paginate}'[pipe the output into a pager]' \
		'(-p --paginate)--no-pager[do not pipe the output into a pager]' \
		'(- *)'{-v,--version}'[print the version]' \
		'(- *)'{-h,--help}'[list the commands]' \
		'1: :_aptix_commands' \
		'*:: :->args' && return
	_aptix_dir=${opt_args[-C]##*:}
	case $state in
	args)
		if [[ $words[CURRENT] == -* ]]; then
			_aptix_options $words[1]
			return
		fi
		_aptix_arguments $words[1]
		;;
	esac
}

_aptix "$@"
