#!/bin/sh
test_description='turns killed midway, and turns run at the same time

A turn whose process is killed (kill -9) is found by the next command
and recorded as a failed ("interrupted") snapshot that keeps the
instruction; a conversation runs one turn at a time, and a second turn
on it fails at once without calling the API; other conversations are
not held up.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

field () {
	aptix show --json "$1" | json_field "$2"
}

# check_claim <conversation> <pid> <parent>: the running table's record
# of the turn in flight is as objects-format.md ("running") says.
check_claim () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix get running "$1" >claim &&
	python3 - "$2" "$3" <<-\EOF
	import hashlib, json, socket, sys, time
	pid, parent = int(sys.argv[1]), sys.argv[2]
	rec = bytes.fromhex(open("claim").read().strip())
	c = json.loads(rec)
	assert rec == json.dumps(c, sort_keys=True, separators=(",", ":"),
	                         ensure_ascii=False).encode(), rec
	assert sorted(c) == ["host", "instruction", "lease", "parent",
	                     "pending", "pid", "renewed", "since", "start",
	                     "turn"], sorted(c)
	assert c["pid"] == pid and c["parent"] == parent
	assert c["host"] == socket.gethostname()[:64]
	assert c["start"] == int(open("/proc/%d/stat" % pid).read()
	                         .rsplit(")", 1)[1].split()[19])
	assert abs(c["renewed"] - time.time() * 1000) < 600 * 1000
	assert c["lease"] == 120000
	pending = c["pending"].encode()
	turn = json.loads(pending)
	assert pending.endswith(b"\n") and turn["status"] == "pending"
	assert c["turn"] == hashlib.sha256(b"turn %d\0" % len(pending) +
	                                   pending).hexdigest()
	assert c["instruction"] == turn["instruction"]
	assert c["since"] == turn["created_at"]
	EOF
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix continue -m "a first turn" >out 2>err &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success 'a running turn is listed by status' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	start_turn killed -m "this turn will be killed" &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	aptix status >status &&
	grep "^Turns in flight:" status &&
	grep "$conv  pid $pid  since .*  running$" status &&
	grep "this turn will be killed" status &&
	check_claim "$conv" $pid $head &&
	kill -9 $pid &&
	{ wait $pid; code=$?; } &&
	test "$code" = 137
'

test_expect_success 'kill -9: the next command records the turn as failed' '
	aptix status >status &&
	! grep "in flight" status &&
	grep "^Last turn failed" status &&
	grep "  this turn will be killed$" status &&
	grep "error: interrupted: .*pid $pid" status &&
	killed=$(sed -n "s/.*retry it with: aptix rerun \([0-9a-f]*\)$/\1/p" status) &&
	killed=$(aptix rev-parse $killed) &&
	test "$(aptix rev-parse HEAD)" = "$head"
'

test_expect_success 'kill -9: log --all shows the failed snapshot' '
	aptix log --all --oneline >log &&
	grep "^$(printf %.12s $killed) \[failed\] this turn will be killed$" log
'

test_expect_success 'kill -9: show has the instruction and the error' '
	aptix show $killed >show &&
	grep "^Status: *failed" show &&
	grep -A1 "^Instruction:" show | grep "this turn will be killed" &&
	grep -A1 "^Errors:" show | grep "interrupted" &&
	test "$(field $killed .instruction)" = "this turn will be killed" &&
	test "$(field $killed .parent)" = "$head" &&
	test "$(field $killed .conversation)" = "$conv" &&
	test "$(field $killed .seq)" = 2
'

test_expect_success 'kill -9: recorded as every failed turn is (the recorder)' '
	aptix cat-object session $killed >killed.json &&
	aptix cat-object session $head >head.json &&
	test "$(json_field .status <killed.json)" = failed &&
	test "$(json_field .metadata.workspace <killed.json)" = \
		"$(json_field .metadata.workspace <head.json)" &&
	test -n "$(json_field .metadata.workspace <killed.json)"
'

test_expect_success 'kill -9: fsck is happy, and the conversation goes on' '
	aptix fsck &&
	n=$(request_count) &&
	aptix continue -m "after the crash" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field $head .response_id)" &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success 'kill -9: the interrupted turn can be rerun' '
	aptix rerun $killed >out 2>err &&
	grep "^Answer #.* to: this turn will be killed " out &&
	test "$(field HEAD .parent)" = "$(field $killed .parent)" &&
	test "$(field HEAD .instruction)" = "this turn will be killed" &&
	aptix switch $conv >/dev/null
'

test_expect_success 'kill -9 while streaming, then continue at once' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":3}" &&
	start_turn killed2 -m "killed while streaming the answer" &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	i=0 &&
	while ! grep -q "^Answer" killed2.out && test $i -lt 100
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	grep "^Answer" killed2.out &&
	kill -9 $pid &&
	{ wait $pid; true; } &&
	# continue (not status) is the first command after the crash
	aptix continue -m "straight after" >out 2>err &&
	test "$(field HEAD .parent)" = "$head" &&
	aptix log --all --oneline >log &&
	grep "\[failed\] killed while streaming the answer$" log &&
	head=$(aptix rev-parse HEAD) &&
	aptix fsck
'

# Regression: every command that writes (and status) recovers dead turns; when
# several race to recover the same one, exactly one snapshot is recorded
# (the claim release is strict). Three rounds make the race all but certain.
test_expect_success 'commands recovering a dead turn at the same time record it once' '
	for round in 1 2 3
	do
		n=$(request_count) &&
		standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
		{ aptix continue -m "killed in round $round" >/dev/null 2>&1 & } &&
		victim=$! &&
		wait_for_requests $((n + 1)) &&
		kill -9 $victim &&
		{ wait $victim; true; } &&
		pids= &&
		for i in 1 2 3 4 5 6 7 8
		do
			{ aptix status >status.$i 2>&1 & } &&
			pids="$pids $!" || return 1
		done &&
		for p in $pids
		do
			wait $p || return 1
		done &&
		aptix log --all --oneline >log &&
		test "$(grep -c "killed in round $round$" log)" = 1 || return 1
	done
