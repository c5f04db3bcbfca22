#compdef aptix
# zsh completion for aptix. Installed as _aptix in a directory of
# $fpath (make install: $(PREFIX)/share/zsh/vendor-completions).
#
# The commands and their options come from aptix itself, so that they
# are those of the binary: 'aptix --list-cmds=help' (name, category,
# one-line help) and 'aptix <cmd> --dump-options' (the option table
# that -h and the man page show). Conversation ids and refs come from
# 'aptix for-each-ref'.

_aptix_commands() {
	local -a cmds
	cmds=(${(f)"$(aptix --list-cmds=help 2>/dev/null |
		awk -F '\t' '{ gsub(/:/, "\\:", $1); print $1 ":" $3 }')"})
	_describe -t commands 'aptix command' cmds
}

_aptix_options() {
	local -a opts
	opts=(${(f)"$(aptix "$1" --dump-options 2>/dev/null |
		awk -F '\t' '$1 == "option" {
			h = $6; gsub(/:/, "\\:", h)
			if ($3 != "") print $3 ":" h
			if ($2 != "") print $2 ":" h
		}')"})
	_describe -t options 'aptix option' opts
}

_aptix_names() {
	local -a names
	names=(HEAD ${(f)"$(aptix for-each-ref \
		--format='%(conversation)' 2>/dev/null)"} \
		${(f)"$(aptix for-each-ref --format='%(refname)' 2>/dev/null)"})
	compadd -a names
}

_aptix() {
	local curcontext=$curcontext state line
	typeset -A opt_args

	_arguments -C \
		'*-C[run as if started in <path>]:path:_directories' \
		'*-c[set a configuration value for this command]:key=value:' \
		'(-p --paginate --no-pager)'{-p,--paginate}'[pipe the output into a pager]' \
		'(-p --paginate)--no-pager[do not pipe the output into a pager]' \
		'(- *)'{-v,--version}'[print the version]' \
		'(- *)'{-h,--help}'[list the commands]' \
		'1: :_aptix_commands' \
		'*:: :->args' && return
	case $state in
	args)
		if [[ $words[CURRENT] == -* ]]; then
			_aptix_options $words[1]
			return
		fi
		case $words[1] in
		show|log|fork|rerun|rev-parse|cat-object|switch|diff|reflog|\
		update-ref|symbolic-ref|conversation)
			_aptix_names ;;
		help)
			_aptix_commands ;;
		*)
			_files ;;
		esac
		;;
	esac
}

_aptix "$@"
