#!/bin/sh
test_description='an instruction from $EDITOR on a terminal, as git commit

With no -m or -F and stdin a terminal, continue opens the editor on a
file of help lines; those lines are left out, and an empty instruction
aborts before anything is stored.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

test_lazy_prereq TTY '
	script -qec "test -t 0" /dev/null </dev/null
'

# on_tty <command>: run a shell command with a terminal as stdin and
# stdout (util-linux script); its exit code goes to ./rc
on_tty () {
	script -qec "$1; echo \$? >rc" /dev/null </dev/null | tr -d '\r'
}

# editor <name> <text>: ./<name>, an editor that saves what it was given
# to <name>.seen and writes <text>
editor () {
	write_script "$1" <<-EOF
	cp "\$1" "$1.seen" &&
	printf '%s\n' "$2" >"\$1"
	EOF
}

test_expect_success TTY 'setup' '
	start_standin &&
	aptix init -q &&
	editor fake-editor "edited instruction
# a comment line, left out

" &&
	editor app-editor "from APTIX_EDITOR" &&
	editor cfg-editor "from core.editor" &&
	editor visual-editor "from VISUAL"
'

test_expect_success TTY 'the editor writes the instruction' '
	EDITOR=./fake-editor on_tty "aptix continue --no-rag" >out &&
	test "$(cat rc)" = 0 &&
	grep "^# Write the instruction" fake-editor.seen &&
	aptix show --format=%I >instr &&
	echo "edited instruction" >expect &&
	test_cmp expect instr &&
	last_request_body >body &&
	test "$(json_field .input[0].content <body)" = "edited instruction"
'

test_expect_success TTY 'APTIX_EDITOR, core.editor, VISUAL, EDITOR: that order' '
	test_when_finished "aptix config --unset core.editor || :" &&
	aptix config core.editor ./cfg-editor &&
	APTIX_EDITOR=./app-editor VISUAL=./visual-editor EDITOR=./fake-editor \
		on_tty "aptix continue --dry-run --no-rag" >out &&
	grep "from APTIX_EDITOR" out &&
	VISUAL=./visual-editor EDITOR=./fake-editor \
		on_tty "aptix continue --dry-run --no-rag" >out &&
	grep "from core.editor" out &&
	aptix config --unset core.editor &&
	VISUAL=./visual-editor EDITOR=./fake-editor \
		on_tty "aptix continue --dry-run --no-rag" >out &&
	grep "from VISUAL" out
'

test_expect_success TTY 'an empty instruction aborts and stores nothing' '
	objects=$(object_count) &&
	head=$(aptix rev-parse HEAD) &&
	requests=$(request_count) &&
	EDITOR=: on_tty "aptix continue --no-rag" >out &&
	test "$(cat rc)" = 1 &&
	grep "^Aborting: the instruction is empty" out &&
	test "$(object_count)" = "$objects" &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	test "$(request_count)" = "$requests"
'

test_expect_success TTY 'a failing editor is fatal and stores nothing' '
	objects=$(object_count) &&
	EDITOR=false on_tty "aptix continue --no-rag" >out &&
	test "$(cat rc)" = 128 &&
	grep "problem with the editor .false." out &&
	test "$(object_count)" = "$objects"
'

test_expect_success 'no terminal: no editor, the instruction is read' '
	echo "from a pipe" | EDITOR=./fake-editor aptix continue --dry-run \
		--no-rag >out &&
	grep "from a pipe" out
'

test_done
