#!/bin/sh
test_description='aptix acp: an Agent Client Protocol agent

A small JSON-RPC driver (lib_acp.py) drives `aptix acp` against the
OpenAI stand-in, and checks every message aptix sends against the ACP
JSON schema (python3-jsonschema): initialize, session/new (and its
_meta.sessionId clear), prompts streamed as agent_message_chunk with
usage_update and a stopReason, a failed turn reported as an error naming
its snapshot, cancel, load replay before the answer, resume, list paging,
close, delete (archive), fork from the head and from a past snapshot,
error codes, malformed input and end of input in the middle of a turn.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-acp.sh

# acp <<EOF ... EOF: a python3 script with the driver imported
acp () {
	PYTHONPATH=$TEST_DIRECTORY STANDIN_LOG_DIR=$STANDIN_LOG_DIR \
		python3 -c 'import sys; exec(sys.stdin.read())'
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	WT=$(pwd) &&
	export WT
'

test_expect_success 'initialize: version 1, capabilities, no auth' '
	acp <<-\EOF
	from lib_acp import Acp, check, fault
	a = Acp()
	r = a.request("initialize", {"protocolVersion": 1,
	    "clientCapabilities": {"fs": {"readTextFile": False}}})["result"]
	check(r["protocolVersion"] == 1, r)
	caps = r["agentCapabilities"]
	check(caps["loadSession"] is True, r)
	check(caps["promptCapabilities"]["embeddedContext"] is True, r)
	for k in ("list", "resume", "close", "fork", "delete"):
	    check(caps["sessionCapabilities"][k] == {}, r)
	check(r["authMethods"] == [], r)
	check(r["agentInfo"]["name"] == "aptix", r)
	# a version we do not speak: ours back
	r = a.request("initialize", {"protocolVersion": 7})["result"]
	check(r["protocolVersion"] == 1, r)
	r = a.request("initialize", {"protocolVersion": "1"})
	check(r["error"]["code"] == -32602, r)
	check(a.close() == 0, "exit")
	EOF
'

test_expect_success 'new and prompt: streamed answer, usage, end_turn' '
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	r = a.request("session/new", {"cwd": os.environ["WT"],
	                              "mcpServers": []})["result"]
	sid = r["sessionId"]
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "first question"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	check(r["result"]["usage"]["totalTokens"] > 0, r)
	meta = r["result"]["_meta"]["aptix"]
	check(meta["status"] == "completed" and meta["conversation"] == sid, r)
	kinds = a.kinds(sid)
	check(kinds[-1] == "usage_update", kinds)
	chunks = [u["update"] for u in a.updates(sid)
	          if u["update"]["sessionUpdate"] == "agent_message_chunk"]
	check(len(chunks) >= 1, kinds)
	check(len(set(c["messageId"] for c in chunks)) == 1, chunks)
	text = "".join(c["content"]["text"] for c in chunks)
	check("first question" in text, text)
	u = a.updates(sid)[-1]["update"]
	check(u["used"] > 0 and u["size"] > 0, u)
	open("sid", "w").write(sid)
	open("session", "w").write(meta["session"])
	check(a.close() == 0, "exit")
	EOF
	sid=$(cat sid) &&
	aptix log --format=%s "$sid" >log &&
	test_line_count = 1 log &&
	test "$(aptix rev-parse "$sid")" = "$(cat session)"
'

test_expect_success 'prompt blocks: text, embedded resource, resource link' '
	echo "linked file body" >linked.txt &&
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check, fault
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "explain these"},
	    {"type": "resource", "resource": {"uri": "file:///elsewhere/x.c",
	     "text": "int unsaved_buffer;", "mimeType": "text/x-c"}},
	    {"type": "resource_link", "uri": "file://" + wt + "/linked.txt",
	     "name": "linked.txt"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	# the active file comes back as a completed read tool call
	reads = [u["update"] for u in a.updates(sid)
	         if u["update"].get("kind") == "read"]
	check(len(reads) == 1 and reads[0]["status"] == "completed", reads)
	check(reads[0]["locations"] == [{"path": wt + "/linked.txt"}], reads)
	for bad in ([{"type": "image", "data": "AA==", "mimeType": "image/png"}],
	            [{"type": "resource", "resource": {"uri": "x:y",
	              "blob": "AA=="}}], [{"text": "no type"}], "text"):
	    r = a.request("session/prompt", {"sessionId": sid, "prompt": bad})
	    check(r["error"]["code"] == -32602, (bad, r))
	check(a.close() == 0, "exit")
	EOF
	last_request_body >body &&
	grep "int unsaved_buffer;" body &&
	grep "file:///elsewhere/x.c" body &&
	grep "linked file body" body &&
	grep "explain these" body
'

test_expect_success '_meta.sessionId: reused; an existing one is cleared' '
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check, fault
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	new = lambda meta: a.request("session/new", {"cwd": wt,
	    "mcpServers": [], "_meta": meta})
	r = new({"sessionId": "phone-1"})["result"]
	check(r["sessionId"] == "phone-1", r)
	p = lambda t: a.request("session/prompt", {"sessionId": "phone-1",
	    "prompt": [{"type": "text", "text": t}]})["result"]
	first = p("before the clear")["_meta"]["aptix"]["session"]
	# the client restarts: same id, the conversation is cleared
	r = new({"sessionId": "phone-1"})["result"]
	check(r["sessionId"] == "phone-1", r)
	check(r["_meta"]["aptix"]["clearedHead"] == first, r)
	p("after the clear")
	check(new({"sessionId": 5})["error"]["code"] == -32602, "type")
	check(new({"sessionId": "bad..id"})["error"]["code"] == -32602, "id")
	check(a.close() == 0, "exit")
	open("first", "w").write(first)
	EOF
	aptix log --format=%s phone-1 >log &&
	echo "after the clear" >expect &&
	test_cmp expect log &&
	aptix show --json phone-1 | json_field .parent >parent &&
	echo null >expect &&
	test_cmp expect parent &&
	aptix reflog refs/conversations/phone-1 >reflog &&
	grep "^$(cut -c1-7 first) .*before the clear" reflog &&
	aptix log --all --format=%s >all &&
	grep "before the clear" all
'

test_expect_success 'a failed turn: committed, an error naming its snapshot' '
	standin_fault "{\"kind\":\"failed\",\"message\":\"boom\"}" &&
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": os.environ["WT"],
	                "mcpServers": []})["result"]["sessionId"]
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "this one fails"}]})
	check(r["error"]["code"] == -32603, r)
	check("boom" in r["error"]["message"], r)
	d = r["error"]["data"]
	check(d["status"] == "failed" and d["conversation"] == sid, r)
	open("failed", "w").write(d["session"])
	check(a.close() == 0, "exit")
	EOF
	aptix show --json "$(cat failed)" >show &&
	json_field .status <show >status &&
	echo failed >expect &&
	test_cmp expect status &&
	json_field .instruction <show >instr &&
	echo "this one fails" >expect &&
	test_cmp expect instr
