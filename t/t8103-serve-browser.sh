#!/bin/sh
test_description='aptix serve: the page, in headless Chromium

The page is loaded in a real browser driven through the Chrome DevTools
Protocol (lib_cdp.py), at 1400x757 and at 390x844 (a phone), and used
as a person uses it: clicks with the mouse where the elements are drawn,
typing into the box. It draws the graph of a store with a fork and a
turn that failed twice before its retry (siblings as branches, failures
marked, each row with its id, date and heads), shows a turn when its
node is clicked, forks from it with the answer streaming in where the
user looks, scrolls to the new turn, and offers to start a conversation
on an empty store. Screenshots are kept in the trash directory
(graph-1400.png, streaming-1400.png, done-1400.png, phone-390.png,
empty-1400.png).'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

test_lazy_prereq CHROMIUM '
	python3 -c "import sys; sys.path.insert(0, \"$TEST_DIRECTORY\"); \
import lib_cdp; sys.exit(not lib_cdp.find_chromium())"
'

if ! test_have_prereq PYTHON3 || ! test_have_prereq CHROMIUM
then
	skip_all='python3 and chromium are needed'
	test_done
fi

# cdp <<EOF ... EOF: a python3 script with lib_cdp imported, and
# helpers: page(w, h) opens the page at that size; in_view(sel, box)
# says whether the element is drawn inside the box (a selector; the
# window when None); png(name) keeps a screenshot in the trash directory
cdp () {
	PYTHONPATH=$TEST_DIRECTORY TRASH=$TRASH_DIRECTORY \
		python3 -c 'import sys; exec(open(sys.argv[1]).read() + sys.stdin.read())' \
		"$TRASH_DIRECTORY/cdp-prelude.py"
}

test_expect_success 'setup: a fork, two failed tries and a retry, a long conversation; a server' '
	cat >cdp-prelude.py <<-\EOF &&
	import json, os, re
	from lib_cdp import Browser
	trash = os.environ["TRASH"]
	b = None
	def page(url, w, h):
	    global b
	    b = Browser(trash, width=w, height=h)
	    b.viewport(w, h)
	    b.navigate(url)
	    b.wait_for("document.body.dataset.graph === \"ready\"")
	    return b
	def in_view(sel, box=None):
	    return b.eval("""(() => {
	        const e = document.querySelector(%s);
	        if (!e) return false;
	        const r = e.getBoundingClientRect();
	        const box = %s;
	        const v = box ? document.querySelector(box).getBoundingClientRect()
	            : {top: 0, left: 0, bottom: innerHeight, right: innerWidth};
	        return r.height > 0 && r.width > 0 && r.top >= v.top - 1 &&
	            r.top < v.bottom && r.left >= v.left - 1 && r.left < v.right;
	    })()""" % (json.dumps(sel), json.dumps(box)))
	def png(name):
	    b.screenshot(os.path.join(trash, name))
	def node(id):
	    return "#graph .node[data-id=\"%s\"]" % id
	def label(id):
	    return b.eval("document.querySelector(%s + \" text:not(.mark)\")"
	                  ".textContent" % json.dumps(node(id)))
	EOF
	start_standin &&
	aptix init -q &&
	for i in $(test_seq 24)
	do
		aptix continue -m "long conversation, turn $i" >/dev/null 2>&1 ||
		return 1
	done &&
	aptix switch -c other >/dev/null 2>&1 &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	A=$(aptix rev-parse HEAD~1) &&
	aptix fork $A -m "forked question" >/dev/null 2>&1 &&
	F=$(aptix rev-parse HEAD) &&
	standin_fault "{\"kind\":\"failed\"}" &&
	test_must_fail aptix continue -m "this one fails" >/dev/null 2>&1 &&
	standin_fault "{\"kind\":\"failed\"}" &&
	test_must_fail aptix continue -m "this one fails" >/dev/null 2>&1 &&
	aptix continue -m "this one fails" >/dev/null 2>&1 &&
	R=$(aptix rev-parse HEAD) &&
	test "$(aptix rev-parse HEAD~1)" = "$F" &&
	rm -f .aptix/serve.token &&
	test_start_server serve aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	PAGE=$(sed -n "s/^page //p" "$TRASH_DIRECTORY/serve.log") &&
	test -n "$PAGE" &&
	export A F R PAGE
