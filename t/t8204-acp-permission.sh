#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='aptix acp: session/request_permission for a file holding a credential

A prompt links a file in which the credential detector finds a GitHub
token. aptix acp asks the client with session/request_permission (a
pending read tool call, options allow_once and reject_once) after the
instruction is stored and before any request reaches the OpenAI
stand-in. Allowed: the file is sent (the request holds it). Rejected or
cancelled: it is withheld and the turn says so. The configured API key
is never asked about. Every message is checked against the ACP schema.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-acp.sh

TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5

test_expect_success 'setup: a work tree with a token in a file' '
	start_standin &&
	aptix init -q ws &&
	printf "GITHUB_TOKEN=%s\n" "$TOKEN" >ws/secret.env &&
	echo "nothing secret" >ws/plain.txt &&
	test_must_fail aptix credscan ws/secret.env &&
	WT=$(cd ws && pwd) &&
	export WT TOKEN
'

# ask <answer> [<fs>]: a prompt linking secret.env and plain.txt; the
# client answers the permission request with <answer> (allow, reject,
# cancelled, cancel: session/cancel then cancelled); with <fs>, the
# client reads files (and gives the token in the buffer). Writes
# ../result (the prompt's answer), ../sid and ../before (the requests the
# stand-in had when permission was asked).
ask () {
	ANSWER=$1 FS=$2 acp_ws <<-\EOF
	import json, os, subprocess
	from lib_acp import Acp, check
	wt, answer = os.environ["WT"], os.environ["ANSWER"]
	fs = bool(os.environ.get("FS"))
	a = Acp()
	a.request("initialize", {"protocolVersion": 1, "clientCapabilities":
	          {"fs": {"readTextFile": fs}}})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	text = "look at the env file " + answer
	rid = a.send_request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": text},
	    {"type": "resource_link", "uri": "file://" + wt + "/secret.env",
	     "name": "secret.env"},
	    {"type": "resource_link", "uri": "file://" + wt + "/plain.txt",
	     "name": "plain.txt"}]})
	while fs:
	    m = a.wait_for(lambda m: m.get("method") in (
	        "fs/read_text_file", "session/request_permission"))
	    if m["method"] != "fs/read_text_file":
	        a.pending.insert(0, m)
	        break
	    name = os.path.basename(m["params"]["path"])
	    a.send({"jsonrpc": "2.0", "id": m["id"], "result": {"content":
	            "GITHUB_TOKEN=" + os.environ["TOKEN"] + "\n"
	            if name == "secret.env" else "buffer of " + name + "\n"}})
	m = a.wait_notification("session/request_permission")
	# asked before any request of the turn, the instruction stored
	logs = [f for f in os.listdir(os.environ["STANDIN_LOG_DIR"])
	        if f.endswith("-POST-v1_responses.json")]
	open("../before", "w").write(str(len(logs)))
	blob = subprocess.run(["aptix", "hash-object", "--stdin"],
	                      input=text.encode(), capture_output=True
	                      ).stdout.decode().strip()
	check(subprocess.run(["aptix", "cat-object", "-e", blob]
	                     ).returncode == 0, "instruction stored: " + blob)
	p = m["params"]
	check(p["sessionId"] == sid, p)
	check([o["kind"] for o in p["options"]] ==
	      ["allow_once", "reject_once"], p)
	tc = p["toolCall"]
	check(tc["kind"] == "read" and tc["status"] == "pending", tc)
	check(tc["locations"] == [{"path": wt + "/secret.env", "line": 1}], tc)
	check("secret.env" in tc["title"] and "GitHub token" in tc["title"], tc)
	check(os.environ["TOKEN"] not in json.dumps(m), "token in the request")
	ups = a.updates(sid)
	check(ups[-1]["update"]["sessionUpdate"] == "tool_call" and
	      ups[-1]["update"]["toolCallId"] == tc["toolCallId"], ups[-1])
	if answer == "cancel":
	    a.notify("session/cancel", {"sessionId": sid})
	if answer in ("cancel", "cancelled"):
	    outcome = {"outcome": "cancelled"}
	else:
	    allow = [o["optionId"] for o in p["options"]
	             if o["kind"] == answer + "_once"]
	    outcome = {"outcome": "selected", "optionId": allow[0]}
	a.send({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": outcome}})
	r = a.response(rid)
	open("../result", "w").write(json.dumps(r))
	open("../sid", "w").write(sid)
	done = [u["update"] for u in a.updates(sid)
	        if u["update"]["sessionUpdate"] == "tool_call_update" and
	        u["update"]["toolCallId"] == tc["toolCallId"]]
	check(len(done) == 1 and done[0]["status"] ==
	      ("completed" if answer == "allow" else "failed"), done)
	check(a.close() == 0, "exit")
	EOF
}

# answered <answer> [<fs>]: ask, and the turn ended with one request
# (body) and was committed (show.json)
answered () {
	ask "$@" &&
	test "$(json_field .result.stopReason <result)" = end_turn &&
	test "$(request_count)" = $(($(cat before) + 1)) &&
	last_request_body >body &&
	aptix -C ws show --json "$(cat sid)" >show.json
}

test_expect_success 'reject once: withheld, the turn says so' '
	answered reject &&
	! grep "$TOKEN" body &&
	grep "nothing secret" body &&
	grep "secret.env.*withheld (neither sent nor stored)" show.json &&
	! grep "$TOKEN" show.json
'

test_expect_success 'outcome cancelled: withheld' '
	answered cancelled &&
	! grep "$TOKEN" body &&
	grep "secret.env.*withheld" show.json
'

test_expect_success 'session/cancel while asked: cancelled, nothing sent' '
	ask cancel &&
	test "$(json_field .result.stopReason <result)" = cancelled &&
	test "$(request_count)" = "$(cat before)" &&
	aptix -C ws log --all --format="%h %s" >all &&
	s=$(sed -n "s/ look at the env file cancel$//p" all) &&
	test -n "$s" &&
	test "$(aptix -C ws show --json "$s" | json_field .status)" = failed
'

test_expect_success 'a buffer the client gives with a token: asked, then read from the disk' '
	answered reject fs &&
	! grep "$TOKEN" body &&
	grep "buffer of plain.txt" body
'

test_expect_success 'nothing of the token was stored or sent' '
	(cd ws && store_text) >store &&
	! grep "$TOKEN" store &&
	for n in $(test_seq 1 $(request_count))
	do
		request_body $n >body &&
		! grep "$TOKEN" body || return 1
	done
'

test_expect_success 'allow once: the file is sent' '
	answered allow &&
	grep "$TOKEN" body &&
	grep "nothing secret" body &&
	grep "secret.env.*sent, as the user allowed" show.json
'

test_expect_success 'what the user allowed is stored with its turn' '
	(cd ws && store_text) >store &&
	grep "$TOKEN" store
'

test_expect_success 'the CLI still withholds without asking' '
	(cd ws && aptix continue --create --conversation cli --no-rag \
		--file secret.env -m "from the command line" >out 2>err) &&
	grep "secret.env.*withheld" ws/err &&
	last_request_body >body &&
	! grep "$TOKEN" body
'

test_expect_success 'no sanitizer report' '
	! grep -E "Sanitizer|runtime error" ws/acp.err
'

test_done
