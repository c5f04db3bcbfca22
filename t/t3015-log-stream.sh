#!/bin/sh
test_description='log --all streams: the first screen comes before the
walk ends, the output is what the walk read whole gives, and a reader
that closes the pipe ends log quietly, as it ends git log'
. "$(dirname "$0")"/test-lib.sh

# 1,200 sessions in 12 conversations (forks, failed attempts), with the
# same history as a git repository: a few hundred KB of log --all, more
# than a pipe holds
test_expect_success 'a history larger than a pipe' '
	sh "$TEST_DIRECTORY/perf/build-store.sh" --git "$TRASH_DIRECTORY/git" \
		12 1200 big >/dev/null &&
	(cd big && aptix log --graph --all >../full) &&
	test_line_count -gt 8000 full
'

test_expect_success 'the first screen is the start of the whole' '
	(cd big && aptix log --graph --all | head -n 50 >../first) &&
	head -n 50 full >expect &&
	test_cmp expect first &&
	(cd big && aptix log --oneline --all | head -n 3 >../first) &&
	(cd big && aptix log --oneline --all >../all) &&
	head -n 3 all >expect &&
	test_cmp expect first
'

# Without a clock: the first screen comes from the newest sessions, and
# nothing older is read for it. So a damaged record at the old end of
# the timeline (a session of 1970) spoils the whole listing, not the
# first screen.
test_expect_success 'the first screen does not read the old sessions' '
	cp -R big damaged &&
	(
		cd damaged &&
		key=0000000000000001$(printf "ab%.0s" $(test_seq 32)) &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix put timeline \
			hex:$key hex:ff &&
		test_must_fail aptix log --all --oneline >out 2>err &&
		grep "corrupt" err &&
		# what the walk read before the damage is shown, as git log
		# shows the commits it walked before a fatal error: here
		# every session, the damaged record being the oldest
		test_cmp ../all out &&
		aptix log --graph --all | head -n 50 >first &&
		head -n 50 ../full >expect &&
		test_cmp expect first
	)
'

# { cmd; echo $? >status; } | head -n 1: the status of cmd when the
# reader went away after one line
status_after_head () {
	{ "$@" 2>err; echo $? >status; } | head -n 1 >/dev/null
}

test_expect_success 'a closed pipe ends log as it ends git log' '
	(cd big && status_after_head aptix log --graph --all) &&
	test_must_be_empty big/err &&
	echo 141 >expect &&	# killed by SIGPIPE, as git is
	test_cmp expect big/status &&
	(cd big && status_after_head aptix log --all) &&
	test_must_be_empty big/err &&
	test_cmp expect big/status
'

test_expect_success GIT 'git log ends the same way there' '
	(cd git && status_after_head git log --graph --all) &&
	test_must_be_empty git/err &&
	test_cmp expect git/status
'

test_done