'

test_expect_success 'session/cancel: the prompt answers cancelled' '
	standin_fault "{\"kind\":\"slow\",\"delay\":2}" &&
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": os.environ["WT"],
	                "mcpServers": []})["result"]["sessionId"]
	rid = a.send_request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "a slow answer"}]})
	a.wait_notification("session/update", lambda m:
	    m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
	# a second prompt of the session meanwhile: busy
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "not now"}]})
	check(r["error"]["code"] == -32009, r)
	a.notify("session/cancel", {"sessionId": sid})
	r = a.response(rid)
	check(r["result"]["stopReason"] == "cancelled", r)
	open("cancelled", "w").write(r["result"]["_meta"]["aptix"]["session"])
	# the session goes on
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "again"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	check(a.close() == 0, "exit")
	EOF
	aptix show --json "$(cat cancelled)" | json_field .status >status &&
	echo failed >expect &&
	test_cmp expect status
'

test_expect_success 'errors: framing, methods, params, unknown sessions' '
	acp <<-\EOF
	from lib_acp import Acp, check, fault
	a = Acp()
	def err(raw, code):
	    a.send_raw(raw)
	    m = a.next_message()
	    check(m.get("error", {}).get("code") == code, (raw, m))
	    return m
	err("not json", -32700)
	err(b"{\"id\":1,\"method\":\"x\xff\"}", -32700)
	err("[1]", -32600)
	err("{\"jsonrpc\":\"2.0\",\"id\":7}", -32600)
	err(b"[" + b" " * (17 << 20) + b"]", -32600)
	m = err("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"no/such\"}", -32601)
	check(m["id"] == 8, m)
	err("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"_x/unknown\"}", -32601)
	err("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"session/new\","
	    "\"params\":{\"cwd\":\"relative\",\"mcpServers\":[]}}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"session/new\","
	    "\"params\":[1]}", -32602)
	# unknown notifications, "_" ones included: no answer
	a.send_raw("{\"jsonrpc\":\"2.0\",\"method\":\"_x/note\",\"params\":{}}")
	a.send_raw("{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\","
	           "\"params\":{\"sessionId\":\"nosuch\"}}")
	for method, params in (
	    ("session/prompt", {"sessionId": "nosuch", "prompt": []}),
	    ("session/load", {"sessionId": "nosuch", "cwd": "/tmp",
	                      "mcpServers": []}),
	    ("session/resume", {"sessionId": "nosuch", "cwd": "/tmp"}),
	    ("session/close", {"sessionId": "nosuch"}),
	    ("session/delete", {"sessionId": "nosuch"}),
	    ("session/fork", {"sessionId": "nosuch", "cwd": "/tmp",
	                      "mcpServers": []})):
	    r = a.request(method, params)
	    check(r["error"]["code"] == -32002, (method, r))
	r = a.request("session/prompt", {"sessionId": 3, "prompt": []})
	check(r["error"]["code"] == -32602, r)
	check(a.close() == 0, "exit")
	check(a.validated == len(a.seen), "every message validated")
	EOF
