#!/bin/sh
test_description='aptix serve: the page, in headless Chromium

The page is loaded in a real browser driven through the Chrome DevTools
Protocol (lib_cdp.py): it draws the graph of a store with a fork and a
failed turn, shows a turn when its node is clicked, forks from it with
the answer streaming in, and a screenshot is saved in the trash
directory (page.png).'
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

# cdp <<EOF ... EOF: a python3 script with lib_cdp imported
cdp () {
	PYTHONPATH=$TEST_DIRECTORY TRASH=$TRASH_DIRECTORY \
		python3 -c 'import sys; exec(sys.stdin.read())'
}

test_expect_success 'setup: a conversation, a fork, a failed turn; a server' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	A=$(aptix rev-parse HEAD~1) &&
	aptix fork $A -m "forked question" >/dev/null 2>&1 &&
	standin_fault "{\"kind\":\"failed\"}" &&
	test_must_fail aptix continue -m "this one fails" >/dev/null 2>&1 &&
	rm -f .aptix/serve.token &&
	test_start_server serve aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	PAGE=$(sed -n "s/^page //p" "$TRASH_DIRECTORY/serve.log") &&
	test -n "$PAGE" &&
	export A PAGE
'

test_expect_success 'load the page, click a node, fork from it, watch it stream' '
	standin_fault "{\"kind\":\"slow\",\"delay\":0.4}" &&
	cdp <<-\EOF &&
	import os
	from lib_cdp import Browser
	A, page, trash = os.environ["A"], os.environ["PAGE"], os.environ["TRASH"]
	b = Browser(trash)
	try:
	    b.navigate(page)
	    b.wait_for("document.body.dataset.graph === \"ready\"")
	    # the token left the address bar
	    assert b.eval("location.hash") == "", b.eval("location.hash")
	    nodes = b.eval("[...document.querySelectorAll(\"#graph .node\")]"
	                   ".map(g => [g.dataset.id, g.getAttribute(\"class\"),"
	                   " g.querySelector(\"circle\").getAttribute(\"cx\")])")
	    assert len(nodes) == 4, nodes
	    assert sum("failed" in n[1] for n in nodes) == 1, nodes
	    assert len(set(n[2] for n in nodes)) == 2, nodes  # two lanes
	    assert b.eval("document.querySelectorAll(\"#graph path\").length")\
	        == 3
	    # click A
	    b.eval("document.querySelector(\"#graph .node[data-id=\\\"%s\\\"]\")"
	           ".dispatchEvent(new MouseEvent(\"click\", {bubbles: true}))"
	           % A)
	    b.wait_for("document.body.dataset.selected === \"%s\"" % A)
	    assert b.eval("document.getElementById(\"t-instruction\")"
	                  ".textContent") == "first question"
	    assert b.eval("document.getElementById(\"t-answer\").textContent")\
	        .startswith("Answer #1 to: first question")
	    # fork from it; the answer streams in
	    b.eval("document.getElementById(\"instruction\").value ="
	           " \"a fork from the browser\"")
	    b.eval("document.getElementById(\"fork\").click()")
	    b.wait_for("aptix.deltas >= 1 && "
	               "document.body.dataset.state === \"streaming\"")
	    partial = b.eval("document.getElementById(\"stream\").textContent")
	    b.wait_for("document.body.dataset.state === \"done\"")
	    final = b.eval("document.getElementById(\"stream\").textContent")
	    assert b.eval("document.body.dataset.result") == "completed"
	    assert final.startswith("Answer #") and \
	        "a fork from the browser" in final, final
	    assert partial and final.startswith(partial) and partial != final,\
	        (partial, final)
	    assert b.eval("aptix.deltas") > 1
	    # the graph now holds the new turn, selected, a child of A
	    b.wait_for("document.querySelectorAll(\"#graph .node\").length"
	               " === 5")
	    b.wait_for("aptix.selected && aptix.selected.parent === \"%s\"" % A)
	    b.eval("document.getElementById(\"t-request\").open = true")
	    b.wait_for("document.querySelector(\"#t-request pre\")"
	               ".textContent.includes(\"a fork from the browser\")")
	    b.screenshot(os.path.join(trash, "page.png"))
	    errors = b.console_errors()
	    assert not errors, errors
	finally:
	    b.close()
	EOF
	test_path_is_file page.png &&
	test "$(head -c 8 page.png | od -An -tx1 | tr -d " ")" = 89504e470d0a1a0a &&
	test "$(wc -c <page.png)" -gt 10000 &&
	aptix fsck >/dev/null
'

test_done