'

test_expect_success 'at 1400x757: retries as branches, failures marked, rows with id, date, HEAD' '
	cdp <<-\EOF &&
	A, F, R = os.environ["A"], os.environ["F"], os.environ["R"]
	page(os.environ["PAGE"], 1400, 757)
	try:
	    assert b.eval("location.hash") == "", b.eval("location.hash")
	    assert b.eval("[innerWidth, innerHeight]") == [1400, 757]
	    nodes = b.eval("[...document.querySelectorAll(\"#graph .node\")]"
	        ".map(g => ({id: g.dataset.id, cls: g.getAttribute(\"class\"),"
	        " x: g.querySelector(\"circle\").getAttribute(\"cx\"),"
	        " label: g.querySelector(\"text:not(.mark)\").textContent}))")
	    assert len(nodes) == 30, len(nodes)
	    byid = {n["id"]: n for n in nodes}
	    failed = [n for n in nodes if "failed" in n["cls"]]
	    assert len(failed) == 2, failed
	    # the three children of F side by side, not one below the other
	    kids = [n for n in nodes if n["id"] != R and
	            b.eval("aptix.graph.nodes.find(x => x.id === %s).parent"
	                   % json.dumps(n["id"])) == F] + [byid[R]]
	    assert len(kids) == 3, kids
	    assert len(set(k["x"] for k in kids)) == 3, kids
	    # R goes on in F'"'"'s column: the chain to the head is straight
	    assert byid[R]["x"] == byid[F]["x"], (byid[R], byid[F])
	    # a failure is marked where it can be seen: a white cross, the word
	    for n in failed:
	        assert "failed: this one fails" in n["label"], n
	        mark = b.eval("document.querySelector(%s + \" .mark\").textContent"
	                      % json.dumps(node(n["id"])))
	        assert mark == "\u00d7", mark
	    assert b.eval("getComputedStyle(document.querySelector(\"#graph "
	                  ".node.failed .summary\")).fill") == "rgb(197, 48, 48)"
	    # every row: id, date; the heads decorated, HEAD at R
	    for n in nodes:
	        assert re.match(r"^[0-9a-f]{8}  \d{4}-\d\d-\d\d \d\d:\d\d  ",
	                        n["label"]), n
	    assert re.search(r"\(HEAD \u2192 [^)]*\) this one fails", byid[R]["label"]),\
	        byid[R]["label"]
	    heads = [n for n in nodes if "(" in n["label"]]
	    assert len(heads) == 3, heads      # three conversations
	    png("graph-1400.png")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file graph-1400.png
'

