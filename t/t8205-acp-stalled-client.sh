#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='aptix acp: a client that stops reading but keeps its input open

The client sends a prompt and never reads aptix'"'"'s output again, while
its end of aptix'"'"'s input stays open: the pipe fills. aptix must not
block on it. Its messages wait in a bounded queue: session/cancel is
still read and the turn is committed (as failed); past the bound
(--max-queue) aptix says so on stderr, ends the connection, commits the
running turn and exits, within a bounded time.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-acp.sh

# stalled <args> <<EOF: run aptix acp <args> in ws with a client that
# says hello, then runs the python in EOF (proc: the process, send(),
# sid) and never reads stdout again; writes ../rc and ../took
stalled () {
	ACP_BODY=$(cat) ACP_ARGS="$*" acp_ws <<-\EOF
	import json, os, subprocess, sys, time
	args = os.environ["ACP_ARGS"].split()
	proc = subprocess.Popen(["aptix", "acp"] + args, stdin=subprocess.PIPE,
	                        stdout=subprocess.PIPE,
	                        stderr=open("acp.err", "ab"))
	def send(m):
	    proc.stdin.write((json.dumps(dict(m, jsonrpc="2.0")) + "\n").encode())
	    proc.stdin.flush()
	def answer():
	    return json.loads(proc.stdout.readline())
	send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
	answer()
	send({"id": 2, "method": "session/new",
	      "params": {"cwd": os.getcwd(), "mcpServers": []}})
	sid = answer()["result"]["sessionId"]
	open("../sid", "w").write(sid)
	t0 = time.time()
	exec(os.environ["ACP_BODY"])
	EOF
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q ws &&
	WT=$(cd ws && pwd) &&
	export WT
'

test_expect_success 'session/cancel is read while the pipe is full; the turn is committed' '
	standin_fault "{\"kind\": \"slow\", \"delay\": 0.02, \"text\": \"$(printf "%01000d " 0)\", \"times\": 1000}" &&
	stalled --grace 2 <<-\EOF &&
	send({"id": 3, "method": "session/prompt", "params": {"sessionId": sid,
	      "prompt": [{"type": "text", "text": "a long answer"}]}})
	time.sleep(2)      # the answer streams into a pipe nobody reads
	send({"method": "session/cancel", "params": {"sessionId": sid}})
	deadline = time.time() + 20
	while time.time() < deadline:
	    out = subprocess.run(["aptix", "log", "--all", "--format=%H %s"],
	                         capture_output=True).stdout.decode()
	    if "a long answer" in out:
	        break
	    time.sleep(0.2)
	else:
	    sys.exit("the cancelled turn was not committed")
	proc.stdin.close()     # aptix ends, though nobody reads its answer
	proc.wait(timeout=20)
	open("../rc", "w").write(str(proc.returncode))
	EOF
	test "$(cat rc)" = 0 &&
	aptix -C ws log --all --format=%h >all &&
	test "$(aptix -C ws show --json "$(cat all)" | json_field .status)" = failed
'

test_expect_success 'past --max-queue: said on stderr, the turn committed, aptix exits' '
	standin_fault "{\"kind\": \"answer\", \"text\": \"$(printf "%0300d " 0 1 2)\", \"times\": 3000}" &&
	stalled --max-queue 65536 --grace 20 <<-\EOF &&
	send({"id": 3, "method": "session/prompt", "params": {"sessionId": sid,
	      "prompt": [{"type": "text", "text": "an answer nobody reads"}]}})
	proc.wait(timeout=30)  # stdin still open, stdout never read
	open("../rc", "w").write(str(proc.returncode))
	proc.stdin.close()
	EOF
	test "$(cat rc)" = 0 &&
	grep "^error: the client stopped reading what aptix sends" ws/acp.err &&
	aptix -C ws log --format="%h %s" "$(cat sid)" >log &&
	grep "an answer nobody reads" log &&
	s=$(cut -d" " -f1 log) &&
	aptix -C ws show --json "$s" >show.json &&
	test "$(json_field .status <show.json)" = committed &&
	test "$(json_field .answer <show.json | wc -c)" -gt 2000000
'

test_expect_success 'no sanitizer report' '
	! grep -E "Sanitizer|runtime error" ws/acp.err
'

test_done
