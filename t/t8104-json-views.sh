#!/bin/sh
test_description='one JSON vocabulary: every interface, the same views

The same turns and conversation asked of show --json, sessions --json,
status --json, log --json, the HTTP API of aptix serve and aptix app-server (and
the result of a turn from continue --json, execute and turn/completed): the
same field names with the same values (Documentation/json.md), the
compatibility aliases equal to what they alias, every name snake_case
but the documented aliases, and every name documented.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq CURL
then
	skip_all='python3 (the stand-in, the driver) and curl are needed'
	test_done
fi

# api <path> <out>: GET the path with the token into out
api () {
	test "$(curl -sS -o "$2" -w "%{http_code}" \
		-H "Authorization: Bearer $TOKEN" "$URL$1")" = 200
}

test_expect_success 'setup: two turns, a failed attempt, a fork' '
	start_standin &&
	aptix init -q &&
	aptix config openai.max-attempts 1 &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	A=$(aptix rev-parse HEAD~1) &&
	B=$(aptix rev-parse HEAD) &&
	standin_fault "{\"kind\":\"status\",\"status\":500}" &&
	test_expect_code 1 aptix continue -m "this one fails" >/dev/null 2>&1 &&
	aptix fork $A -m "forked question" >/dev/null 2>&1 &&
	aptix switch "$conv" &&
	X=$(aptix status --json | json_field .last_failed.session) &&
	test -n "$X" &&
	test "$(aptix show --json $X | json_field .failed)" = true
'

test_expect_success 'the CLI: show, sessions, status and log --json' '
	aptix log --json --all >log.json &&
	test_must_fail aptix log --json --graph 2>err &&
	grep "^fatal: option .--json. cannot be used with" err &&
	aptix show --json $B >show-B.json &&
	aptix show --json $X >show-X.json &&
	aptix sessions --all-workspaces --json >sessions.json &&
	aptix status --json >status.json
'

test_expect_success 'the HTTP API' '
	test_start_server serve aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat .aptix/serve.token) &&
	api /api/turns/$B/full http-B-full.json &&
	api /api/turns/$X/full http-X-full.json &&
	api /api/turns/$B http-B.json &&
	api "/api/conversations?all=true" http-list.json &&
	api "/api/conversations?all=true&limit=1" http-page.json &&
	api /api/conversations/$conv http-conv.json &&
	api "/api/graph?all=true" http-graph.json &&
	ws=$(python3 -c "import urllib.parse, sys; print(urllib.parse.quote(sys.argv[1], safe=\"\"))" "$PWD") &&
	api "/api/workspaces/$ws/sessions" http-seed.json &&
	test_stop_server serve
'

test_expect_success 'app-server' '
	PYTHONPATH=$TEST_DIRECTORY python3 - "$conv" "$B" "$X" <<-\EOF
	import json, sys
	from lib_jsonrpc import AppServer, check
	conv, b, x = sys.argv[1:4]
	s = AppServer()
	def call(method, params, out):
	    r = s.request(method, params)
	    check("result" in r, r)
	    json.dump(r["result"], open(out, "w"))
	call("thread/read", {"threadId": conv, "sessionId": b, "full": True},
	     "rpc-B-full.json")
	call("thread/read", {"threadId": conv, "sessionId": x, "full": True},
	     "rpc-X-full.json")
	call("thread/read", {"threadId": conv}, "rpc-conv.json")
	call("thread/list", {"all": True}, "rpc-list.json")
	call("thread/list", {"all": True, "limit": 1}, "rpc-page.json")
	call("thread/graph", {"all": True}, "rpc-graph.json")
	s.close()
	EOF
'

