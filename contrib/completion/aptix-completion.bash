# bash completion for aptix.
#
#	source contrib/completion/aptix-completion.bash
#
# Completes command names (from 'aptix --list-cmds=all'), the long
# options of each command (from its '-h' text), conversation ids and
# ref names (from 'aptix for-each-ref').

__aptix_commands() {
	aptix --list-cmds=all 2>/dev/null
}

__aptix_options() {
	aptix "$1" -h 2>/dev/null |
	sed -n 's/^ *\(-[a-zA-Z], \)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p' |
	sort -u
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
		-C) i=$((i + 1)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [ -z "$cmd" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(__aptix_commands) --version --help -C" -- "$cur")
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
