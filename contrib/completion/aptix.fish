# fish completion for aptix. Installed as aptix.fish in a directory of
# $fish_complete_path (make install:
# $(PREFIX)/share/fish/vendor_completions.d).
#
# The commands and their options come from aptix itself, so that they
# are those of the binary: 'aptix --list-cmds=help' (name, category,
# one-line help) and 'aptix <cmd> --dump-options' (the option table
# that -h and the man page show). Conversation ids and refs come from
# 'aptix for-each-ref', config keys from 'aptix config --list-keys'. A
# '-C <dir>' on the command line is passed on, so that what is offered
# comes from the store in <dir>.

function __aptix_words
	# the words after 'aptix', up to the cursor
	set -l words (commandline -opc)
	set -e words[1]
	string join \n -- $words
end

function __aptix_command
	# the command word, skipping global options and their values
	set -l words (__aptix_words)
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

function __aptix
	# aptix with the -C options given before the command
	set -l words (__aptix_words)
	set -l dirs
	while set -q words[1]
		switch $words[1]
			case -C
				set -q words[2]; and set -a dirs -C (string replace -r '^~' $HOME -- $words[2])
				set -e words[1]
			case -c
				set -e words[1]
			case '-*'
			case '*'
				break
		end
		set -e words[1]
	end
	aptix $dirs $argv 2>/dev/null
end

function __aptix_needs_command
	not __aptix_command >/dev/null
end

# The first argument after the command that is not an option
function __aptix_subcommand
	set -l words (__aptix_words)
	set -l cmd (__aptix_command); or return 1
	while set -q words[1]
		set -l w $words[1]
		set -e words[1]
		test "$w" = "$cmd"; and break
		contains -- $w -C -c; and set -e words[1]
	end
	for w in $words
		string match -q -- '-*' $w; or begin
			echo $w
			return 0
		end
	end
	return 1
end

function __aptix_commands
	__aptix --list-cmds=help | string replace -r '\t[^\t]*\t' '\t'
end

function __aptix_options
	set -l cmd (__aptix_command); or return
	__aptix $cmd --dump-options | while read -l -d \t kind short long arg neg help
		test "$kind" = option; or continue
		test -n "$long"; and printf '%s\t%s\n' $long $help
		test -n "$short"; and printf '%s\t%s\n' $short $help
	end
end

function __aptix_conversations
	__aptix for-each-ref --format='%(conversation)'
end

function __aptix_names
	echo HEAD
	__aptix_conversations
	__aptix for-each-ref --format='%(refname)'
end

function __aptix_config_keys
	__aptix config --list-keys | while read -l -d \t key type default range help
		printf '%s\t%s\n' $key $help
	end
end

# Is the word before the cursor one of the options given?
function __aptix_after
	set -l prev (commandline -opc)[-1]
	contains -- $prev $argv
end

# Does the command take a conversation or a session as an argument?
function __aptix_command_is
	__aptix_command | string match -qr -- "^($argv[1])\$"
end

function __aptix_arguments
	set -l cmd (__aptix_command); or return
	set -l sub (__aptix_subcommand)
	switch $cmd
		case help
			__aptix_commands
		case config
			test -z "$sub"; and __aptix_config_keys
		case conversation
			switch "$sub"
				case ''
					printf '%s\n' list rename archive unarchive delete
				case rename archive unarchive delete
					__aptix_conversations
			end
		case switch usage sessions share
			__aptix_conversations
		case remote
			switch "$sub"
				case ''
					printf '%s\n' add remove
				case remove rm
					__aptix remote
			end
		case push fetch
			if test -z "$sub"
				__aptix remote
			else if test $cmd = push
				__aptix_conversations
			end
		case clone
			test -n "$sub"; and __fish_complete_directories (commandline -ct)
		case show log fork rerun rev-parse cat-object diff reflog update-ref symbolic-ref chat export
			__aptix_names
		case import
			if test -z "$sub"
				printf '%s\n' codex claude gemini opencode json session-md
			else
				__fish_complete_path (commandline -ct)
			end
	end
end

function __aptix_wants_argument
	not __aptix_needs_command; or return 1
	string match -q -- '-*' (commandline -ct); and return 1
	__aptix_after --conversation --session --file --files-from -F; and return 1
	__aptix_command_is export; and __aptix_after --format -o --output; and return 1
	__aptix_command_is search; and __aptix_after --status; and return 1
	__aptix_command_is usage; and __aptix_after -c; and return 1
	return 0
end

complete -c aptix -f
complete -c aptix -n __aptix_needs_command -s C -x -a '(__fish_complete_directories (commandline -ct))' -d 'run as if started in <path>'
complete -c aptix -n __aptix_needs_command -s c -x -a '(__aptix_config_keys | string replace -r "\t" "=\t")' -d 'set a configuration value for this command'
complete -c aptix -n __aptix_needs_command -s p -l paginate -d 'pipe the output into a pager'
complete -c aptix -n __aptix_needs_command -l no-pager -d 'do not pipe the output into a pager'
complete -c aptix -n __aptix_needs_command -s v -l version -d 'print the version'
complete -c aptix -n __aptix_needs_command -s h -l help -d 'list the commands'
complete -c aptix -n '__aptix_needs_command; and not __aptix_after -C -c' -a '(__aptix_commands)'
complete -c aptix -n 'not __aptix_needs_command; and string match -q -- "-*" (commandline -ct)' -a '(__aptix_options)'
complete -c aptix -n 'not __aptix_needs_command; and __aptix_after --conversation' -x -a '(__aptix_conversations)'
complete -c aptix -n 'not __aptix_needs_command; and __aptix_command_is usage; and __aptix_after -c' -x -a '(__aptix_conversations)'
complete -c aptix -n 'not __aptix_needs_command; and __aptix_after --session' -x -a '(__aptix_names)'
complete -c aptix -n 'not __aptix_needs_command; and __aptix_after --file --files-from -F' -F
complete -c aptix -n 'not __aptix_needs_command; and __aptix_command_is export; and __aptix_after --format' -x -a 'session-md json markdown'
complete -c aptix -n 'not __aptix_needs_command; and __aptix_command_is export; and __aptix_after -o --output' -F
complete -c aptix -n 'not __aptix_needs_command; and __aptix_command_is search; and __aptix_after --status' -x -a 'created committed awaiting_tool_results failed archived'
complete -c aptix -n __aptix_wants_argument -a '(__aptix_arguments)'
complete -c aptix -n '__aptix_wants_argument; and __aptix_command_is "continue|status|index|credscan|hash-object|purge"' -F
