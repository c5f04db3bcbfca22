# fish completion for aptix. Installed as aptix.fish in a directory of
# $fish_complete_path (make install:
# $(PREFIX)/share/fish/vendor_completions.d).
#
# The commands and their options come from aptix itself, so that they
# are those of the binary: 'aptix --list-cmds=help' (name, category,
# one-line help) and 'aptix <cmd> --dump-options' (the option table
# that -h and the man page show). Conversation ids and refs come from
# 'aptix for-each-ref'.

function __aptix_command
	# the command word, skipping global options and their values
	set -l words (commandline -opc)
	set -e words[1]
	while set -q words[1]
		switch $words[1]
			case -C -c
				set -e words[1]
			case '-*'
			case '*'
				echo $words[1]
				return 0
		end
		set -e words[1]
	end
	return 1
end

function __aptix_needs_command
	not __aptix_command >/dev/null
end

function __aptix_commands
	aptix --list-cmds=help 2>/dev/null | string replace -r '\t[^\t]*\t' '\t'
end

function __aptix_options
	set -l cmd (__aptix_command); or return
	aptix $cmd --dump-options 2>/dev/null | while read -l -d \t kind short long arg neg help
		test "$kind" = option; or continue
		test -n "$long"; and printf '%s\t%s\n' $long $help
		test -n "$short"; and printf '%s\t%s\n' $short $help
	end
end

function __aptix_names
	echo HEAD
	aptix for-each-ref --format='%(conversation)' 2>/dev/null
	aptix for-each-ref --format='%(refname)' 2>/dev/null
end

complete -c aptix -f
complete -c aptix -n __aptix_needs_command -s C -r -d 'run as if started in <path>'
complete -c aptix -n __aptix_needs_command -s c -x -d 'set a configuration value for this command'
complete -c aptix -n __aptix_needs_command -s p -l paginate -d 'pipe the output into a pager'
complete -c aptix -n __aptix_needs_command -l no-pager -d 'do not pipe the output into a pager'
complete -c aptix -n __aptix_needs_command -s v -l version -d 'print the version'
complete -c aptix -n __aptix_needs_command -s h -l help -d 'list the commands'
complete -c aptix -n __aptix_needs_command -a '(__aptix_commands)'
complete -c aptix -n 'not __aptix_needs_command; and string match -q -- "-*" (commandline -ct)' -a '(__aptix_options)'
complete -c aptix -n '__aptix_command | string match -qr "^(show|log|fork|rerun|rev-parse|cat-object|switch|diff|reflog|update-ref|symbolic-ref|conversation)\$"' -a '(__aptix_names)'
complete -c aptix -n '__aptix_command | string match -qr "^(continue|status|index|credscan|hash-object)\$"' -F
