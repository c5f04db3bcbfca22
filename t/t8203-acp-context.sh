#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='aptix acp: retrieved snippets and stop reasons

In an indexed work tree a prompt retrieves snippets: aptix acp shows them
to the editor as a completed tool_call of kind "search" whose locations
are the snippets'"'"' files (absolute paths) and first lines, after the
answer and again in the session/load replay. A response cut short at
max_output_tokens answers stopReason "max_tokens", one cut short by the
content filter or a refusal "refusal" (the editor sees the refusal text);
the turns are committed. Every message is checked against the ACP schema.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-acp.sh

test_expect_success 'setup: an indexed work tree' '
	start_standin &&
	aptix init -q ws &&
	mkdir ws/src &&
	cat >ws/src/config.c <<-\EOF &&
	/* parseConfigFile: read the configuration file at path */
	int parseConfigFile(const char *path)
	{
		return read_config_entries(path);
	}
	EOF
	cat >ws/src/server.c <<-\EOF &&
	/* start the http server on the configured port */
	int http_server_start(int port)
	{
		return listen_on(port);
	}
	EOF
	aptix -C ws config rag.top-k 2 &&
	aptix -C ws index >out 2>err &&
	test_must_be_empty err &&
	aptix -C ws rag-query -k 2 parse the configuration file >q &&
	grep "src/config.c:1-" q &&
	WT=$(cd ws && pwd) &&
	export WT
'

test_expect_success 'snippets: a completed search tool_call, then in load' '
	acp_ws <<-\EOF &&
	import os
	from lib_acp import Acp, check
	wt = os.environ["WT"]

	def searches(a, sid):
	    return [u["update"] for u in a.updates(sid)
	            if u["update"]["sessionUpdate"] == "tool_call" and
	            u["update"].get("kind") == "search"]

	def check_snippets(calls):
	    check(len(calls) == 1, calls)
	    c = calls[0]
	    check(c["status"] == "completed" and c["title"], c)
	    paths = [l["path"] for l in c["locations"]]
	    check(os.path.join(wt, "src/config.c") in paths, c)
	    check(all(os.path.isabs(p) for p in paths), c)
	    check(all(l.get("line", 0) >= 1 for l in c["locations"]), c)
	    text = c["content"][0]["content"]["text"]
	    check("src/config.c:1-" in text, c)
	    return c

	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": wt, "mcpServers": []}
	                )["result"]["sessionId"]
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "parse the configuration file"}]})
	check(r["result"]["stopReason"] == "end_turn", r)
	c = check_snippets(searches(a, sid))
	kinds = a.kinds(sid)
	check(kinds.index("tool_call") > kinds.index("agent_message_chunk"),
	      kinds)
	check(a.close() == 0, "exit")

	b = Acp()
	b.request("initialize", {"protocolVersion": 1})
	r = b.request("session/load", {"sessionId": sid, "cwd": wt,
	                               "mcpServers": []})
	check(r["result"] is not None, r)
	d = check_snippets(searches(b, sid))
	check(d["locations"] == c["locations"], (c, d))
	check(d["toolCallId"] == c["toolCallId"], (c, d))
	check(b.close() == 0, "exit")
	EOF
	test_path_is_file ws/acp.err &&
	! grep -E "Sanitizer|runtime error" ws/acp.err
'

# stop <fault> <stopReason>: a prompt whose response has that fault (a
# JSON object for the stand-in) answers that stopReason, the editor saw
# the answer (the text so far, or the refusal) in agent_message_chunks,
# and the turn is committed with that answer
stop () {
	STOP_FAULT=$1 STOP_REASON=$2 acp_ws <<-\EOF &&
	import json, os
	from lib_acp import Acp, check, fault
	a = Acp()
	a.request("initialize", {"protocolVersion": 1})
	sid = a.request("session/new", {"cwd": os.environ["WT"],
	                                "mcpServers": []})["result"]["sessionId"]
	fault(json.loads(os.environ["STOP_FAULT"]))
	r = a.request("session/prompt", {"sessionId": sid, "prompt": [
	    {"type": "text", "text": "say something"}]})
	check(r["result"]["stopReason"] == os.environ["STOP_REASON"], r)
	text = "".join(u["update"]["content"]["text"] for u in a.updates(sid)
	               if u["update"]["sessionUpdate"] == "agent_message_chunk")
	check(text, a.kinds(sid))
	open("../answer", "w").write(text)
	meta = r["result"]["_meta"]["aptix"]
	check(meta["conversation"] == sid and meta["session"], r)
	open("../sid", "w").write(sid)
	open("../session", "w").write(meta["session"])
	check(a.close() == 0, "exit")
	EOF
	aptix -C ws log --format=%s "$(cat sid)" >log &&
	test_line_count "=" 1 log &&
	test "$(aptix -C ws rev-parse "$(cat sid)")" = "$(cat session)" &&
	aptix -C ws show --json "$(cat session)" >show.json &&
	python3 -c "import json,sys; o = json.load(open(\"show.json\")); \
		sys.exit(o[\"answer\"] != open(\"answer\").read())"
}

test_expect_success 'incomplete at max_output_tokens: stopReason max_tokens' '
	stop "{\"kind\": \"incomplete\"}" max_tokens
'

test_expect_success 'incomplete for content_filter: stopReason refusal' '
	stop "{\"kind\": \"incomplete\", \"reason\": \"content_filter\"}" refusal
'

test_expect_success 'a refusal: stopReason refusal, its text shown' '
	stop "{\"kind\": \"refusal\", \"text\": \"I cannot help with that.\"}" refusal &&
	test "$(cat answer)" = "I cannot help with that."
'

test_done
