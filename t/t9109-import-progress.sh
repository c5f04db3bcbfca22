#!/bin/sh
test_description='aptix import: a progress bar on a terminal (tmux), none off one, nor with --json or -q'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh

test_lazy_prereq TMUX 'tmux -V'

FIX=$TEST_DIRECTORY/fixtures/import
BAR='importing \[#\{30\}\] 100%'

# A tmux server per test, stopped when the test ends.
tmux_ () {
	# shellcheck disable=SC2154 # test_count: test-lib.sh
	tmux -S "$TRASH_DIRECTORY/tmux.$test_count.sock" -f /dev/null "$@"
}

# in_terminal <name> <command>: run the command in a 200x24 terminal,
# every byte it writes to it kept in <name>.raw; wait until it exits,
# its exit code in <name>.done. The pane stays for capture-pane.
in_terminal () {
	local name=$1
	shift
	rm -f "$name.go" "$name.done" "$name.raw" &&
	tmux_ new-session -d -x 200 -y 24 -s "$name" \
		"until test -f $name.go; do sleep 0.05; done; $*; echo \$? >$name.tmp; mv $name.tmp $name.done; sleep 60" &&
	tmux_ pipe-pane -t "$name" -o "cat >\"$TRASH_DIRECTORY/$name.raw\"" &&
	touch "$name.go" &&
	test_wait_for_file "$name.done" 60
}

screen () {
	tmux_ capture-pane -p -t "$1" | sed -e "/^\$/d"
}

# replay <name>: the bytes it wrote up to the bar's clearing, shown in a
# terminal of their own: the screen as it was just before the end
replay () {
	python3 - "$1.raw" "$1.bar" <<-\EOF &&
	import sys
	data = open(sys.argv[1], "rb").read()
	cut = data.rfind(b"\r\x1b[K")
	assert cut > 0, "the bar is never cleared"
	open(sys.argv[2], "wb").write(data[:cut])
	EOF
	rm -f "$1.done" &&
	tmux_ new-session -d -x 80 -y 24 -s "$1-replay" \
		"cat $1.bar; echo 0 >$1.done; sleep 60" &&
	test_wait_for_file "$1.done" 30 &&
	screen "$1-replay"
}

test_expect_success 'setup' '
	aptix init -q tty &&
	aptix init -q json &&
	aptix init -q quiet &&
	aptix init -q pipe
'

test_expect_success TMUX,PYTHON3 'on a terminal: a bar that fills, cleared for the summary' '
	test_when_finished "tmux_ kill-server" &&
	in_terminal bar "APTIX_DIR=\"$TRASH_DIRECTORY/tty/.aptix\" aptix import codex \"$FIX/codex-0.169\"" &&
	test "$(cat bar.done)" = 0 &&
	# the bar at each file: the first of two, then the whole
	tr "\r" "\n" <bar.raw | grep "^importing \[" >bars &&
	grep "^importing \[#\{1,29\} *\] *[1-9][0-9]%\$" bars &&
	grep -x "$BAR" bars &&
	# as a person sees it before the end
	replay bar >before &&
	grep -x "$BAR" before &&
	# and at the end: the summary alone, on the line the bar had
	screen bar >after &&
	cat >expect <<-\EOF &&
	imported 2 files: 5 turns (5 new, in 2 conversations), 0 tool calls, 0 flagged, 0 skipped
	EOF
	test_cmp expect after
'

test_expect_success TMUX,PYTHON3 'with --json on a terminal: no bar, the JSON alone' '
	test_when_finished "tmux_ kill-server" &&
	in_terminal js "APTIX_DIR=\"$TRASH_DIRECTORY/json/.aptix\" aptix import --json codex \"$FIX/codex-0.169\"" &&
	test "$(cat js.done)" = 0 &&
	! grep "importing" js.raw &&
	! grep "$(printf "\033")" js.raw &&
	screen js >after &&
	test_line_count = 1 after &&
	grep "^{\"byte_count\":.*\"new_turn_count\":5," after
'

test_expect_success TMUX,PYTHON3 'with -q on a terminal: no bar' '
	test_when_finished "tmux_ kill-server" &&
	in_terminal q "APTIX_DIR=\"$TRASH_DIRECTORY/quiet/.aptix\" aptix import -q codex \"$FIX/codex-0.169\"" &&
	test "$(cat q.done)" = 0 &&
	! grep "importing" q.raw &&
	screen q >after &&
	grep -x "imported 2 files: 5 turns (5 new, in 2 conversations), 0 tool calls, 0 flagged, 0 skipped" after
'

test_expect_success 'off a terminal: no bar, nothing on stderr' '
	instore pipe aptix import codex "$FIX/codex-0.169" >out 2>err &&
	test_must_be_empty err &&
	grep -x "imported 2 files: 5 turns (5 new, in 2 conversations), 0 tool calls, 0 flagged, 0 skipped" out
'

test_done
