#!/bin/bash

test_description='the PostgreSQL server restarted under a turn, a push, a command

A store that is PostgreSQL, and a local store with a PostgreSQL remote,
while the server stops and starts again (issue 26, "Tests and
measurements"): a turn whose server goes away before its answer comes
back fails with a clear error naming the connection (no credential, no
crash) or commits by reconnecting, and loses nothing; a push cut off
by the server leaves a remote that fsck finds clean, and the next push
completes; with the server down before a command starts, log, continue
and push each give one clear line and a non-zero exit.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

pg_require standin

# bg_turn <fault> <instruction>: a turn of ws in the background (with a
# password in the environment, which no output may show), held by the
# stand-in's fault; $pid is it, once the stand-in has its request.
bg_turn () {
	local n
	n=$(request_count) &&
	standin_fault "$1" &&
	{ env PGPASSWORD=Hunter2pw aptix -C ws continue --no-rag --no-stream \
		-m "$2" >bg.out 2>bg.err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1))
}

# exit_code_ok <code>: a failure aptix reports itself (1 or 128), not a
# signal nor a crash.
exit_code_ok () {
	test "$1" -ne 0 && test "$1" -le 128
}

# no_secret <file>...: no credential in the output.
no_secret () {
	! grep -e Hunter2pw -e "password=" "$@"
}

# turn_outcome <instruction> <code>: either the turn committed (code 0,
# its instruction the subject of HEAD) or it failed (a clear error on
# bg.err naming the connection, not a signal) and its instruction is in
# a failed snapshot or the error says it was not stored.
turn_outcome () {
	if test "$2" = 0
	then
		aptix -C ws log -1 --format=%s >actual &&
		echo "$1" >expect &&
		test_cmp expect actual
	else
		exit_code_ok "$2" &&
		grep -i "postgresql\|connection\|server" bg.err &&
		! grep -i "segmentation\|abort\|assert" bg.err &&
		{
			aptix -C ws log --all --format=%s | grep -Fx "$1" ||
			grep -i "not stored\|not saved\|not recorded" bg.err
		}
	fi
}

test_expect_success 'setup: a server, its schema, the stand-in, a store on it' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin &&
	mkdir ws &&
	aptix -C ws init -q --backend "$PG_APP_URL" --org acme &&
	aptix -C ws continue -q --no-rag --no-stream -m "first turn"
'

test_expect_success 'the server stopped and started under a turn: commits or fails clearly' '
	bg_turn "{\"kind\":\"slow\",\"delay\":3}" "across a restart" &&
	stop_pg &&
	start_pg &&
	{ wait $pid; code=$?; } &&
	cat bg.err &&
	no_secret bg.out bg.err &&
	turn_outcome "across a restart" $code &&
	aptix -C ws fsck &&
	aptix -C ws continue -q --no-rag --no-stream -m "after the restart" &&
	aptix -C ws log -1 --format=%s >actual &&
	echo "after the restart" >expect &&
	test_cmp expect actual
'

test_expect_success 'the server down when the answer comes: a clear error, nothing lost' '
	aptix -C ws log --all --format=%H >before &&
	bg_turn "{\"kind\":\"slow\",\"delay\":2}" "while it is down" &&
	stop_pg &&
	{ wait $pid; code=$?; } &&
	cat bg.err &&
	test "$code" != 0 &&
	exit_code_ok "$code" &&
	grep "PostgreSQL" bg.err &&
	grep "the turn was not recorded: the next command that writes to the store (or aptix status) records it as failed, with its instruction$" bg.err &&
	test_line_count = 1 bg.err &&
	no_secret bg.out bg.err &&
	start_pg &&
	aptix -C ws log --all --format=%H >after &&
	grep -Fxf before after >kept &&
	test_cmp before kept &&
	aptix -C ws fsck >fsck.out &&
	grep "^dead turn .*; the next command that writes to the store (or aptix status) records it as failed$" fsck.out &&
	aptix -C ws continue -q --no-rag --no-stream -m "next turn" &&
	aptix -C ws log -1 --format=%s >actual &&
	echo "next turn" >expect &&
	test_cmp expect actual &&
	aptix -C ws fsck
'

# The answer came back with the server gone: the turn's claim row (its
# instruction) stayed on the server, and the next command, once the
# server is back, turned it into a failed snapshot.
test_expect_success 'the turn the server missed: its instruction in a failed snapshot' '
	turn_outcome "while it is down" 1 &&
	aptix -C ws log --all --oneline >log &&
	grep "\[failed\] while it is down$" log
'

test_expect_success 'setup: a large local store with a PostgreSQL remote' '
	APTIX="$APTIX_BUILD_DIR/aptix" \
		"$TEST_DIRECTORY/perf/build-store.sh" 300 4000 big >/dev/null &&
	aptix -C big remote add --org big origin "$PG_APP_URL" &&
	mkdir view &&
	aptix -C view init -q --backend "$PG_APP_URL" --org big
'

# remote_objects: how many objects org big has on the server.
remote_objects () {
	pg_sql -c "SELECT count(*) FROM aptix_objects WHERE org = 'big'"
}

test_expect_success 'the server stopped mid-push: a clear error, the remote clean' '
	{ env PGPASSWORD=Hunter2pw aptix -C big push >push.out 2>push.err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	i=0 &&
	while test "$(remote_objects)" = 0 && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	stop_pg &&
	{ wait $pid; code=$?; } &&
	cat push.err &&
	if test "$code" = 0
	then
		# a machine fast enough finishes the push first: what
		# follows still holds
		echo "the push ended before the server stopped"
	else
		exit_code_ok "$code" &&
		grep -i "postgresql\|connection\|server" push.err
	fi &&
	no_secret push.out push.err &&
	start_pg &&
	aptix -C view fsck &&
	aptix -C big push 2>err &&
	aptix -C view fsck &&
	# every conversation arrived (failed sessions are not pushed)
	aptix -C big for-each-ref refs/conversations/ 2>/dev/null >expect &&
	aptix -C view for-each-ref refs/conversations/ >actual &&
	test_line_count = 300 actual &&
	test_cmp expect actual
'

test_expect_success 'the server down before a command: one clear line, non-zero' '
	turn_ws_ok=$(aptix -C ws log -1 --format=%H) &&
	n=$(request_count) &&
	stop_pg &&
	for cmd in "ws log" "ws continue --no-rag --no-stream -m down" "big push"
	do
		# shellcheck disable=SC2086 # the words of the command
		test_must_fail env PGPASSWORD=Hunter2pw aptix -C $cmd \
			>out 2>err &&
		cat err &&
		test_line_count = 1 err &&
		grep -i "postgresql" err &&
		no_secret out err || return 1
	done &&
	test "$(request_count)" = "$n" &&
	start_pg &&
	test "$(aptix -C ws log -1 --format=%H)" = "$turn_ws_ok" &&
	aptix -C ws fsck
'

test_expect_success 'stop' '
	stop_standin &&
	stop_pg
'

test_done
