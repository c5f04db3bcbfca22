#!/bin/sh

test_description='the pager of log, show, diff and reflog

On a terminal their output goes through $APTIX_PAGER (else $PAGER);
never when stdout is a file or a pipe, nor with --no-pager, nor when
the pager is "cat" or empty. Errors found before any output do not
start it.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# run_tty <command>: run a shell command on a terminal (util-linux
# script), output without carriage returns
run_tty () {
	script -qec "$1" /dev/null </dev/null | tr -d '\r'
}

test_lazy_prereq TTY '
	script -qec "test -t 1" /dev/null </dev/null
'

# The commands that page, each with arguments that print something.
paged_commands () {
	cat <<-EOF
	log --oneline
	show
	diff $A $B
	reflog
	EOF
}

test_expect_success 'setup' '
	aptix init -q &&
	test_tick &&
	A=$(make_session c1 "first") &&
	test_tick &&
	B=$(make_session c1 "second" "$A") &&
	aptix update-ref refs/conversations/c1 "$A" &&
	aptix update-ref refs/conversations/c1 "$B" &&
	aptix symbolic-ref HEAD refs/conversations/c1 &&
	mkdir bin &&
	# a pager that leaves a mark, and tags the lines it shows
	write_script bin/mark-pager <<-\EOF &&
	echo "$0" >>pager-ran
	sed "s/^/paged:/"
	EOF
	PATH="$PWD/bin:$PATH" &&
	export PATH
'

test_expect_success TTY 'on a terminal each command runs the pager' '
	paged_commands >cmds &&
	while read -r cmd
	do
		rm -f pager-ran &&
		run_tty "APTIX_PAGER=mark-pager aptix $cmd" >out &&
		test_path_is_file pager-ran &&
		grep "^paged:" out &&
		! grep -v "^paged:" out || return 1
	done <cmds
'

test_expect_success TTY 'the pager sees what the command prints' '
	aptix show --no-pager >expect.raw &&
	sed "s/^/paged:/" expect.raw >expect &&
	run_tty "APTIX_PAGER=mark-pager aptix show" >actual &&
	test_cmp expect actual
'

test_expect_success TTY 'colors follow the terminal, not the pipe' '
	esc=$(printf "\033") &&
	run_tty "TERM=xterm APTIX_PAGER=mark-pager aptix show" >out &&
	grep "^paged:${esc}\[33msession $B" out &&
	run_tty "TERM=xterm APTIX_PAGER=mark-pager aptix log -n 1" >out &&
	grep "^paged:${esc}\[33msession $B" out &&
	run_tty "TERM=dumb APTIX_PAGER=mark-pager aptix show" >out &&
	! grep "$esc" out
'

test_expect_success TTY '$PAGER when $APTIX_PAGER is unset' '
	paged_commands >cmds &&
	while read -r cmd
	do
		rm -f pager-ran &&
		run_tty "unset APTIX_PAGER; PAGER=mark-pager aptix $cmd" \
			>out &&
		test_path_is_file pager-ran || return 1
	done <cmds
'

test_expect_success TTY 'no pager with --no-pager, "cat" or an empty one' '
	rm -f pager-ran &&
	run_tty "APTIX_PAGER=mark-pager aptix log --no-pager" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix show --no-pager" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix diff --no-pager $A $B" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix reflog --no-pager" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix reflog show --no-pager c1" \
		>out &&
	run_tty "APTIX_PAGER=cat PAGER=mark-pager aptix show" >out &&
	run_tty "APTIX_PAGER= PAGER=mark-pager aptix show" >out &&
	test_path_is_missing pager-ran &&
	grep "second" out
'

test_expect_success TTY 'an error before any output starts no pager' '
	rm -f pager-ran &&
	run_tty "APTIX_PAGER=mark-pager aptix show nosuchname" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix diff $A nosuchname" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix reflog refs/nosuchref" >out &&
	run_tty "APTIX_PAGER=mark-pager aptix log nosuchname" >out &&
	test_path_is_missing pager-ran &&
	grep "^fatal: unknown session or conversation" out
'

test_expect_success 'not a terminal: no pager, the same output' '
	paged_commands >cmds &&
	while read -r cmd
	do
		rm -f pager-ran &&
		# shellcheck disable=SC2086 # cmd is words
		APTIX_PAGER=mark-pager aptix $cmd >out &&
		# shellcheck disable=SC2086
		aptix $cmd --no-pager >expect &&
		test_path_is_missing pager-ran &&
		test_cmp expect out &&
		PAGER=mark-pager aptix $cmd | cat >out &&
		test_path_is_missing pager-ran &&
		test_cmp expect out || return 1
	done <cmds
'

test_expect_success TTY 'aptix --no-pager turns the pager off' '
	rm -f pager-ran &&
	run_tty "APTIX_PAGER=mark-pager aptix --no-pager log --oneline" >out &&
	test_path_is_missing pager-ran &&
	grep second out &&
	! grep "^paged:" out
'

test_expect_success TTY 'aptix -p pages a command that does not page' '
	rm -f pager-ran &&
	run_tty "APTIX_PAGER=mark-pager aptix -p rev-parse HEAD" >out &&
	test_path_is_file pager-ran &&
	grep "^paged:$B" out &&
	rm -f pager-ran &&
	run_tty "APTIX_PAGER=mark-pager aptix --paginate rev-parse HEAD" >out &&
	test_path_is_file pager-ran
'

test_expect_success 'aptix -p does not page into a pipe' '
	rm -f pager-ran &&
	APTIX_PAGER=mark-pager aptix -p rev-parse HEAD >out &&
	test_path_is_missing pager-ran &&
	echo "$B" >expect &&
	test_cmp expect out
'

test_done
