#!/bin/sh
test_description='a store the user cannot write serves every read command

Opening a store never writes: log, show, sessions, status, cat-object,
rev-parse, diff, reflog, for-each-ref and fsck work on a store whose
files (and directory) are read-only to the user, as git works in a
read-only repository, and leave its files as they were. A command that
writes fails with a clear error. Turns left pending by a dead process
are recorded as failed only by commands that write (and status, when it
can write); on a read-only store status lists them as dead.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# As root, permissions do not stop us: run the readers as nobody, on a
# store that only root may write. Otherwise take the write bits away.
if test "$(id -u)" = 0
then
	command -v setpriv >/dev/null || {
		skip_all='setpriv is needed to drop root'
		test_done
	}
	ro () {
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			env HOME="$HOME" aptix "$@"
	}
	make_readonly () {
		chmod -R go+rX,go-w .aptix && chmod go+rx .
	}
	make_writable () {
		true
	}
else
	ro () {
		aptix "$@"
	}
	make_readonly () {
		chmod -R a-w .aptix
	}
	make_writable () {
		chmod -R u+w .aptix
	}
fi

# The data file: LMDB's lock file is bookkeeping every reader touches.
store_sum () {
	sha256sum .aptix/data.mdb
}

test_expect_success 'setup: turns, a fork, a failed turn, a dead turn' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	aptix fork HEAD~1 -m "a fork" >/dev/null 2>&1 &&
	standin_fault "{\"kind\":\"status\",\"status\":429,\"code\":\"insufficient_quota\"}" &&
	test_must_fail aptix continue -m "this one fails" >/dev/null 2>&1 &&
	standin_reset &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	{ aptix continue -m "killed midway" >killed.out 2>&1 & } &&
	pid=$! &&
	wait_for_requests $((n + 1)) &&
	kill -9 $pid &&
	{ wait $pid; true; } &&
	standin_reset &&
	aptix log --graph --all >log.expect &&
	aptix show HEAD >show.expect &&
	aptix sessions >sessions.expect &&
	aptix cat-object -p HEAD >cat.expect &&
	aptix reflog >reflog.expect &&
	aptix for-each-ref >refs.expect &&
	aptix diff HEAD~1 HEAD >diff.expect &&
	aptix rev-parse HEAD~1 >rev.expect &&
	make_readonly &&
	store_sum >sum.before
'

test_expect_success 'log, show, sessions read a read-only store' '
	ro log --graph --all >log.actual &&
	test_cmp log.expect log.actual &&
	ro show HEAD >show.actual &&
	test_cmp show.expect show.actual &&
	ro show --json HEAD~1 >show.json &&
	ro sessions >sessions.actual &&
	test_cmp sessions.expect sessions.actual
'

test_expect_success 'plumbing reads a read-only store' '
	ro cat-object -p HEAD >cat.actual &&
	test_cmp cat.expect cat.actual &&
	ro rev-parse HEAD~1 >rev.actual &&
	test_cmp rev.expect rev.actual &&
	ro reflog >reflog.actual &&
	test_cmp reflog.expect reflog.actual &&
	ro for-each-ref >refs.actual &&
	test_cmp refs.expect refs.actual &&
	ro diff HEAD~1 HEAD >diff.actual &&
	test_cmp diff.expect diff.actual
'

test_expect_success 'status and fsck list the dead turn and do not record it' '
	ro status >status &&
	grep "^Turns in flight:" status &&
	grep "pid $pid .*interrupted (process gone)" status &&
	ro fsck >fsck.out &&
	grep "^dead turn [0-9a-f]* in .*: pid $pid on .* died; the next command that writes to the store (or aptix status) records it as failed$" fsck.out
'

test_expect_success 'nothing in the store changed' '
	store_sum >sum.after &&
	test_cmp sum.before sum.after
'

test_expect_success 'a command that writes fails with a clear error' '
	test_expect_code 128 ro continue -m "cannot be stored" >out 2>err &&
	grep "^fatal: .*read-only\|^fatal: .*Permission denied" err &&
	! grep -i "segmentation\|abort" err &&
	test_expect_code 128 ro switch -c >out 2>err &&
	grep "^fatal: .*read-only\|^fatal: .*Permission denied" err &&
	store_sum >sum.after &&
	test_cmp sum.before sum.after
'

test_expect_success 'once writable, the next write records the dead turn' '
	make_writable &&
	aptix continue -m "after the store came back" >out 2>err &&
	aptix log --all --oneline >log &&
	grep "\[failed\] killed midway$" log &&
	grep "\[failed\] this one fails$" log
'

test_done
