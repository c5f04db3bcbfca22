#!/bin/sh
test_description='credentials in the front ends: streamed answers, titles

A title holding a credential is refused by serve (PATCH) and app-server
(thread/name/set), as by the CLI (t7007). The stand-in answers with its API key in the text (the echo fault), its
deltas cut in the middle of the key, so that no single delta holds it
whole. The CLI'"'"'s streamed output, serve'"'"'s SSE delta events and
app-server'"'"'s item/agentMessage/delta notifications must show
<redacted> where the key was, as the stored answer does; a tail that
looked like the start of a key but was none is shown at the next delta
or at the end.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq CURL
then
	skip_all='python3 (the stand-in) and curl are needed'
	test_done
fi

# The answer: the key (32 bytes: sk-test- and 24 hex digits) twice,
# and a start of the key that is none, at the very end.
TEXT='Your key is {api_key}, and again {api_key}. Not a key: sk-te'
EXPECT='Your key is <redacted>, and again <redacted>. Not a key: sk-te'
# cut inside the first key, two bytes before the second, inside it,
# and inside the last partial one
SPLITS='[20, 31, 54, 60, 102]'

echo_fault () {
	standin_fault "{\"kind\":\"echo\",\"text\":\"$TEXT\",\"splits\":$SPLITS}"
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1
'

test_expect_success 'the stand-in cuts the key across deltas' '
	echo_fault &&
	curl -sS -N -H "Authorization: Bearer $OPENAI_API_KEY" \
		-H "Content-Type: application/json" \
		--data-binary "{\"model\":\"gpt-4.1\",\"input\":\"x\",\"stream\":true}" \
		"$OPENAI_BASE_URL/responses" >raw &&
	python3 - "$OPENAI_API_KEY" raw <<-\EOF
	import json, sys
	key = sys.argv[1]
	deltas = [json.loads(l[6:])["delta"] for l in open(sys.argv[2])
	          if l.startswith("data: ") and "output_text.delta" in l]
	assert key in "".join(deltas), deltas
	assert not any(key in d for d in deltas), deltas
	EOF
'

test_expect_success 'the CLI streams the answer with the key redacted' '
	echo_fault &&
	aptix continue -m "what is my key" >out 2>err &&
	grep -F "$EXPECT" out &&
	! grep -F "$OPENAI_API_KEY" out err &&
	aptix show --json HEAD >shown &&
	test "$(json_field .answer <shown)" = "$EXPECT"
'

test_expect_success 'serve: the SSE delta events have the key redacted' '
	rm -f .aptix/serve.token &&
	test_start_server serve aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	TOKEN=$(cat .aptix/serve.token) &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	echo_fault &&
	curl -sS -N -o events -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" \
		-H "Content-Type: application/json" \
		--data-binary "{\"conversation\":\"$conv\",\"instruction\":\"stream it\"}" \
		"${URL%/}/api/ai/agent/execute" &&
	# a title holding a credential: 400, nothing stored
	tok=gh"p_"$(LC_ALL=C tr -dc A-Za-z0-9 </dev/urandom | head -c 36) &&
	code=$(curl -sS -o body -w "%{http_code}" -X PATCH \
		-H "Authorization: Bearer $TOKEN" \
		-H "Content-Type: application/json" \
		--data-binary "{\"title\":\"ship $tok\"}" \
		"${URL%/}/api/conversations/$conv") &&
	test "$code" = 400 &&
	grep "the title holds a credential, GitHub token" body &&
	test_stop_server serve &&
	! grep -F "$tok" body &&
	aptix sessions --json --all-workspaces >list &&
	! grep -F "$tok" list &&
	! grep -F "$OPENAI_API_KEY" events &&
	python3 - "$EXPECT" events <<-\EOF
	import json, sys
	events, name = [], None
	for line in open(sys.argv[2]):
	    line = line.rstrip("\n")
	    if line.startswith("event: "):
	        name = line[7:]
	    elif line.startswith("data: "):
	        events.append((name, json.loads(line[6:])))
	deltas = [d["text"] for n, d in events if n == "delta"]
	assert len(deltas) > 1, deltas
	assert "".join(deltas) == sys.argv[1], deltas
	assert events[-1][1]["text"] == sys.argv[1], events[-1]
	EOF
'

test_expect_success 'app-server: item/agentMessage/delta has the key redacted' '
	echo_fault &&
	PYTHONPATH=$TEST_DIRECTORY python3 - "$EXPECT" <<-\EOF
	import json, os, sys
	from lib_jsonrpc import AppServer, check
	s = AppServer()
	t = s.request("thread/start", {})["result"]["thread"]
	s.request("turn/start", {"threadId": t["id"], "input": "echo it"})
	done = s.wait_notification("turn/completed")["params"]["turn"]
	deltas = [m["params"]["delta"] for m in s.seen
	          if m.get("method") == "item/agentMessage/delta"]
	check(len(deltas) > 1, deltas)
	check("".join(deltas) == sys.argv[1], deltas)
	check(done["text"] == sys.argv[1], done)
	check(os.environ["OPENAI_API_KEY"] not in json.dumps(s.seen), "leak")
	# a title holding a credential (or the key) is refused
	tok = "gh" + "p_" + "".join(
	    __import__("random").choice("abcdefghijklmnopqrstuvwxyz0123456789")
	    for _ in range(36))
	for name in ("ship " + tok, "k " + os.environ["OPENAI_API_KEY"]):
	    r = s.request("thread/name/set", {"threadId": t["id"],
	                  "name": name})
	    check(r.get("error", {}).get("code") == -32602, r)
	    check("the title holds" in r["error"]["message"], r)
	    check(tok not in r["error"]["message"], r)
	r = s.request("thread/read", {"threadId": t["id"]})
	check(tok not in json.dumps(r), r)
	check(s.close() == 0, "exit code")
	EOF
'

test_done