test_expect_success 'at 1400x757: a fork streams where the user looks; the graph scrolls to it' '
	standin_fault "{\"kind\":\"slow\",\"delay\":0.4}" &&
	cdp <<-\EOF &&
	A = os.environ["A"]
	page(os.environ["PAGE"], 1400, 757)
	try:
	    # the graph is taller than its pane: the newest rows are out of sight
	    assert b.eval("document.getElementById(\"graphpane\").scrollHeight"
	                  " > document.getElementById(\"graphpane\").clientHeight")
	    b.click(node(A) + " circle")
	    b.wait_for("document.body.dataset.selected === \"%s\"" % A)
	    assert b.eval("document.getElementById(\"t-instruction\")"
	                  ".textContent") == "first question"
	    assert in_view("#instruction") and in_view("#fork")
	    b.click("#instruction")
	    b.type_text("a fork from the browser")
	    b.click("#fork")
	    b.wait_for("aptix.deltas >= 1 && "
	               "document.body.dataset.state === \"streaming\"")
	    # what streams is in sight, and the graph shows the turn running
	    assert in_view("#stream"), b.eval("JSON.stringify(document."
	        "getElementById(\"stream\").getBoundingClientRect())")
	    assert b.eval("document.getElementById(\"live-title\").textContent"
	                  ).startswith("Running: a fork from turn #1")
	    assert in_view("#ghost", "#graphpane")
	    partial = b.eval("document.getElementById(\"stream\").textContent")
	    png("streaming-1400.png")
	    b.wait_for("document.body.dataset.state === \"done\"")
	    final = b.eval("document.getElementById(\"stream\").textContent")
	    assert b.eval("document.body.dataset.result") == "completed"
	    assert final.startswith("Answer #") and \
	        "a fork from the browser" in final, final
	    assert partial and final.startswith(partial) and partial != final,\
	        (partial, final)
	    assert b.eval("aptix.deltas") > 1
	    # the new turn: drawn, selected, a child of A, scrolled into sight
	    b.wait_for("document.querySelectorAll(\"#graph .node\").length"
	               " === 31")
	    b.wait_for("aptix.selected && aptix.selected.parent === \"%s\"" % A)
	    new = b.eval("aptix.selected.session")
	    assert b.eval("document.querySelector(%s).classList"
	                  ".contains(\"selected\")" % json.dumps(node(new)))
	    assert in_view(node(new) + " circle", "#graphpane")
	    assert not b.eval("document.getElementById(\"ghost\")")
	    b.eval("document.getElementById(\"t-request\").open = true")
	    b.wait_for("document.querySelector(\"#t-request pre\")"
	               ".textContent.includes(\"a fork from the browser\")")
	    png("done-1400.png")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file streaming-1400.png &&
	test_path_is_file done-1400.png
'

test_expect_success 'at 390x844 (a phone): graph above, turn below, all in reach' '
	standin_reset &&
	cdp <<-\EOF &&
	R = os.environ["R"]
	page(os.environ["PAGE"], 390, 844)
	try:
	    assert b.eval("innerWidth") == 390
	    # nothing wider than the screen but the graph, which scrolls
	    assert b.eval("document.documentElement.scrollWidth") <= 390
	    g = b.eval("JSON.stringify(document.getElementById(\"graphpane\")"
	               ".getBoundingClientRect())")
	    t = b.eval("JSON.stringify(document.getElementById(\"turnpane\")"
	               ".getBoundingClientRect())")
	    g, t = json.loads(g), json.loads(t)
	    assert g["bottom"] <= t["top"] + 1 and g["height"] > 200, (g, t)
	    b.eval("document.querySelector(%s).scrollIntoView()" % json.dumps(node(R)))
	    b.click(node(R) + " circle")
	    b.wait_for("document.body.dataset.selected === \"%s\"" % R)
	    assert in_view("#t-title") and in_view("#instruction")
	    assert in_view("#continue")
	    b.click("#instruction")
	    b.type_text("and from the phone")
	    b.click("#continue")
	    b.wait_for("document.body.dataset.state === \"done\"")
	    assert in_view("#stream")
	    assert "and from the phone" in b.eval(
	        "document.getElementById(\"stream\").textContent")
	    b.wait_for("aptix.selected && aptix.selected.parent === \"%s\"" % R)
	    png("phone-390.png")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file phone-390.png
'