'

test_expect_success 'end of input in the middle of a turn: committed as failed' '
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	acp <<-\EOF &&
	import os, time
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": os.environ["WT"],
	                "mcpServers": []})["result"]["sessionId"]
	a.send_request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "cut by the end of input"}]})
	time.sleep(0.5)
	t = time.time()
	check(a.close(timeout=20) == 0, "exit")
	check(time.time() - t < 15, "no hang")
	open("cut-sid", "w").write(sid)
	EOF
	aptix log --all --format="%s" >all &&
	grep "cut by the end of input" all &&
	aptix status >status 2>&1 &&
	! grep -i "running" status
'

test_expect_success 'setup: a conversation of three turns' '
	acp <<-\EOF
	import os, json
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": os.environ["WT"],
	                "mcpServers": []})["result"]["sessionId"]
	ids = []
	for t in ("one", "two", "three"):
	    r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	        {"type": "text", "text": "question " + t}]})
	    ids.append(r["result"]["_meta"]["aptix"]["session"])
	json.dump({"sid": sid, "ids": ids}, open("three.json", "w"))
	check(a.close() == 0, "exit")
	EOF
'

test_expect_success 'session/load: the whole chain replayed before the answer' '
	acp <<-\EOF &&
	import os, json
	from lib_acp import Acp, check, fault
	c = json.load(open("three.json"))
	sid = c["sid"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	n = len(a.seen)
	r = a.request("session/load", {"sessionId": sid,
	              "cwd": os.environ["WT"], "mcpServers": []})
	check(r["result"] == {}, r)
	# every update came before the response, which came last
	check(a.seen[-1] is r, "the answer is last")
	ups = [m["params"]["update"] for m in a.seen[n:-1]]
	kinds = [u["sessionUpdate"] for u in ups]
	check(kinds == ["user_message_chunk", "agent_message_chunk"] * 3, kinds)
	texts = [u["content"]["text"] for u in ups]
	check(texts[0] == "question one" and texts[4] == "question three",
	      texts)
	check("question two" in texts[3], texts)
	mids = [u["messageId"] for u in ups]
	check(len(set(mids)) == 6, mids)
	check(mids[1] == c["ids"][0] and mids[0] == c["ids"][0] + ":user",
	      mids)
	# the loaded session goes on from its head
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "question four"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	# resume: no replay
	n = len(a.seen)
	r = a.request("session/resume", {"sessionId": sid,
	              "cwd": os.environ["WT"]})
	check(r["result"] == {} and len(a.seen) == n + 1, a.seen[n:])
	check(a.close() == 0, "exit")
	EOF
	aptix log --format=%s "$(json_field .sid <three.json)" >log &&
	test_line_count = 4 log
'

test_expect_success 'session/list: pages with opaque cursors' '
	acp <<-\EOF
	import os, json
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	seen, cursor = [], None
	while True:
	    p = {"cwd": os.environ["WT"], "_meta": {"aptix/limit": 2}}
	    if cursor:
	        p["cursor"] = cursor
	    r = a.request("session/list", p)["result"]
	    check(len(r["sessions"]) <= 2, r)
	    for s in r["sessions"]:
	        check(s["cwd"] == os.environ["WT"], s)
	    seen += [s["sessionId"] for s in r["sessions"]]
	    cursor = r.get("nextCursor")
	    if not cursor:
	        break
	check(len(seen) == len(set(seen)) and len(seen) >= 5, seen)
	sid = json.load(open("three.json"))["sid"]
	check(seen[0] == sid, seen)   # most recently updated first
	check("phone-1" in seen, seen)
	r = a.request("session/list", {})["result"]
	check(set(s["sessionId"] for s in r["sessions"]) == set(seen), r)
	r = a.request("session/list", {"cursor": "garbage"})
	check(r["error"]["code"] == -32602, r)
	r = a.request("session/list", {"cwd": 3})
	check(r["error"]["code"] == -32602, r)
	check(a.close() == 0, "exit")
	EOF
'

test_expect_success 'session/fork: from the head, and from a past snapshot' '
	acp <<-\EOF &&
	import os, json
	from lib_acp import Acp, check, fault
	c = json.load(open("three.json"))
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	n = len(a.seen)
	r = a.request("session/fork", {"sessionId": c["sid"], "cwd": wt,
	              "mcpServers": []})["result"]
	f1 = r["sessionId"]
	check(f1 != c["sid"], r)
	# what the fork inherits is replayed first, under the new id
	ups = [m["params"] for m in a.seen[n:-1]]
	check(all(u["sessionId"] == f1 for u in ups) and len(ups) == 8, ups)
	r = a.request("session/prompt", {"sessionId": f1, "prompt": [
	    {"type": "text", "text": "forked from the head"}]})
	check(r["result"]["_meta"]["aptix"]["conversation"] == f1, r)
	# from the first snapshot, by a prefix of its id
	r = a.request("session/fork", {"sessionId": c["sid"], "cwd": wt,
	              "mcpServers": [],
	              "_meta": {"aptix/fromSession": c["ids"][0][:12]}})
	f2 = r["result"]["sessionId"]
	r = a.request("session/prompt", {"sessionId": f2, "prompt": [
	    {"type": "text", "text": "forked from the first"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	r = a.request("session/fork", {"sessionId": c["sid"], "cwd": wt,
	              "mcpServers": [], "_meta": {"aptix/fromSession": "zzzz"}})
	check(r["error"]["code"] == -32002, r)
	# a fork whose first turn fails forks again on the next prompt
	f3 = a.request("session/fork", {"sessionId": c["sid"], "cwd": wt,
	               "mcpServers": []})["result"]["sessionId"]
	fault({"kind": "failed"})
	r = a.request("session/prompt", {"sessionId": f3, "prompt": [
	    {"type": "text", "text": "fails"}]})
	check(r["error"]["data"]["conversation"] == f3, r)
	r = a.request("session/prompt", {"sessionId": f3, "prompt": [
	    {"type": "text", "text": "forked again"}]})
	check(r["result"]["_meta"]["aptix"]["conversation"] == f3, r)
	json.dump({"f1": f1, "f2": f2, "f3": f3}, open("forks.json", "w"))
	check(a.close() == 0, "exit")
	EOF
	f1=$(json_field .f1 <forks.json) &&
	f2=$(json_field .f2 <forks.json) &&
	aptix log --format=%s "$f1" >log1 &&
	grep "question one" log1 &&
	head -n 1 log1 >top &&
	echo "forked from the head" >expect &&
	test_cmp expect top &&
	aptix log --format=%s "$f2" >log2 &&
	printf "%s\n" "forked from the first" "question one" >expect &&
	test_cmp expect log2 &&
	f3=$(json_field .f3 <forks.json) &&
	aptix show --json "$f3" >show3 &&
	test "$(json_field .instruction <show3)" = "forked again" &&
	test "$(json_field .parent <show3)" = "$(aptix rev-parse "$(json_field .sid <three.json)")"
'

test_expect_success 'a fork never prompted is stored: listed and loaded after a restart' '
	acp <<-\EOF &&
	import os, json
	from lib_acp import Acp, check
	c = json.load(open("three.json"))
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	f = a.request("session/fork", {"sessionId": c["sid"], "cwd": wt,
	              "mcpServers": []})["result"]["sessionId"]
	check(a.close() == 0, "exit")
	b = Acp()
	b.request("initialize", {"protocolVersion": 1})
	l = b.request("session/list", {"cwd": wt})["result"]["sessions"]
	check(f in [x["sessionId"] for x in l], l)
	n = len(b.seen)
	r = b.request("session/load", {"sessionId": f, "cwd": wt,
	                               "mcpServers": []})
	check(r["result"] == {}, r)
	ups = [m["params"] for m in b.seen[n:-1]]
	check(len(ups) == 8 and all(u["sessionId"] == f for u in ups), ups)
	r = b.request("session/prompt", {"sessionId": f, "prompt": [
	    {"type": "text", "text": "after the restart"}]})
	check(r["result"]["_meta"]["aptix"]["conversation"] == f, r)
	json.dump({"f": f}, open("fork4.json", "w"))
	check(b.close() == 0, "exit")
	EOF
	f=$(json_field .f <fork4.json) &&
	aptix reflog "$f" >reflog &&
	grep "fork: from $(aptix rev-parse "$(json_field .sid <three.json)")" reflog &&
	aptix show --json "$f" >show4 &&
	test "$(json_field .instruction <show4)" = "after the restart" &&
	test "$(json_field .parent <show4)" = "$(aptix rev-parse "$(json_field .sid <three.json)")"
'

test_expect_success 'session/close and session/delete (archive)' '
	acp <<-\EOF &&
	import os, json
	from lib_acp import Acp, check, fault
	f = json.load(open("forks.json"))
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	r = a.request("session/resume", {"sessionId": f["f2"], "cwd": wt})
	check(r["result"] == {}, r)
	check(a.request("session/close", {"sessionId": f["f2"]})["result"]
	      == {}, "close")
	r = a.request("session/prompt", {"sessionId": f["f2"], "prompt": [
	    {"type": "text", "text": "closed"}]})
	check(r["error"]["code"] == -32002, r)
	r = a.request("session/delete", {"sessionId": f["f2"]})
	check(r["result"] == {}, r)
	r = a.request("session/list", {"cwd": wt})["result"]
	check(f["f2"] not in [s["sessionId"] for s in r["sessions"]], r)
	check(a.close() == 0, "exit")
	EOF
	aptix sessions --json --archived >all &&
	grep "$(json_field .f2 <forks.json)" all
'

test_expect_success 'fs/read_text_file: linked files read through the client' '
	echo "the file on disk" >buffer.txt &&
	echo "the other file on disk" >other.txt &&
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1, "clientCapabilities":
	          {"fs": {"readTextFile": True}}})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	rid = a.send_request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "read through the editor"},
	    {"type": "resource_link", "uri": "file://" + wt + "/buffer.txt",
	     "name": "buffer.txt"},
	    {"type": "resource_link", "uri": "file://" + wt + "/other.txt",
	     "name": "other.txt"}]})
	m = a.wait_notification("fs/read_text_file")
	check(m["params"] == {"sessionId": sid, "path": wt + "/buffer.txt"}, m)
	a.send({"jsonrpc": "2.0", "id": m["id"],
	        "result": {"content": "UNSAVED EDITOR BUFFER\n"}})
	# the client cannot give the second: aptix reads it from the disk
	m = a.wait_notification("fs/read_text_file")
	check(m["params"]["path"] == wt + "/other.txt", m)
	a.send({"jsonrpc": "2.0", "id": m["id"],
	        "error": {"code": -32002, "message": "no such buffer"}})
	r = a.response(rid)
	check(r["result"]["stopReason"] == "end_turn", r)
	# an answer to nothing aptix asked is ignored
	a.send({"jsonrpc": "2.0", "id": 999, "result": {}})
	check(a.request("session/list", {})["result"] is not None, "alive")
	check(a.close() == 0, "exit")
	EOF
	last_request_body >body &&
	grep "UNSAVED EDITOR BUFFER" body &&
	! grep "the file on disk" body &&
	grep "the other file on disk" body
