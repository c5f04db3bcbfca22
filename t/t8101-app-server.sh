#!/bin/sh
test_description='aptix app-server: JSON-RPC 2.0 over stdio

Every method against the OpenAI stand-in, through a small driver
(lib_jsonrpc.py) over a pipe: lists and reads, turns started, forked
and rerun with the answer streamed as notifications, a turn interrupted,
a busy conversation refused, a list answered while a turn streams,
malformed lines answered with errors (never a crash or a hang), and
SIGTERM in the middle of a turn.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in and the driver'
	test_done
fi

# rpc <<EOF ... EOF: run a python3 script with the driver imported
rpc () {
	PYTHONPATH=$TEST_DIRECTORY STANDIN_LOG_DIR=$STANDIN_LOG_DIR \
		python3 -c 'import sys; exec(sys.stdin.read())'
}

test_expect_success 'setup: a conversation of two turns and a fork' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	A=$(aptix rev-parse HEAD~1) &&
	B=$(aptix rev-parse HEAD) &&
	aptix fork $A -m "forked question" >/dev/null 2>&1 &&
	F=$(aptix rev-parse HEAD) &&
	fconv=$(aptix symbolic-ref --short HEAD) &&
	export conv fconv A B F
'

test_expect_success 'initialize, then malformed lines get errors' '
	rpc <<-\EOF
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	r = s.request("initialize", {"clientInfo": {"name": "t8101"}})
	check(r["result"]["serverInfo"]["name"] == "aptix", r)
	def err(raw, code):
	    s.send_raw(raw)
	    m = s.next_message()
	    check(m.get("error", {}).get("code") == code, (raw, m))
	    return m
	err("this is not json", -32700)
	err("{\"jsonrpc\":\"2.0\",\"id\":1,", -32700)
	err(b"{\"id\":1,\"method\":\"x\xff\"}", -32700)
	err("[1,2]", -32600)
	err("42", -32600)
	err("{\"jsonrpc\":\"2.0\",\"id\":7}", -32600)
	err("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"thread/list\"}", -32600)
	m = err("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"thread/list\"}",
	        -32600)
	check(m["id"] is None, m)
	m = err("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"no/such\"}", -32601)
	check(m["id"] == 8, m)
	err("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"thread/list\","
	    "\"params\":[1]}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"thread/read\","
	    "\"params\":{\"threadId\":5}}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"thread/list\","
	    "\"params\":{\"limit\":-3}}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"turn/start\","
	    "\"params\":{\"input\":{\"a\":1}}}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"turn/start\","
	    "\"params\":{}}", -32602)
	err("{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"thread/read\","
	    "\"params\":{\"threadId\":\"nosuchthing\"}}", -32004)
	# a line over the 16 MiB cap, then a request that is answered
	err(b"[" + b" " * (17 << 20) + b"]", -32600)
	# notifications get no answer; blank lines are skipped
	s.send_raw("{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}")
	s.send_raw("")
	r = s.request("thread/list", {"all": True})
	check("result" in r, r)
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'thread/list, thread/read, thread/resume, object/read' '
	rpc <<-\EOF
	import os
	from lib_jsonrpc import AppServer, check
	conv, fconv = os.environ["conv"], os.environ["fconv"]
	A, B, F = os.environ["A"], os.environ["B"], os.environ["F"]
	s = AppServer()
	r = s.request("thread/list", {})["result"]
	ids = [t["id"] for t in r["data"]]
	check(ids == [fconv, conv], ids)
	t = r["data"][1]
	check(t["title"] == "first question" and t["turn_count"] == 2, t)
	check(t["last_turn_status"] == "completed", t)
	# paging with a cursor
	p1 = s.request("thread/list", {"limit": 1})["result"]
	check([t["id"] for t in p1["data"]] == [fconv], p1)
	p2 = s.request("thread/list", {"limit": 1,
	                              "cursor": p1["nextCursor"]})["result"]
	check([t["id"] for t in p2["data"]] == [conv], p2)
	check(p2["nextCursor"] is None, p2)
	# a text filter
	r = s.request("thread/list", {"q": "FORKED"})["result"]
	check([t["id"] for t in r["data"]] == [fconv], r)
	r = s.request("thread/list", {"workspace": "elsewhere"})["result"]
	check(r["data"] == [], r)
	r = s.request("thread/read", {"threadId": conv})["result"]
	check(r["thread"]["id"] == conv, r)
	check([x["session"] for x in r["turns"]] == [A, B], r)
	check(r["turns"][0]["instruction_summary"] == "first question", r)
	check(r["turns"][1]["answer_summary"].startswith("Answer #2"), r)
	check(r["next_cursor"] is None, r)
	# a page of the newest turns, then the older ones
	r = s.request("thread/read", {"threadId": conv, "limit": 1})["result"]
	check([x["session"] for x in r["turns"]] == [B], r)
	check(r["next_cursor"] == B, r)
	r = s.request("thread/read", {"threadId": conv, "limit": 1,
	                              "cursor": r["next_cursor"]})["result"]
	check([x["session"] for x in r["turns"]] == [A], r)
	check(r["next_cursor"] is None, r)
	r = s.request("thread/resume", {"threadId": conv[:8]})["result"]
	check(r["thread"]["id"] == conv, r)
	full = s.request("thread/read", {"sessionId": B,
	                                 "full": True})["result"]
	check(full["answer"].startswith("Answer #2 to: second question"),
	      full)
	check(full["parent"] == A and "sources" in full, full)
	o = s.request("object/read", {"id": full["instruction_id"]})
	o = o["result"]
	check(o["type"] == "blob" and o["data"] == "second question", o)
	o = s.request("object/read", {"id": B})["result"]
	check(o["type"] == "session" and
	      o["content_type"] == "application/json", o)
	g = s.request("thread/graph", {})["result"]
	ids = [n["id"] for n in g["nodes"]]
	check(ids == [A, B, F], ids)
	check(g["lanes"] == 2, g)
	lanes = {n["id"]: n["lane"] for n in g["nodes"]}
	check(lanes[A] == lanes[B] and lanes[F] != lanes[A], lanes)
	check(g["nodes"][2]["parent"] == A, g)
	h = s.request("search", {"q": "second question"})["result"]
	check(h["q"] == "second question" and
	      h["hits"][0]["session"] == B and h["hits"][0]["score"] > 0, h)
	check(len(h["hits"]) == 3, h)
	h = s.request("search", {"q": "question", "threadId": conv,
	                         "limit": 5})["result"]
	check([x["session"] for x in h["hits"]] == [B, A] or
	      [x["session"] for x in h["hits"]] == [A, B], h)
	check("error" in s.request("search", {}), "search without q")
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'turn/start streams the answer as deltas' '
	rpc <<-\EOF
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	t = s.request("thread/start", {})["result"]["thread"]
	r = s.request("turn/start", {"threadId": t["id"],
	              "input": [{"type": "text", "text": "stream this"}]})
	turn = r["result"]["turn"]
	check(turn["status"] == "pending" and turn["conversation"] == t["id"],
	      r)
	st = s.wait_notification("turn/started")
	check(st["params"]["turn"]["id"] == turn["id"], st)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	deltas = [m["params"]["delta"] for m in s.seen
	          if m.get("method") == "item/agentMessage/delta"]
	check(len(deltas) > 1, deltas)
	check("".join(deltas) == done["text"], (deltas, done))
	check(done["kind"] == "answer" and done["status"] == "completed", done)
	check(done["text"].startswith("Answer #"), done)
	check(done["id"] == turn["id"], done)
	r = s.request("thread/read", {"threadId": t["id"]})["result"]
	check(len(r["turns"]) == 1 and
	      r["turns"][0]["session"] == done["session"], r)
	# a second turn continues the thread
	s.request("turn/start", {"threadId": t["id"], "input": "and then"})
	done2 = s.wait_notification("turn/completed")["params"]["turn"]
	check(done2["parent"] == done["session"], done2)
	open("thread", "w").write(t["id"] + " " + done2["session"])
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'thread/fork and turn/rerun run a turn in a new thread' '
	rpc <<-\EOF
	import os
	from lib_jsonrpc import AppServer, check
	A, conv = os.environ["A"], os.environ["conv"]
	s = AppServer()
	r = s.request("thread/fork", {"sessionId": A, "input": "fork again"})
	new = r["result"]["thread"]["id"]
	check(new != conv and r["result"]["turn"]["parent"] == A, r)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["conversation"] == new and done["parent"] == A, done)
	check(done["status"] == "completed", done)
	r = s.request("turn/rerun", {"sessionId": done["session"]})
	check("result" in r, r)
	d2 = s.wait_notification("turn/completed",
	    lambda m: m["params"]["turn"]["id"] ==
	    r["result"]["turn"]["id"])["params"]["turn"]
	check(d2["parent"] == A and d2["conversation"] not in (new, conv), d2)
	check("fork again" in d2["text"], d2)
	# a fork needs its session
	r = s.request("thread/fork", {"input": "x"})
	check(r["error"]["code"] == -32602, r)
	r = s.request("thread/fork", {"sessionId": "0" * 64, "input": "x"})
	check(r["error"]["code"] == -32004, r)
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'a list is answered while a turn streams; busy is -32009' '
	standin_fault "{\"kind\":\"slow\",\"delay\":1}" &&
	rpc <<-\EOF
	import os
	from lib_jsonrpc import AppServer, check
	conv = os.environ["conv"]
	s = AppServer()
	r = s.request("turn/start", {"threadId": conv, "input": "slowly"})
	tid = r["result"]["turn"]["id"]
	s.wait_notification("item/agentMessage/delta")
	# the turn is still streaming: these are answered before it ends
	r = s.request("thread/list", {})
	check("result" in r, r)
	r = s.request("turn/start", {"threadId": conv, "input": "again"})
	e = r["error"]
	check(e["code"] == -32009 and e["data"]["threadId"] == conv, r)
	check(tid[:12] in e["message"], e)
	done_before = [m for m in s.seen if m.get("method") == "turn/completed"]
	check(done_before == [], "the turn ended before the list")
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["status"] == "completed", done)
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'turn/interrupt cancels a running turn; it is kept as failed' '
	standin_reset &&
	standin_fault "{\"kind\":\"hang\",\"max\":60}" &&
	rpc <<-\EOF
	import glob, os, time
	from lib_jsonrpc import AppServer, check
	conv = os.environ["conv"]
	logs = os.environ["STANDIN_LOG_DIR"]
	n = len(glob.glob(logs + "/*-POST-v1_responses.json"))
	s = AppServer()
	r = s.request("turn/start", {"threadId": conv,
	              "input": "this will be interrupted"})
	tid = r["result"]["turn"]["id"]
	for i in range(200):     # until the stand-in holds the request
	    if len(glob.glob(logs + "/*-POST-v1_responses.json")) > n:
	        break
	    time.sleep(0.05)
	r = s.request("turn/interrupt", {"threadId": conv})
	check(r["result"]["interrupted"] == 1, r)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["kind"] == "error" and done["status"] == "failed", done)
	check(done["id"] == tid and done["error_code"] == "cancelled", done)
	t = s.request("thread/read", {"sessionId": done["session"],
	              "full": True})["result"]
	check(t["failed"] and t["instruction"] == "this will be interrupted",
	      t)
	r = s.request("turn/interrupt", {"threadId": conv})
	check(r["error"]["code"] == -32004, r)
	r = s.request("turn/interrupt", {})
	check(r["error"]["code"] == -32602, r)
	check(s.close() == 0, "exit code")
	EOF
