#!/bin/sh
test_description='aptix serve follows a compaction by another process

A server that opened the store while reindex (or gc) compacted it reads
a file the compaction renamed a new one over: its writes, and what it
reads of other processes'"'"' turns, must go to the new file, without a
restart. The rename of the compaction is held by strace (as in t1006)
while the server starts.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq CURL
then
	skip_all='python3 (the stand-in) and curl are needed'
	test_done
fi

test_lazy_prereq STRACE_INJECT '
	strace -f -o /dev/null -e trace=rename \
		-e inject=rename:delay_enter=1000 true
'

if ! test_have_prereq STRACE_INJECT
then
	skip_all='strace with fault injection is needed'
	test_done
fi

# post <path> <json>: the body in "body", the status on stdout
post () {
	curl -sS -o body -w "%{http_code}" -X POST \
		-H "Authorization: Bearer $TOKEN" \
		-H "Content-Type: application/json" --data-binary "$2" "$URL$1"
}

# get <path>: likewise
get () {
	curl -sS -o body -w "%{http_code}" \
		-H "Authorization: Bearer $TOKEN" "$URL$1"
}

# serve_during_compaction: reindex (which compacts) with its rename held
# for 3 s by strace; aptix serve starts while the copy waits, and the
# reindex ends; the server still maps the old file (checked: else the
# test tests nothing). Sets URL, TOKEN, SERVE_PID.
serve_during_compaction () {
	rm -f .aptix/serve.token &&
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -o /dev/null -e trace=rename,renameat,renameat2 \
		-e inject=rename,renameat,renameat2:delay_enter=3000000 \
		aptix reindex -q >reindex.out 2>reindex.err &
	rpid=$! &&
	i=0 &&
	while test_path_is_missing .aptix/compact.tmp/data.mdb \
		2>/dev/null && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	test_path_is_file .aptix/compact.tmp/data.mdb &&
	test_start_server serve aptix serve --port 0 &&
	SERVE_PID=$(cat "$TRASH_DIRECTORY/serve.pid") &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	wait $rpid &&
	test_must_be_empty reindex.err &&
	test_path_is_missing .aptix/compact.tmp/data.mdb &&
	grep "/data.mdb (deleted)" /proc/$SERVE_PID/maps &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat .aptix/serve.token)
}

test_expect_success 'setup: a conversation' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	conv=$(aptix symbolic-ref --short HEAD)
'

test_expect_success 'a turn through the server after the compaction is written' '
	serve_during_compaction &&
	test_when_finished "test_stop_server serve" &&
	B=$(aptix rev-parse HEAD) &&
	test "$(post /api/ai/agent/execute \
		"{\"conversation\":\"$conv\",\"instruction\":\"second\"}")" = 200 &&
	test "$(json_field .status <body)" = completed &&
	test "$(json_field .parent <body)" = "$B" &&
	C=$(json_field .session <body) &&
	test "$(aptix rev-parse HEAD)" = "$C" &&
	! grep "/data.mdb (deleted)" /proc/$SERVE_PID/maps &&
	aptix fsck >/dev/null
'

test_expect_success 'the server reads the turns other processes write after it' '
	serve_during_compaction &&
	test_when_finished "test_stop_server serve" &&
	aptix continue -m "third, from the command line" >/dev/null 2>&1 &&
	D=$(aptix rev-parse HEAD) &&
	i=0 &&
	until test "$(get "/api/conversations/$conv?limit=1")" = 200 &&
		test "$(json_field ".turns[0].session" <body)" = "$D"
	do
		test $i -lt 50 && sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	test "$(post /api/ai/agent/execute \
		"{\"conversation\":\"$conv\",\"instruction\":\"fourth\"}")" = 200 &&
	test "$(json_field .parent <body)" = "$D"
'

test_done