'

test_expect_success 'fs/read_text_file: a client that never answers, then leaves' '
	acp <<-\EOF &&
	import os, time
	from lib_acp import Acp, check
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1, "clientCapabilities":
	          {"fs": {"readTextFile": True}}})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	a.send_request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "the client is gone"},
	    {"type": "resource_link", "uri": "file://" + wt + "/buffer.txt",
	     "name": "buffer.txt"}]})
	a.wait_notification("fs/read_text_file")
	t = time.time()
	check(a.close(timeout=20) == 0, "exit")
	check(time.time() - t < 10, "no hang")
	EOF
	aptix log --all --format="%h %s" >all &&
	s=$(sed -n "s/ the client is gone$//p" all) &&
	test "$(aptix show --json "$s" | json_field .status)" = failed
'

test_expect_success 'load: tool calls replayed in the shape opencode gives' '
	cat >tools.json <<-\EOF &&
	[{"type":"function","name":"shell","description":"run a command",
	  "parameters":{"type":"object","properties":{"cmd":{"type":"string"}},
	  "required":["cmd"]}}]
	EOF
	standin_fault "{\"kind\":\"tool_calls\",\"calls\":[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\": \\\"ls\\\"}\",\"call_id\":\"call_one\"}]}" &&
	aptix continue --conversation tools-conv --create --no-files --no-rag \
		--tools tools.json -m "RUN: ls" >out 2>err &&
	echo "a.c" >ls.out &&
	aptix continue --conversation tools-conv --no-files --no-rag \
		--tool-output call_one=ls.out >out 2>err &&
	acp <<-\EOF
	import os, json
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	n = len(a.seen)
	r = a.request("session/load", {"sessionId": "tools-conv",
	              "cwd": os.environ["WT"], "mcpServers": []})
	ups = [m["params"]["update"] for m in a.seen[n:-1]]
	kinds = [u["sessionUpdate"] for u in ups]
	check(kinds == ["user_message_chunk", "tool_call", "tool_call_update",
	                "agent_message_chunk"], kinds)
	check(ups[1]["toolCallId"] == "call_one" and
	      ups[1]["rawInput"] == {"cmd": "ls"} and
	      ups[1]["kind"] == "execute", ups[1])
	check(ups[2]["status"] == "completed" and
	      ups[2]["rawOutput"]["output"] == "a.c\n", ups[2])
	# the order of kinds in the replay opencode gives of such a turn
	oc = [json.loads(l) for l in open(os.environ["OPENCODE"] + "/load.jsonl")]
	okinds = [m["msg"]["params"]["update"]["sessionUpdate"] for m in oc
	          if m["dir"] == "<" and
	          m["msg"].get("method") == "session/update"]
	check(okinds == kinds, (okinds, kinds))
	# messageId on every chunk, as opencode gives it
	check(all(u.get("messageId") for u in ups if u["sessionUpdate"]
	          .endswith("_chunk")), ups)
	# usage_update: the fields opencode sends (used, size) after a prompt
	r = a.request("session/prompt", {"sessionId": "tools-conv",
	    "prompt": [{"type": "text", "text": "thanks"}]})
	u = [m["params"]["update"] for m in a.seen
	     if m.get("method") == "session/update"][-1]
	onew = [json.loads(l) for l in open(os.environ["OPENCODE"] + "/new.jsonl")]
	ou = [m["msg"]["params"]["update"] for m in onew if m["dir"] == "<" and
	      m["msg"].get("method") == "session/update" and
	      m["msg"]["params"]["update"]["sessionUpdate"] == "usage_update"][0]
	check(set(["sessionUpdate", "used", "size"]) <= set(u), u)
	check(set(u) <= set(ou), (u, ou))
	check(a.close() == 0, "exit")
	EOF