'

test_expect_success 'end of input waits for the running turn' '
	standin_reset &&
	standin_fault "{\"kind\":\"slow\",\"delay\":0.3}" &&
	rpc <<-\EOF
	import os
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	r = s.request("turn/start", {"threadId": os.environ["conv"],
	              "input": "finish after EOF"})
	check("result" in r, r)
	s.proc.stdin.close()
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["status"] == "completed", done)
	check(s.proc.wait(timeout=20) == 0, "exit code")
	EOF
'

test_expect_success 'SIGTERM mid-turn: the turn is cancelled after the grace' '
	standin_reset &&
	standin_fault "{\"kind\":\"hang\",\"max\":60}" &&
	rpc <<-\EOF &&
	import os, signal
	from lib_jsonrpc import AppServer, check
	s = AppServer(["--grace", "1"])
	r = s.request("turn/start", {"threadId": os.environ["conv"],
	              "input": "terminated midway"})
	check("result" in r, r)
	s.proc.send_signal(signal.SIGTERM)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["status"] == "failed" and done["session"], done)
	check(s.proc.wait(timeout=20) == 0, "exit code")
	open("terminated", "w").write(done["session"])
	EOF
	aptix show --json $(cat terminated) >show &&
	test "$(json_field .instruction <show)" = "terminated midway" &&
	test "$(json_field .failed <show)" = true &&
	aptix fsck >/dev/null