test_expect_success 'a turn: the same full view everywhere' '
	python3 - "$B" "$X" <<-\EOF
	import json, sys
	load = lambda f: json.load(open(f))
	for sid, tag in ((sys.argv[1], "B"), (sys.argv[2], "X")):
	    show = load("show-%s.json" % tag)
	    assert show["session"] == sid, show
	    for other in ("http-%s-full.json" % tag, "rpc-%s-full.json" % tag):
	        o = load(other)
	        assert sorted(o) == sorted(show), (other,
	            set(o) ^ set(show))
	        for k in show:
	            assert o[k] == show[k], (other, k, o[k], show[k])
	b = load("show-B.json")
	assert b["failed"] is False and b["answer"].startswith("Answer"), b
	x = load("show-X.json")
	assert x["failed"] is True and x["answer"] is None, x
	assert x["parent"] == sys.argv[1], x
	EOF
'

test_expect_success 'a turn: the summary view is the full one, texts cut' '
	python3 - "$B" <<-\EOF
	import json, sys
	load = lambda f: json.load(open(f))
	full, summ = load("show-B.json"), load("http-B.json")
	rpc = [t for t in load("rpc-conv.json")["turns"]
	       if t["session"] == sys.argv[1]]
	http = [t for t in load("http-conv.json")["turns"]
	        if t["session"] == sys.argv[1]]
	assert rpc == [summ] and http == [summ], (rpc, http, summ)
	assert summ["instruction_summary"] == full["instruction"], summ
	assert summ["answer_summary"] == full["answer"], summ
	for k, v in summ.items():
	    if k.endswith("_summary"):
	        continue
	    assert full[k] == v, (k, full[k], v)
	assert "sources" not in summ and summ["source_count"] == \
	    len(full["sources"]), summ
	assert summ["file_count"] == len(full["files"]), summ
	EOF
'

test_expect_success 'a conversation: the same summary everywhere' '
	python3 - "$conv" <<-\EOF
	import json, sys
	conv = sys.argv[1]
	load = lambda f: json.load(open(f))
	def one(items, what):
	    m = [c for c in items if c["conversation"] == conv]
	    assert len(m) == 1, (what, items)
	    return m[0]
	def without(d, *keys):
	    return {k: v for k, v in d.items() if k not in keys}
	cli = one(load("sessions.json"), "sessions")
	assert cli["current"] is True, cli
	ref = without(cli, "current")
	assert ref["turn_count"] == 2 and ref["failed_count"] == 1, ref
	assert ref["id"] == conv, ref
	views = {
	    "http list": one(load("http-list.json")["items"], "http"),
	    "http conversation": load("http-conv.json")["conversation"],
	    "http graph": one(load("http-graph.json")["conversations"], "g"),
	    "rpc list": one(load("rpc-list.json")["items"], "rpc"),
	    "rpc thread": load("rpc-conv.json")["thread"],
	    "rpc graph": one(load("rpc-graph.json")["conversations"], "g"),
	}
	for what, v in views.items():
	    v = without(v, "running", "lane")
	    assert v == ref, (what, set(v.items()) ^ set(ref.items()))
	seed = one(load("http-seed.json"), "seed")
	assert seed["sessionId"] == conv, seed
	assert seed["updatedAt"] == ref["updated_at"], seed
	assert seed["turnCount"] == ref["turn_count"], seed
	assert seed["lastTurnStatus"] == ref["last_turn_status"], seed
	assert seed["status"] in ("active", "closed", "archived"), seed
	for k in ref:
	    if k != "status":
	        assert seed[k] == ref[k], (k, seed[k], ref[k])
	EOF
'

test_expect_success 'a page, and its app-server aliases' '
	python3 <<-\EOF
	import json
	load = lambda f: json.load(open(f))
	http, rpc = load("http-page.json"), load("rpc-page.json")
	assert sorted(http) == ["items", "next_cursor"], http
	assert len(http["items"]) == 1 and http["next_cursor"], http
	assert rpc["items"] == rpc["data"], rpc
	assert rpc["next_cursor"] == rpc["nextCursor"], rpc
	assert rpc["next_cursor"] == http["next_cursor"], (rpc, http)
	assert [c["conversation"] for c in rpc["items"]] == \
	    [c["conversation"] for c in http["items"]], (rpc, http)
	full = load("http-list.json")
	assert full["next_cursor"] is None and len(full["items"]) == 2, full
	EOF
'