'

test_expect_success 'a session never prompted is stored: listed, loaded after a restart' '
	aptix init -q empty &&
	(cd empty && WT=$(pwd) acp <<-\EOF) &&
	import os, json
	from lib_acp import Acp, check
	wt = os.environ["WT"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	check(a.close() == 0, "exit")
	b = Acp()
	b.request("initialize", {"protocolVersion": 1})
	l = b.request("session/list", {"cwd": wt})["result"]["sessions"]
	check([x["sessionId"] for x in l] == [sid], l)
	check(l[0]["cwd"] == wt and l[0]["_meta"]["aptix"]["turnCount"] == 0,
	      l)
	n = len(b.seen)
	r = b.request("session/load", {"sessionId": sid, "cwd": wt,
	                               "mcpServers": []})
	check(r["result"] == {} and len(b.seen) == n + 1, b.seen[n:])
	r = b.request("session/resume", {"sessionId": sid, "cwd": wt})
	check(r["result"] == {}, r)
	json.dump({"sid": sid}, open("new.json", "w"))
	check(b.close() == 0, "exit")
	EOF
	sid=$(json_field .sid <empty/new.json) &&
	aptix -C empty sessions >out 2>err &&
	test_must_be_empty err &&
	grep "^  ${sid%%-*} .* 0 turns  new " out &&
	aptix -C empty sessions --json >out.json &&
	grep "$sid" out.json &&
	aptix -C empty log --all >out 2>err &&
	test_must_be_empty err &&
	aptix -C empty fsck >out 2>err &&
	aptix -C empty gc >out 2>err &&
	aptix -C empty reindex >out 2>err &&
	aptix -C empty fsck >out 2>err &&
	aptix -C empty sessions >out &&
	grep "^  ${sid%%-*} .* 0 turns  new " out &&
	aptix -C empty conversation archive "$sid" 2>err &&
	aptix -C empty sessions >out &&
	! grep "${sid%%-*}" out &&
	aptix -C empty sessions --archived >out &&
	grep "${sid%%-*}" out &&
	aptix -C empty conversation unarchive "$sid"
'

test_expect_success 'its first prompt, after a restart, is its root' '
	sid=$(json_field .sid <empty/new.json) &&
	(cd empty && WT=$(pwd) SID=$sid acp <<-\EOF) &&
	import os
	from lib_acp import Acp, check
	wt, sid = os.environ["WT"], os.environ["SID"]
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	a.request("session/resume", {"sessionId": sid, "cwd": wt})
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "the first turn at last"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	l = a.request("session/list", {"cwd": wt})["result"]["sessions"]
	check(len(l) == 1 and l[0]["_meta"]["aptix"]["turnCount"] == 1, l)
	check(a.close() == 0, "exit")
	EOF
	aptix -C empty log --format="%s" "$sid" >out &&
	echo "the first turn at last" >expect &&
	test_cmp expect out &&
	aptix -C empty show --json "$sid" >show.json &&
	test "$(json_field .parent <show.json)" = null &&
	aptix -C empty fsck
'

test_expect_success 'usage_update.cost: the session so far, at aptix usage prices' '
	aptix config price.cost-model.input 3 &&
	aptix config price.cost-model.cached-input 1 &&
	aptix config price.cost-model.output 12 &&
	aptix config openai.model cost-model &&
	acp <<-\EOF &&
	import os, json
	from lib_acp import Acp, check
	a = Acp()
	sid = a.new_session(os.environ["WT"])
	costs = []
	for text in ("first priced", "second priced"):
	    r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	        {"type": "text", "text": text}]})
	    check(r["result"]["stopReason"] == "end_turn", r)
	    u = [x["update"] for x in a.updates(sid)
	         if x["update"]["sessionUpdate"] == "usage_update"][-1]
	    check(u["cost"]["currency"] == "USD", u)
	    costs.append(u["cost"]["amount"])
	check(0 < costs[0] < costs[1], costs)
	json.dump({"sid": sid, "costs": costs}, open("costs.json", "w"))
	check(a.close() == 0, "exit")
	EOF
	aptix usage --json --conversation "$(json_field .sid <costs.json)" \
		>usage.json &&
	python3 -c "import json; c = json.load(open(\"costs.json\"))[\"costs\"]; \
u = json.load(open(\"usage.json\")); \
want = u[\"total\"][\"cost_usd\"]; \
assert want > 0 and abs(c[1] - want) < 1e-9, (c, u)"
'

test_expect_success 'usage_update.cost: omitted for a model without a price' '
	aptix config openai.model no-price-model &&
	acp <<-\EOF &&
	import os
	from lib_acp import Acp, check
	a = Acp()
	sid = a.new_session(os.environ["WT"])
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "unpriced"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	u = [x["update"] for x in a.updates(sid)
	     if x["update"]["sessionUpdate"] == "usage_update"][-1]
	check("cost" not in u and u["used"] > 0, u)
	check(a.close() == 0, "exit")
	EOF
	aptix config --unset openai.model
'

test_done