'

test_expect_success 'tool calls: item/completed per call, turn/toolOutputs answers' '
	standin_fault "{\"kind\":\"tool_calls\",\"delta_chars\":5,\"calls\":[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\": \\\"ls\\\"}\",\"call_id\":\"c_one\"},{\"name\":\"read\",\"arguments\":\"{}\",\"call_id\":\"c_two\"}]}" &&
	n=$(request_count) &&
	rpc <<-\EOF &&
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	t = s.request("thread/start", {})["result"]["thread"]
	tools = [{"name": "shell", "description": "run a command",
	          "inputSchema": {"type": "object",
	                          "properties": {"cmd": {"type": "string"}}}},
	         {"type": "function", "name": "read",
	          "parameters": {"type": "object", "properties": {}}}]
	r = s.request("turn/start", {"threadId": t["id"], "input": "list",
	              "dynamicTools": tools, "files": False, "rag": False})
	check("result" in r, r)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	check(done["status"] == "awaiting_tool_results", done)
	check(done["kind"] == "tool_calls", done)
	items = [m["params"] for m in s.seen
	         if m.get("method") == "item/completed"]
	check([i["item"]["callId"] for i in items] == ["c_one", "c_two"], items)
	check(items[0]["item"]["type"] == "dynamicToolCall" and
	      items[0]["item"]["tool"] == "shell" and
	      items[0]["item"]["arguments"] == "{\"cmd\": \"ls\"}" and
	      items[0]["item"]["status"] == "pending" and
	      items[0]["threadId"] == t["id"], items)
	# an answer that misses a call is refused before anything is sent
	r = s.request("turn/toolOutputs", {"threadId": t["id"],
	              "outputs": {"c_one": "a.c"}})
	check(r["error"]["code"] == -32602 and "c_two" in r["error"]["message"],
	      r)
	r = s.request("turn/toolOutputs", {"threadId": t["id"],
	              "outputs": [{"call_id": "c_one", "output": "a.c",
	                           "exit_code": "zero"}]})
	check(r["error"]["code"] == -32602 and
	      "exit_code" in r["error"]["message"], r)
	r = s.request("turn/toolOutputs", {"threadId": t["id"],
	              "outputs": [{"call_id": "c_one", "output": "a.c\nb.c",
	                           "exit_code": 0, "cwd": "/src"},
	                          {"call_id": "c_two", "output": "nope",
	                           "status": "denied"}]})
	check("result" in r, r)
	done2 = s.wait_notification("turn/completed",
	        lambda m: m["params"]["turn"]["id"] == r["result"]["turn"]["id"]
	        )["params"]["turn"]
	check(done2["status"] == "completed" and
	      done2["parent"] == done["session"], done2)
	open("toolsess", "w").write(done2["session"])
	check(s.close() == 0, "exit code")
	EOF
	request_body $((n + 1)) >body1 &&
	test "$(json_field .tools[0].type <body1)" = function &&
	test "$(json_field .tools[0].parameters.properties.cmd.type <body1)" = string &&
	test "$(json_field .tools[1].name <body1)" = read &&
	test "$(request_count)" = $((n + 2)) &&
	request_body $((n + 2)) >body2 &&
	test "$(json_field .input[0].type <body2)" = function_call_output &&
	test "$(json_field .input[1].call_id <body2)" = c_two &&
	test "$(json_field .input[1].output <body2)" = nope &&
	test "$(json_field .tools[0].name <body2)" = shell &&
	aptix show --json "$(cat toolsess)" >show.json &&
	test "$(json_field .tool_results[0].exit_code <show.json)" = 0 &&
	test "$(json_field .tool_results[0].cwd <show.json)" = /src &&
	test "$(json_field .tool_results[1].status <show.json)" = denied