# hold_turn <conversation>: a streamed turn in the background (call it
# from the test body, not a subshell); its pid in $cpid
hold_turn () {
	curl -sS -N -o held.events -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" \
		--data-binary "{\"conversation\":\"$1\",\"instruction\":\"hold it\"}" \
		"$URL/api/ai/agent/execute" &
	cpid=$!
}

test_expect_success 'a turn refused (its conversation is busy) says so where it ran' '
	TOKEN=$(cat .aptix/serve.token) &&
	URL=${PAGE%%/#*} &&
	conv=$(aptix rev-parse --symbolic-full-name HEAD) &&
	conv=${conv#refs/conversations/} &&
	standin_reset &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	n=$(request_count) &&
	hold_turn "$conv" &&
	test_when_finished "kill_children $cpid" &&
	wait_for_requests $((n + 1)) &&
	cdp <<-\EOF &&
	R = os.environ["R"]
	page(os.environ["PAGE"], 1400, 757)
	try:
	    b.click(node(R) + " circle")
	    b.wait_for("document.body.dataset.selected === \"%s\"" % R)
	    b.click("#instruction")
	    b.type_text("me too")
	    b.click("#continue")
	    b.wait_for("document.body.dataset.state === \"error\"")
	    assert in_view("#stream")
	    assert b.eval("document.getElementById(\"live-title\").textContent"
	                  ).startswith("Not run: continuing")
	    assert "is busy" in b.eval(
	        "document.getElementById(\"stream\").textContent")
	    assert not b.eval("document.getElementById(\"ghost\")")
	    assert not b.eval("document.getElementById(\"continue\").disabled")
	finally:
	    b.close()
	EOF
	curl -sS -o /dev/null -H "Authorization: Bearer $TOKEN" -d "{}" \
		"$URL/api/conversations/$conv/interrupt" &&
	wait $cpid &&
	grep "^event: completed" held.events
'

test_expect_success 'an empty store offers to start a conversation' '
	mkdir empty &&
	aptix -C empty init -q &&
	test_start_server eserve aptix -C empty serve --port 0 &&
	test_wait_for_file empty/.aptix/serve.token 10 eserve &&
	EPAGE=$(sed -n "s/^page //p" "$TRASH_DIRECTORY/eserve.log") &&
	export EPAGE &&
	cdp <<-\EOF &&
	page(os.environ["EPAGE"], 1400, 757)
	try:
	    assert in_view("#empty")
	    assert b.eval("document.querySelector(\"#empty h2\").textContent")\
	        == "No conversations yet"
	    assert in_view("#start") and in_view("#instruction")
	    assert b.eval("document.activeElement.id") == "instruction"
	    png("empty-1400.png")
	    b.type_text("the very first question")
	    b.click("#start")
	    b.wait_for("document.body.dataset.state === \"done\"")
	    assert b.eval("document.body.dataset.result") == "completed"
	    b.wait_for("document.querySelectorAll(\"#graph .node\").length === 1")
	    b.wait_for("aptix.selected !== null")
	    assert not in_view("#empty")
	    assert b.eval("document.getElementById(\"status\").textContent")\
	        .startswith("1 conversation, 1 turns")
	    assert "the very first question" in b.eval(
	        "document.getElementById(\"t-instruction\").textContent")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file empty-1400.png &&
	test "$(aptix -C empty log --all --format=%s)" = "the very first question" &&
	aptix -C empty fsck >/dev/null &&
	aptix fsck >/dev/null
'

test_expect_success 'tool calls and results in the turn view, folded, with exit codes' '
	mkdir tools &&
	aptix -C tools init -q &&
	cat >tools/tools.json <<-\EOF &&
	[{"type":"function","name":"shell","parameters":{"type":"object",
	  "properties":{"cmd":{"type":"string"}}}}]
	EOF
	standin_fault "{\"kind\":\"tool_calls\",\"calls\":[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":\\\"make test\\\"}\",\"call_id\":\"call_mk\"},{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":\\\"ls\\\"}\",\"call_id\":\"call_ls\"}]}" &&
	aptix -C tools continue --no-files --no-rag --tools tools.json \
		-m "build it" >/dev/null 2>&1 &&
	TA=$(aptix -C tools rev-parse HEAD) &&
	cat >tools/results.json <<-\EOF &&
	[{"call_id":"call_mk","output":"FAIL: t1 (3 of 9)\n","exit_code":3,
	  "duration_ms":1250,"cwd":"/src/proj","argv":["make","test"]},
	 {"call_id":"call_ls","output":"no, not listing","status":"denied"}]
	EOF
	aptix -C tools continue --tool-results results.json >/dev/null 2>&1 &&
	TR=$(aptix -C tools rev-parse HEAD) &&
	test_start_server tserve aptix -C tools serve --port 0 &&
	test_wait_for_file tools/.aptix/serve.token 10 tserve &&
	TPAGE=$(sed -n "s/^page //p" "$TRASH_DIRECTORY/tserve.log") &&
	export TA TR TPAGE &&
	cdp <<-\EOF &&
	TA, TR = os.environ["TA"], os.environ["TR"]
	page(os.environ["TPAGE"], 1400, 757)
	def folded(sel):
	    return b.eval("[...document.querySelectorAll(%s)].map(d => "
	                  "({open: d.open, summary: d.querySelector(\"summary\")"
	                  ".textContent, body: d.querySelector(\"pre\")"
	                  ".textContent}))" % json.dumps(sel + " details"))
	try:
	    b.click(node(TA))
	    b.wait_for("document.body.dataset.selected === %s" % json.dumps(TA))
	    calls = folded("#t-calls")
	    assert [c["summary"] for c in calls] == ["shell  call_mk",
	                                             "shell  call_ls"], calls
	    assert not any(c["open"] for c in calls), calls
	    assert json.loads(calls[0]["body"]) == {"cmd": "make test"}, calls
	    assert in_view("#t-calls-h")
	    assert not in_view("#t-results-h")
	    b.click("#t-calls details summary")
	    assert b.eval("document.querySelector(\"#t-calls details\").open")
	    assert in_view("#t-calls details pre")
	    b.click(node(TR))
	    b.wait_for("document.body.dataset.selected === %s" % json.dumps(TR))
	    assert b.eval("document.getElementById(\"t-instruction\")"
	                  ".textContent").startswith("(none: this turn sends")
	    res = folded("#t-results")
	    assert len(res) == 2, res
	    assert res[0]["summary"] == "shell  call_mk  exit 3  18 bytes  1250 ms",\
	        res[0]["summary"]
	    assert res[1]["summary"] == "shell  call_ls  denied  15 bytes", res
	    assert res[0]["body"] == "cwd /src/proj\nargv make test\n" \
	        "FAIL: t1 (3 of 9)\n", res[0]["body"]
	    assert not any(r["open"] for r in res), res
	    assert not in_view("#t-calls-h")
	    b.click("#t-results details summary")
	    png("tools-1400.png")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file tools-1400.png
'

test_expect_success 'search: typed in the box, the matching turns above the graph, one click shows it' '
	cdp <<-\EOF &&
	F = os.environ["F"]
	page(os.environ["PAGE"], 1400, 757)
	def enter():
	    for kind in ("keyDown", "keyUp"):
	        b.call("Input.dispatchKeyEvent", type=kind, key="Enter",
	               code="Enter", windowsVirtualKeyCode=13,
	               **({"text": "\r"} if kind == "keyDown" else {}))
	try:
	    assert b.eval("document.getElementById(\"results\").hidden")
	    b.click("#sq")
	    b.type_text("forked")
	    enter()
	    b.wait_for("document.body.dataset.search === \"ready\"")
	    hits = b.eval("[...document.querySelectorAll(\"#hits .hit\")]"
	                  ".map(h => ({id: h.dataset.id, text: h.textContent}))")
	    assert [h["id"] for h in hits] == [F], hits
	    assert hits[0]["text"].startswith("forked question"), hits
	    assert "1 turn matching" in b.eval(
	        "document.getElementById(\"results-title\").textContent")
	    assert in_view("#hits .hit")
	    png("search-1400.png")
	    b.click("#hits .hit")
	    b.wait_for("document.body.dataset.selected === %s" % json.dumps(F))
	    assert b.eval("document.getElementById(\"t-instruction\")"
	                  ".textContent") == "forked question"
	    # words no turn has: said so, nothing listed
	    b.eval("document.getElementById(\"sq\").value = \"\"")
	    b.click("#sq")
	    b.type_text("zebra")
	    enter()
	    b.wait_for("document.getElementById(\"results-title\")"
	               ".textContent.startsWith(\"No turn\")")
	    assert b.eval("document.querySelectorAll(\"#hits li\").length") == 0
	    b.click("#results-close")
	    assert b.eval("document.getElementById(\"results\").hidden")
	    assert not b.console_errors(), b.console_errors()
	finally:
	    b.close()
	EOF
	test_path_is_file search-1400.png
'

test_done