test_expect_success 'a session in a list: graph nodes and status head' '
	python3 - "$B" <<-\EOF
	import json, sys
	load = lambda f: json.load(open(f))
	http, rpc = load("http-graph.json"), load("rpc-graph.json")
	assert http["nodes"] == rpc["nodes"], "graphs differ"
	node = [n for n in http["nodes"] if n["session"] == sys.argv[1]][0]
	assert node["id"] == node["session"], node
	head = load("status.json")["head"]
	assert head["session"] == sys.argv[1], head
	log = load("log.json")
	assert len(log) == len(http["nodes"]), (log, http["nodes"])
	for e in log:
	    n = [n for n in http["nodes"] if n["session"] == e["session"]][0]
	    assert sorted(e) == sorted(head), (e, head)
	    for k, v in e.items():
	        assert n[k] == v, (k, n[k], v)
	failed, x = load("status.json")["last_failed"], load("show-X.json")
	assert failed["session"] == x["session"], failed
	assert failed["created_at"] == x["session_created_at"], (failed, x)
	for k, v in head.items():
	    assert node[k] == v, (k, node[k], v)
	show = load("show-B.json")
	for k in ("session", "parent", "conversation", "status",
	          "turn_status", "failed"):
	    assert node[k] == show[k], (k, node[k], show[k])
	EOF
'

test_expect_success 'the result of a turn: continue --json, execute, turn/completed' '
	aptix continue --json -m "cli result" >run-cli.json 2>/dev/null &&
	test_start_server serve2 aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 serve2 &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve2.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat .aptix/serve.token) &&
	test "$(curl -sS -o run-http.json -w "%{http_code}" \
		-H "Authorization: Bearer $TOKEN" \
		-H "Content-Type: application/json" \
		--data-binary "{\"conversation\":\"$conv\",\"instruction\":\"http result\"}" \
		"$URL/api/ai/agent/execute")" = 200 &&
	test_stop_server serve2 &&
	PYTHONPATH=$TEST_DIRECTORY python3 - "$conv" <<-\EOF
	import json, sys
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	r = s.request("turn/start", {"threadId": sys.argv[1],
	                             "input": "rpc result"})
	check("result" in r, r)
	done = s.wait_notification("turn/completed")["params"]["turn"]
	s.close()
	json.dump(done, open("run-rpc.json", "w"))
	load = lambda f: json.load(open(f))
	cli, http, rpc = (load("run-%s.json" % k) for k in ("cli", "http", "rpc"))
	check(sorted(cli) == sorted(http), set(cli) ^ set(http))
	check(sorted(rpc) == sorted(list(cli) + ["id"]), set(rpc) ^ set(cli))
	for v in (cli, http, rpc):
	    check(v["kind"] == "answer" and v["status"] == "completed", v)
	    check(sorted(v["usage"]) == sorted(cli["usage"]), v)
	EOF
'

test_expect_success 'every name is snake_case but the aliases, and documented' '
	python3 - "$TEST_DIRECTORY/../Documentation/json.md" <<-\EOF
	import glob, json, re, sys
	doc = open(sys.argv[1]).read()
	aliases = {"sessionId", "updatedAt", "turnCount", "lastTurnStatus",
	           "data", "nextCursor"}
	# what a view holds as data, not as named fields
	opaque = {"request_payload", "response_payload"}
	names = set()
	def walk(v, path):
	    if isinstance(v, dict):
	        for k, x in v.items():
	            names.add(k)
	            if k not in opaque:
	                walk(x, path + "." + k)
	    elif isinstance(v, list):
	        for x in v:
	            walk(x, path)
	for f in glob.glob("*.json"):
	    v = json.load(open(f))
	    # status --json: only its head is one of these views
	    walk(v["head"] if f == "status.json" else v, f)
	bad = [n for n in names if n not in aliases and
	       not re.fullmatch("[a-z][a-z0-9]*(_[a-z0-9]+)*", n)]
	assert not bad, bad
	undocumented = [n for n in names if "`%s`" % n not in doc and
	                not re.search(r"\b%s\b" % n, doc)]
	assert not undocumented, sorted(undocumented)
	EOF
'

test_done