'

test_expect_success 'setup: another conversation' '
	aptix switch -c >/dev/null &&
	other=$(aptix symbolic-ref --short HEAD) &&
	aptix continue -m "other conversation" >out 2>err &&
	other_head=$(aptix rev-parse HEAD) &&
	aptix switch $conv >/dev/null
'

test_expect_success 'a second turn on a busy conversation fails at once' '
	n=$(request_count) &&
	# --no-stream: the stand-in waits 8 s once, not between deltas
	standin_fault "{\"kind\":\"slow\",\"delay\":8}" &&
	start_turn first --no-stream -m "the first of two concurrent turns" &&
	first_pid=$pid &&
	wait_for_requests $((n + 1)) &&
	test_must_fail aptix continue -m "the second one" >second.out 2>second.err &&
	grep "is busy: turn [0-9a-f]* is running (pid $first_pid " second.err &&
	test_must_be_empty second.out &&
	test "$(request_count)" = $((n + 1)) &&
	# at once: refused while the first (8 s) still runs, an order that
	# a loaded machine keeps where a time limit in ms does not
	child_running $first_pid &&
	aptix log --all --oneline >log &&
	! grep "the second one" log
'

test_expect_success 'meanwhile another conversation runs a turn' '
	aptix continue --conversation $other -m "on the other side" >side.out 2>side.err &&
	test "$(request_count)" = $((n + 2)) &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field $other_head .response_id)" &&
	side=$(aptix rev-parse refs/conversations/$other) &&
	test "$(field $side .parent)" = "$other_head" &&
	test "$(field $side .instruction)" = "on the other side" &&
	child_running $first_pid
'

test_expect_success 'the first turn completes and moves its conversation' '
	test_when_finished "kill_children $first_pid" &&
	wait_for_exit $first_pid 15 &&
	wait $first_pid &&
	grep "^Answer #.* to: the first of two concurrent turns " first.out &&
	new=$(aptix rev-parse refs/conversations/$conv) &&
	test "$(field $new .parent)" = "$head" &&
	test "$(field $new .instruction)" = "the first of two concurrent turns" &&
	aptix status >status &&
	! grep "in flight" status &&
	head=$new
'

# Regression: continue --conversation leaves HEAD where it was.
test_expect_success 'continue --conversation leaves HEAD alone' '
	aptix switch $conv >/dev/null &&
	aptix continue --conversation $other -m "HEAD should stay" >out 2>err &&
	test "$(aptix symbolic-ref --short HEAD)" = "$conv"
'

test_expect_success 'the head moved while a turn ran: it is not overwritten' '
	aptix switch $conv >/dev/null &&
	head=$(aptix rev-parse refs/conversations/$conv) &&
	old=$(aptix rev-parse $head~1) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":0.5}" &&
	start_turn moved -m "the head moves under me" &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	aptix update-ref refs/conversations/$conv $old $head &&
	wait_for_exit $pid 15 &&
	{ wait $pid; code=$?; } &&
	test "$code" = 1 &&
	test "$(aptix rev-parse refs/conversations/$conv)" = "$old" &&
	grep "the conversation moved while the turn ran" moved.err &&
	moved=$(sed -n "s/.*retry with .aptix rerun \([0-9a-f]*\).$/\1/p" moved.err) &&
	moved=$(aptix rev-parse $moved) &&
	test "$(field $moved .status)" = failed &&
	test "$(field $moved .parent)" = "$head" &&
	test "$(field $moved .instruction)" = "the head moves under me" &&
	aptix update-ref refs/conversations/$conv $head $old
'

# Regression: when the conversation ref moved during the call, the turn
# is kept as a failed snapshot with its answer and an error saying why.
test_expect_success 'the head moved while a turn ran: the snapshot keeps the answer and why' '
	aptix show --json $moved >moved.json &&
	grep "^Answer #.* to: the head moves under me " moved.out &&
	test "$(json_field .answer <moved.json)" = "$(cat moved.out)" &&
	json_field .errors <moved.json >why &&
	json_field .warnings <moved.json >>why &&
	grep "moved" why
'

test_expect_success 'racing turns on one conversation: no update is lost' '
	aptix switch $conv >/dev/null &&
	head=$(aptix rev-parse refs/conversations/$conv) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":0.3,\"repeat\":5}" &&
	test_when_finished standin_reset &&
	pids= &&
	for i in 1 2 3 4 5
	do
		start_turn race$i --conversation $conv -m "racer $i" &&
		pids="$pids $pid" || return 1
	done &&
	test_when_finished "kill_children $pids" &&
	ok=0 &&
	busy=0 &&
	for i in 1 2 3 4 5
	do
		set -- $pids &&
		shift $((i - 1)) &&
		if wait $1
		then
			ok=$((ok + 1))
		else
			grep "is busy" race$i.err &&
			busy=$((busy + 1)) || return 1
		fi
	done &&
	test $ok -ge 1 &&
	test $((ok + busy)) = 5 &&
	# one request per turn that ran, none for the refused ones
	test "$(request_count)" = $((n + ok)) &&
	# the winners form a chain on top of the old head
	aptix log --oneline -n $((ok + 1)) $conv >log &&
	test "$(grep -c "racer" log)" = $ok &&
	test "$(aptix rev-parse "refs/conversations/$conv~$ok")" = "$head" &&
	aptix fsck
'

test_done