'

test_expect_success 'thread/name/set and thread/archive' '
	rpc <<-\EOF &&
	import os
	from lib_jsonrpc import AppServer, check
	fconv = os.environ["fconv"]
	s = AppServer()
	r = s.request("thread/name/set", {"threadId": fconv,
	              "name": "the fork"})["result"]
	check(r["title"] == "the fork" and r["titled"], r)
	r = s.request("thread/name/set", {"threadId": fconv, "name": "a\nb"})
	check(r["error"]["code"] == -32602, r)
	r = s.request("thread/name/set", {"threadId": "nosuch", "name": "x"})
	check(r["error"]["code"] == -32004, r)
	r = s.request("thread/archive", {"threadId": fconv})["result"]
	check(r["archived"], r)
	ids = [t["id"] for t in s.request("thread/list", {})["result"]["data"]]
	check(fconv not in ids, ids)
	ids = [t["id"] for t in s.request("thread/list",
	       {"archived": True})["result"]["data"]]
	check(fconv in ids, ids)
	r = s.request("thread/archive", {"threadId": fconv,
	              "archived": False})["result"]
	check(not r["archived"], r)
	check(s.close() == 0, "exit code")
	EOF
	aptix sessions --all-workspaces >out &&
	grep "the fork" out
'

test_expect_success 'the API key is in no message' '
	! grep -r "$OPENAI_API_KEY" app-server.err &&
	rpc <<-\EOF
	import os
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	s.request("thread/list", {"all": True})
	s.request("thread/graph", {"all": True})
	s.request("turn/start", {"threadId": os.environ["conv"], "input": "k"})
	s.wait_notification("turn/completed")
	s.close()
	import json
	text = json.dumps(s.seen)
	check(os.environ["OPENAI_API_KEY"] not in text, "key leaked")
	EOF
'

test_done
