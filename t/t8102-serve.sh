#!/bin/sh
test_description='aptix serve: the HTTP API

Every route of serve/openapi.json with curl against the OpenAI
stand-in: lists, reads, raw objects, the graph, turns run, forked and
rerun (as JSON and as Server-Sent Events), seed 003 sessions; and the
security checks: 401 without the token, 421 on a foreign Host, 403 on a
foreign Origin, 409 on a busy conversation, 413 on an oversized body,
400 on malformed JSON, a slow client timed out, a new token at each
start (0600), at most N connections, SIGTERM mid-turn.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq CURL
then
	skip_all='python3 (the stand-in) and curl are needed'
	test_done
fi

# start_serve <args>...: aptix serve --port 0 in the background; sets
# URL, TOKEN, HOSTPORT
start_serve () {
	rm -f .aptix/serve.token &&
	test_start_server serve aptix serve --port 0 "$@" &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	URL=${URL%/} &&
	HOSTPORT=${URL#http://} &&
	TOKEN=$(cat .aptix/serve.token) &&
	test -n "$TOKEN"
}

# api <method> <path> [<curl args>...]: the body in "body", the status
# on stdout
api () {
	local method=$1 path=$2
	shift 2
	curl -sS -o body -w "%{http_code}" -X "$method" \
		-H "Authorization: Bearer $TOKEN" "$@" "$URL$path"
}

# post <path> <json> [<curl args>...]
post () {
	local path=$1 data=$2
	shift 2
	api POST "$path" -H "Content-Type: application/json" \
		--data-binary "$data" "$@"
}

# stream_bg <out> <json>: a streamed execute in the background (call it
# from the test body, not a subshell); its pid in $cpid
stream_bg () {
	curl -sS -N -o "$1" -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" --data-binary "$2" \
		"$URL/api/ai/agent/execute" &
	cpid=$!
}

# start_unix_serve <path>: aptix serve on a unix socket, as "userve";
# sets TOKEN
start_unix_serve () {
	rm -f .aptix/serve.token &&
	test_start_server userve aptix serve --unix-socket "$1" &&
	test_wait_for_file .aptix/serve.token 10 userve &&
	TOKEN=$(cat .aptix/serve.token)
}

# unix_list <path>: GET /api/conversations on the socket, into "body"
unix_list () {
	curl -sS -f -o body --unix-socket "$1" \
		-H "Authorization: Bearer $TOKEN" http://localhost/api/conversations
}

test_expect_success 'setup: two turns, a fork, and a server' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "first question" >/dev/null 2>&1 &&
	aptix continue -m "second question" >/dev/null 2>&1 &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	A=$(aptix rev-parse HEAD~1) &&
	B=$(aptix rev-parse HEAD) &&
	aptix fork $A -m "forked question" >/dev/null 2>&1 &&
	fconv=$(aptix symbolic-ref --short HEAD) &&
	start_serve --timeout 2 --max-body 65536 &&
	test_path_is_file .aptix/serve.token &&
	test "$(stat -c %a .aptix/serve.token)" = 600 &&
	grep "^page $URL/#token=$TOKEN\$" "$TRASH_DIRECTORY/serve.log"
'

test_expect_success 'the documented routes are the routes served' '
	aptix serve --list-routes | sort >served &&
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for path, ops in d[\"paths\"].items():
    for m in ops:
        print(m.upper(), path)
" "$TEST_DIRECTORY/../serve/openapi.json" | sort >documented &&
	test_cmp documented served
'

test_expect_success '401 without the token or with a wrong one' '
	test "$(curl -sS -o body -w "%{http_code}" "$URL/api/conversations")" = 401 &&
	test "$(json_field .error.status <body)" = 401 &&
	test "$(curl -sS -o body -w "%{http_code}" -H "Authorization: Bearer x$TOKEN" \
		"$URL/api/conversations")" = 401 &&
	test "$(curl -sS -o body -w "%{http_code}" -H "Authorization: Bearer $TOKEN" \
		"$URL/api/conversations")" = 200
'

test_expect_success 'the page and its files need no token and hold no data' '
	curl -sS -D headers -o page.html "$URL/" &&
	grep -i "^content-type: text/html" headers &&
	grep -i "^content-security-policy: default-src .none." headers &&
	grep -i "^x-frame-options: DENY" headers &&
	grep "static/app.js" page.html &&
	! grep "$TOKEN" page.html &&
	curl -sS -f -D headers -o app.js "$URL/static/app.js" &&
	grep -i "^content-type: text/javascript" headers &&
	test "$(curl -sS -o /dev/null -w "%{http_code}" "$URL/static/nope.js")" = 404
'

test_expect_success 'GET /api/conversations: summaries, paging, filter' '
	test "$(api GET "/api/conversations")" = 200 &&
	test "$(json_field ".items[0].id" <body)" = "$fconv" &&
	test "$(json_field ".items[1].id" <body)" = "$conv" &&
	test "$(json_field ".items[1].title" <body)" = "first question" &&
	test "$(json_field ".items[1].turn_count" <body)" = 2 &&
	test "$(json_field ".items[1].last_turn_status" <body)" = completed &&
	test "$(json_field .next_cursor <body)" = null &&
	test "$(api GET "/api/conversations?limit=1")" = 200 &&
	cursor=$(json_field .next_cursor <body) &&
	test "$(api GET "/api/conversations?limit=1&cursor=$cursor")" = 200 &&
	test "$(json_field ".items[0].id" <body)" = "$conv" &&
	test "$(api GET "/api/conversations?q=FORKED")" = 200 &&
	test "$(json_field ".items[0].id" <body)" = "$fconv" &&
	test "$(json_field ".items[1]" <body)" = null &&
	test "$(api GET "/api/conversations?limit=zero")" = 400 &&
	test "$(api GET "/api/conversations?limit=5000")" = 400 &&
	test "$(api GET "/api/conversations?all=maybe")" = 400
'

test_expect_success 'GET /api/conversations/<id>: its turns' '
	test "$(api GET "/api/conversations/$conv")" = 200 &&
	test "$(json_field .conversation.id <body)" = "$conv" &&
	test "$(json_field ".turns[0].session" <body)" = "$A" &&
	test "$(json_field ".turns[1].session" <body)" = "$B" &&
	test "$(json_field ".turns[1].instruction_summary" <body)" = "second question" &&
	test "$(json_field .next_cursor <body)" = null &&
	test "$(api GET "/api/conversations/nosuch")" = 404 &&
	test "$(api GET "/api/conversations/$conv/extra")" = 404 &&
	test "$(api DELETE "/api/conversations/$conv")" = 405
'

test_expect_success 'GET /api/conversations/<id>: a page of its turns, the newest' '
	test "$(api GET "/api/conversations/$conv?limit=1")" = 200 &&
	test "$(json_field ".turns[0].session" <body)" = "$B" &&
	test "$(json_field ".turns[1]" <body)" = null &&
	test "$(json_field .next_cursor <body)" = "$B" &&
	test "$(api GET "/api/conversations/$conv?limit=1&cursor=$B")" = 200 &&
	test "$(json_field ".turns[0].session" <body)" = "$A" &&
	test "$(json_field .next_cursor <body)" = null &&
	test "$(api GET "/api/conversations/$conv?cursor=$B")" = 200 &&
	test "$(json_field ".turns[0].session" <body)" = "$A" &&
	test "$(api GET "/api/conversations/$conv?cursor=nothex")" = 400 &&
	test "$(api GET "/api/conversations/$conv?cursor=$(printf %064d 0)")" = 400 &&
	test "$(api GET "/api/conversations/$conv?limit=0")" = 400
'

test_expect_success 'turns: summary and full views; raw objects' '
	test "$(api GET "/api/turns/$B")" = 200 &&
	test "$(json_field .parent <body)" = "$A" &&
	test "$(json_field .instruction <body)" = null &&
	test "$(api GET "/api/turns/$B/full")" = 200 &&
	test "$(json_field .instruction <body)" = "second question" &&
	json_field .answer <body >answer &&
	grep "^Answer #2 to: second question" answer &&
	iid=$(json_field .instruction_id <body) &&
	rid=$(json_field .request_payload_id <body) &&
	curl -sS -D headers -o obj -H "Authorization: Bearer $TOKEN" \
		"$URL/api/objects/$iid" &&
	grep -i "^content-type: text/plain; charset=utf-8" headers &&
	grep -i "^x-aptix-object-type: blob" headers &&
	printf "second question" >expect &&
	test_cmp expect obj &&
	test "$(api GET "/api/objects/$rid")" = 200 &&
	test "$(json_field .model <body)" != null &&
	curl -sS -D headers -o obj -H "Authorization: Bearer $TOKEN" \
		"$URL/api/objects/$B" &&
	grep -i "^content-type: application/json" headers &&
	grep -i "^x-aptix-object-type: session" headers &&
	test "$(api GET "/api/objects/1234")" = 400 &&
	test "$(api GET "/api/objects/$(printf %064d 0)")" = 404 &&
	test "$(api GET "/api/turns/$iid")" = 400
'

test_expect_success 'GET /api/graph: nodes, parents, lanes' '
	test "$(api GET "/api/graph")" = 200 &&
	test "$(json_field .lanes <body)" = 2 &&
	test "$(json_field ".nodes[0].id" <body)" = "$A" &&
	test "$(json_field ".nodes[2].parent" <body)" = "$A" &&
	test "$(json_field ".nodes[2].parent_row" <body)" = 0 &&
	test "$(json_field ".nodes[1].lane" <body)" = "$(json_field ".nodes[0].lane" <body)" &&
	test "$(json_field ".nodes[2].lane" <body)" != "$(json_field ".nodes[0].lane" <body)" &&
	test "$(json_field .head.conversation <body)" = "$fconv" &&
	test "$(json_field .head.session <body)" = "$(aptix rev-parse HEAD)" &&
	test "$(api GET "/api/graph?conversation=$fconv")" = 200 &&
	test "$(json_field ".nodes[0].parent" <body)" = "$A" &&
	test "$(json_field ".nodes[0].parent_row" <body)" = null
'

test_expect_success 'GET /api/graph: pages of snapshots, the newest first' '
	test "$(api GET "/api/graph?limit=2")" = 200 &&
	test "$(json_field ".nodes[0].id" <body)" = "$B" &&
	F=$(aptix rev-parse "$fconv") &&
	test "$(json_field ".nodes[1].id" <body)" = "$F" &&
	test "$(json_field ".nodes[2]" <body)" = null &&
	test "$(json_field ".nodes[1].parent_row" <body)" = null &&
	test "$(json_field ".conversations[0].id" <body)" = "$fconv" &&
	test "$(json_field ".conversations[1].id" <body)" = "$conv" &&
	cursor=$(json_field .next_cursor <body) &&
	test "$cursor" != null &&
	test "$(api GET "/api/graph?limit=2&cursor=$cursor")" = 200 &&
	test "$(json_field ".nodes[0].id" <body)" = "$A" &&
	test "$(json_field ".nodes[1]" <body)" = null &&
	test "$(json_field ".conversations[0].id" <body)" = "$conv" &&
	test "$(json_field .next_cursor <body)" = null &&
	test "$(api GET "/api/graph?limit=3")" = 200 &&
	test "$(json_field ".nodes[2].parent_row" <body)" = 0 &&
	test "$(json_field .next_cursor <body)" = null &&
	test "$(api GET "/api/graph?q=FORKED")" = 200 &&
	test "$(json_field ".nodes[0].id" <body)" = "$F" &&
	test "$(json_field ".nodes[1]" <body)" = null &&
	test "$(api GET "/api/graph?limit=2&cursor=1.$conv")" = 400 &&
	test "$(api GET "/api/graph?limit=10001")" = 400
'

test_expect_success 'GET /api/search: sessions ranked by their words' '
	test "$(api GET "/api/search?q=forked+question")" = 200 &&
	test "$(json_field .q <body)" = "forked question" &&
	test "$(json_field ".hits[0].conversation" <body)" = "$fconv" &&
	test "$(json_field ".hits[0].summary" <body)" = "forked question" &&
	test "$(json_field ".hits | length" <body)" = 3 &&
	test "$(api GET "/api/search?q=question&conversation=$conv")" = 200 &&
	test "$(json_field ".hits | length" <body)" = 2 &&
	test "$(json_field ".hits[0].conversation" <body)" = "$conv" &&
	test "$(api GET "/api/search?q=question&limit=1")" = 200 &&
	test "$(json_field ".hits | length" <body)" = 1 &&
	test "$(api GET "/api/search?q=question&status=failed")" = 200 &&
	test "$(json_field ".hits | length" <body)" = 0 &&
	test "$(api GET "/api/search")" = 400 &&
	test "$(api GET "/api/search?q=x&status=nope")" = 400 &&
	test "$(api GET "/api/search?q=x&since=next+tuesday")" = 400
'

test_expect_success 'POST /api/ai/agent/execute: the final object as JSON' '
	test "$(post /api/ai/agent/execute \
		"{\"conversation\":\"$conv\",\"instruction\":\"third\"}")" = 200 &&
	test "$(json_field .kind <body)" = answer &&
	test "$(json_field .status <body)" = completed &&
	test "$(json_field .parent <body)" = "$B" &&
	test "$(json_field .conversation <body)" = "$conv" &&
	test "$(json_field .error_code <body)" = null &&
	json_field .text <body | grep "^Answer #.* to: third" &&
	C=$(json_field .session <body) &&
	test "$(aptix rev-parse refs/conversations/$conv)" = "$C"
'

test_expect_success 'POST /api/ai/agent/execute: Server-Sent Events' '
	curl -sS -N -o events -D headers -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" \
		-H "Content-Type: application/json" \
		--data-binary "{\"conversation\":\"$conv\",\"instruction\":\"stream it\"}" \
		"$URL/api/ai/agent/execute" &&
	grep -i "^content-type: text/event-stream" headers &&
	python3 -c "
import json, sys
events, name = [], None
for line in open(sys.argv[1]):
    line = line.rstrip(\"\n\")
    if line.startswith(\"event: \"):
        name = line[7:]
    elif line.startswith(\"data: \"):
        events.append((name, json.loads(line[6:])))
names = [e[0] for e in events]
assert names[0] == \"started\" and names[-1] == \"completed\", names
deltas = [d[\"text\"] for n, d in events if n == \"delta\"]
final = events[-1][1]
assert len(deltas) > 1, deltas
assert \"\".join(deltas) == final[\"text\"], (deltas, final)
assert final[\"status\"] == \"completed\", final
" events
'

test_expect_success 'GET /api/events: a turn of another process, polled on LMDB' '
	{ curl -sS -N -o refevents -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" "$URL/api/events" & } &&
	epid=$! &&
	test_when_finished "kill $epid 2>/dev/null; :" &&
	i=0 &&
	while ! grep -q "^event: hello" refevents 2>/dev/null
	do
		test $i -lt 200 && sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	grep "^data: {\"live\":false}" refevents &&
	aptix continue -q -m "from the command line" &&
	S=$(aptix rev-parse HEAD) &&
	i=0 &&
	while ! grep -q "\"value\":\"$S\"" refevents
	do
		test $i -lt 200 && sleep 0.1 && i=$((i + 1)) || {
			cat refevents
			return 1
		}
	done &&
	grep "^event: ref" refevents
'

test_expect_success 'execute: fork from a session, rerun a session' '
	test "$(post /api/ai/agent/execute \
		"{\"session\":\"$A\",\"instruction\":\"fork it\"}")" = 200 &&
	test "$(json_field .parent <body)" = "$A" &&
	nconv=$(json_field .conversation <body) &&
	test "$nconv" != "$conv" && test "$nconv" != "$fconv" &&
	S=$(json_field .session <body) &&
	test "$(post /api/ai/agent/execute \
		"{\"kind\":\"rerun\",\"session\":\"$S\"}")" = 200 &&
	test "$(json_field .parent <body)" = "$A" &&
	json_field .text <body | grep "to: fork it" &&
	test "$(post /api/ai/agent/execute "{\"kind\":\"fork\"}")" = 400 &&
	test "$(post /api/ai/agent/execute "{\"kind\":\"jump\",\"instruction\":\"x\"}")" = 400 &&
	test "$(post /api/ai/agent/execute "{\"instruction\":\"   \"}")" = 400
'

test_expect_success 'malformed JSON and wrong types get 400' '
	test "$(post /api/ai/agent/execute "{\"instruction\":")" = 400 &&
	json_field .error.message <body | grep "^malformed JSON" &&
	test "$(post /api/ai/agent/execute "[1,2]")" = 400 &&
	test "$(post /api/ai/agent/execute "{\"instruction\":5}")" = 400 &&
	test "$(post /api/ai/agent/execute "{\"instruction\":\"x\",\"active_files\":[\"../etc/passwd\"]}")" = 400 &&
	test "$(post /api/ai/agent/execute "{\"instruction\":\"x\",\"active_files\":[\"/etc/passwd\"]}")" = 400
'

test_expect_success 'PATCH /api/conversations/<id>: rename, archive' '
	test "$(api PATCH "/api/conversations/$fconv" \
		--data-binary "{\"title\":\"renamed fork\"}")" = 200 &&
	test "$(json_field .title <body)" = "renamed fork" &&
	test "$(api PATCH "/api/conversations/$fconv" \
		--data-binary "{\"archived\":true}")" = 200 &&
	test "$(json_field .archived <body)" = true &&
	test "$(api GET "/api/conversations?q=renamed")" = 200 &&
	test "$(json_field ".items[0]" <body)" = null &&
	test "$(api GET "/api/conversations?q=renamed&archived=1")" = 200 &&
	test "$(json_field ".items[0].id" <body)" = "$fconv" &&
	test "$(api PATCH "/api/conversations/$fconv" \
		--data-binary "{\"archived\":false}")" = 200 &&
	test "$(api PATCH "/api/conversations/$fconv" --data-binary "{}")" = 400 &&
	test "$(api PATCH "/api/conversations/nosuch" \
		--data-binary "{\"title\":\"x\"}")" = 404
'

test_expect_success 'seed 003: workspace sessions, open, message, close' '
	test "$(post /api/sessions "{\"workspacePath\":\"$PWD\"}")" = 201 &&
	sid=$(json_field .sessionId <body) &&
	test "$(json_field .status <body)" = active &&
	curl -sS -N -o events -H "Authorization: Bearer $TOKEN" \
		-H "Accept: text/event-stream" \
		--data-binary "{\"message\":\"a seed 003 message\"}" \
		"$URL/api/sessions/$sid/messages" &&
	grep "^event: delta" events &&
	grep "^event: completed" events &&
	ws=$(python3 -c "import urllib.parse, sys; print(urllib.parse.quote(sys.argv[1], safe=\"\"))" "$PWD") &&
	test "$(api GET "/api/workspaces/$ws/sessions")" = 200 &&
	python3 -c "
import json, sys
s = [x for x in json.load(open(\"body\")) if x[\"sessionId\"] == sys.argv[1]]
assert s and s[0][\"status\"] == \"active\", s
assert s[0][\"title\"] == \"a seed 003 message\", s
" "$sid" &&
	test "$(post /api/sessions "{\"sessionId\":\"$conv\"}")" = 201 &&
	test "$(json_field .resumed <body)" = true &&
	test "$(api DELETE "/api/sessions/$sid")" = 200 &&
	test "$(json_field .status <body)" = closed &&
	test "$(api DELETE "/api/sessions/$sid")" = 404 &&
	test "$(api GET "/api/conversations/$sid")" = 200 &&
	test "$(post /api/sessions "{\"sessionId\":\"nosuch\"}")" = 404
'

test_expect_success 'the Host header must name the server (421)' '
	test "$(api GET /api/conversations -H "Host: evil.example")" = 421 &&
	test "$(api GET /api/conversations -H "Host: evil.example:${URL##*:}")" = 421 &&
	test "$(api GET / -H "Host: 127.0.0.1.evil.example")" = 421 &&
	test "$(api GET /api/conversations -H "Host: localhost:${URL##*:}")" = 200 &&
	test "$(api GET /api/conversations -H "Host: $HOSTPORT")" = 200
'

# raw <request>: send a request as it is (\r\n written as \n here) and
# print the status code of the answer
raw () {
	python3 -c "
import socket, sys
host, port = sys.argv[1].split(\":\")
req = sys.argv[2].replace(\"\\n\", \"\\r\\n\").encode()
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(req)
data = b\"\"
while b\"\\r\\n\" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.split(b\" \")[1].decode() if data else \"closed\")
" "$HOSTPORT" "$1"
}

test_expect_success 'a head a proxy could read otherwise gets 400' '
	auth="Authorization: Bearer $TOKEN" &&
	test "$(raw "GET /api/conversations HTTP/1.1
Host: $HOSTPORT
$auth

")" = 200 &&
	test "$(raw "GET /api/conversations HTTP/1.1
Host: $HOSTPORT
Host: evil.example
$auth

")" = 400 &&
	test "$(raw "GET /api/conversations HTTP/1.1
Host: evil.example
Host: $HOSTPORT
$auth

")" = 400 &&
	test "$(raw "POST /api/sessions HTTP/1.1
Host: $HOSTPORT
$auth
Content-Length: 4
Transfer-Encoding: chunked

2
{}
0

")" = 400 &&
	test "$(raw "POST /api/sessions HTTP/1.1
Host: $HOSTPORT
$auth
Content-Length: 2
Content-Length: 2

{}")" = 400 &&
	test "$(raw "POST /api/sessions HTTP/1.1
Host: $HOSTPORT
$auth
Transfer-Encoding: gzip, chunked

2
{}
0

")" = 400 &&
	test "$(raw "POST /api/sessions HTTP/1.1
Host: $HOSTPORT
$auth
Transfer-Encoding: chunked

2
{}
0

")" = 201
'

test_expect_success 'a foreign Origin cannot change anything (403); no CORS' '
	test "$(post /api/ai/agent/execute "{\"instruction\":\"x\"}" \
		-H "Origin: http://evil.example")" = 403 &&
	test "$(api PATCH "/api/conversations/$conv" -H "Origin: null" \
		--data-binary "{\"title\":\"x\"}")" = 403 &&
	test "$(api DELETE "/api/sessions/x" \
		-H "Origin: http://127.0.0.1:1")" = 403 &&
	test "$(api PATCH "/api/conversations/$conv" -H "Origin: $URL" \
		--data-binary "{\"title\":\"same origin\"}")" = 200 &&
	curl -sS -D headers -o /dev/null -X OPTIONS \
		-H "Origin: http://evil.example" \
		-H "Access-Control-Request-Method: POST" \
		"$URL/api/ai/agent/execute" &&
	! grep -i "^access-control" headers &&
	curl -sS -D headers -o /dev/null -H "Authorization: Bearer $TOKEN" \
		-H "Origin: http://evil.example" "$URL/api/conversations" &&
	! grep -i "^access-control" headers
'

test_expect_success 'oversized bodies and headers get 413' '
	python3 -c "print(\"{\\\"instruction\\\":\\\"\" + \"x\" * 70000 + \"\\\"}\")" >big.json &&
	test "$(api POST /api/ai/agent/execute --data-binary @big.json)" = 413 &&
	test "$(api POST /api/ai/agent/execute --data-binary @big.json \
		-H "Transfer-Encoding: chunked")" = 413 &&
	hdr=$(python3 -c "print(\"X-Big: \" + \"y\" * 40000)") &&
	code=$(api GET /api/conversations -H "$hdr") &&
	case "$code" in 413|431) : ;; *) false ;; esac
'

test_expect_success 'a busy conversation gets 409 naming the running turn' '
	standin_fault "{\"kind\":\"hang\",\"max\":60}" &&
	n=$(request_count) &&
	stream_bg running.events \
		"{\"conversation\":\"$conv\",\"instruction\":\"hold on\"}" &&
	test_when_finished "kill_children $cpid" &&
	wait_for_requests $((n + 1)) &&
	test "$(post /api/ai/agent/execute \
		"{\"conversation\":\"$conv\",\"instruction\":\"me too\"}")" = 409 &&
	test "$(json_field .error.conversation <body)" = "$conv" &&
	json_field .error.message <body | grep "is busy: turn [0-9a-f]\{12\} is running" &&
	test "$(api GET "/api/conversations/$conv")" = 200 &&
	test "$(post "/api/conversations/$conv/interrupt" "{}")" = 200 &&
	test "$(json_field .interrupted <body)" = 1 &&
	wait $cpid &&
	grep "^event: completed" running.events &&
	grep "\"error_code\":\"cancelled\"" running.events &&
	test "$(post "/api/conversations/$conv/interrupt" "{}")" = 404
'

test_expect_success 'a slow client is timed out (slowloris)' '
	python3 -c "
import socket, sys, time
host, port = sys.argv[1].split(\":\")
s = socket.create_connection((host, int(port)))
s.sendall(b\"GET /api/conversations HTTP/1.1\r\nHost: \" + sys.argv[1].encode() + b\"\r\n\")
s.settimeout(20)
start = time.time()
try:
    data = s.recv(1024)
except socket.timeout:
    sys.exit(\"the connection is still open after 20 s\")
# closed (or answered with an error and closed) by the server
assert data == b\"\" or data.startswith(b\"HTTP/1.1 4\"), data
" "$HOSTPORT"
'

test_expect_success 'a new token at each start; at most N connections' '
	old=$TOKEN &&
	test_stop_server serve &&
	start_serve --max-body 65536 --max-connections 3 &&
	test "$TOKEN" != "$old" &&
	test "$(stat -c %a .aptix/serve.token)" = 600 &&
	python3 -c "
import socket, sys
host, port = sys.argv[1].split(\":\")
req = b\"GET /api/conversations HTTP/1.1\\r\\nHost: \" + sys.argv[1].encode()
# three connections that hold the server (their requests unfinished)
held = [socket.create_connection((host, int(port))) for _ in range(3)]
for s in held:
    s.sendall(req + b\"\\r\\n\")
# a fourth waits: not taken while they are open
s = socket.create_connection((host, int(port)))
s.sendall(req + b\"\\r\\nAuthorization: Bearer \" + sys.argv[2].encode() +
          b\"\\r\\n\\r\\n\")
s.settimeout(2)
try:
    sys.exit(\"answered over the limit: %r\" % s.recv(1024))
except socket.timeout:
    pass
# and is answered once one of them goes
held[0].close()
s.settimeout(30)
data = s.recv(1024)
assert data.startswith(b\"HTTP/1.1 200\"), data
" "$HOSTPORT" "$TOKEN" &&
	# the held ones closed, the server answers again (once it has seen)
	for i in $(test_seq 50)
	do
		code=$(api GET /api/conversations) &&
		test "$code" = 200 && break
		sleep 0.1
	done &&
	test "$code" = 200 &&
	test "$(curl -sS -o /dev/null -w "%{http_code}" \
		-H "Authorization: Bearer $old" "$URL/api/conversations")" = 401
'

test_expect_success 'the API key is in no response' '
	test "$(api GET "/api/turns/$B/full")" = 200 &&
	! grep -r "$OPENAI_API_KEY" body events running.events page.html app.js &&
	! grep "$OPENAI_API_KEY" "$TRASH_DIRECTORY/serve.log"
'

test_expect_success 'SIGTERM mid-turn: cancelled after the grace, kept as failed' '
	test_stop_server serve &&
	start_serve --grace 1 &&
	pid=$(cat "$TRASH_DIRECTORY/serve.pid") &&
	standin_reset &&
	standin_fault "{\"kind\":\"hang\",\"max\":60}" &&
	n=$(request_count) &&
	stream_bg term.events \
		"{\"conversation\":\"$conv\",\"instruction\":\"stopped by SIGTERM\"}" &&
	test_when_finished "kill_children $cpid" &&
	wait_for_requests $((n + 1)) &&
	kill -TERM $pid &&
	wait $cpid &&
	wait_for_exit $pid 20 &&
	grep "^event: completed" term.events &&
	grep "\"status\":\"failed\"" term.events &&
	test_path_is_missing .aptix/serve.token &&
	S=$(sed -n "s/.*\"session\":\"\([0-9a-f]*\)\".*/\1/p" term.events) &&
	aptix show --json $S >show &&
	test "$(json_field .instruction <show)" = "stopped by SIGTERM" &&
	test "$(json_field .failed <show)" = true &&
	aptix fsck >/dev/null &&
	rm -f "$TRASH_DIRECTORY/serve.pid"
'

test_expect_success 'a unix socket; another address only with a warning' '
	start_unix_serve "$TRASH_DIRECTORY/s.sock" &&
	unix_list "$TRASH_DIRECTORY/s.sock" &&
	test "$(json_field ".items[0].id" <body)" != null &&
	test_stop_server userve &&
	test_must_fail aptix serve --unix-socket s.sock --port 1 2>err &&
	grep "cannot be used with" err &&
	test_must_fail aptix serve --bind 999.1.1.1 2>err &&
	grep "warning: listening on 999.1.1.1" err &&
	grep "not an IPv4 address" err
'

# slow_clients.py <host:port> <token> <from> <good-from>: clients from
# the addresses <from> (comma-separated, one client each) send a request
# head a byte every half second and come back when cut, for HOLD
# seconds; a second in, a client from <good-from> asks for the
# conversations. Prints "served <code> while-held|after", "most-held <n>"
# (the most slow connections held at once) and "longest <seconds>" (the
# longest held).
cat >slow_clients.py <<-\EOF
import socket, sys, threading, time
host, port = sys.argv[1].split(":")
port, token = int(port), sys.argv[2]
sources, good_from = sys.argv[3].split(","), sys.argv[4]
HOLD = 7.0
start = time.time()
end = start + HOLD
held = []               # (opened, closed) of each slow connection
lock = threading.Lock()

def slow(src):
    while time.time() < end:
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.settimeout(1)
            s.connect((host, port))
            s.settimeout(0.1)
        except OSError:
            time.sleep(0.1)
            continue
        opened = time.time()
        try:
            s.sendall(b"GET /api/conversations HTTP/1.1\r\nHost: " +
                      sys.argv[1].encode() + b"\r\nX-Slow: ")
            closed = False
            while time.time() < end and not closed:
                s.sendall(b"a")
                for _ in range(5):      # a byte every half second
                    try:
                        if s.recv(1024) == b"":
                            closed = True
                            break
                    except socket.timeout:
                        pass
        except OSError:
            pass
        with lock:
            held.append((opened, time.time()))
        s.close()
        if time.time() - opened < 0.5:
            time.sleep(0.1)

threads = [threading.Thread(target=slow, args=(a,)) for a in sources]
for t in threads:
    t.start()
time.sleep(1)
g = socket.socket()
g.bind((good_from, 0))
g.settimeout(HOLD + 5)
g.connect((host, port))
g.sendall(b"GET /api/conversations HTTP/1.1\r\nHost: " +
          sys.argv[1].encode() + b"\r\nAuthorization: Bearer " +
          token.encode() + b"\r\nConnection: close\r\n\r\n")
try:
    data = g.recv(1024)
except socket.timeout:
    data = b""
answered = time.time()
code = data.split(b" ")[1].decode() if data else "none"
print("served", code, "while-held" if answered < end else "after")
for t in threads:
    t.join()
# held: open for more than 0.7 s (a refused one is closed at once), and
# counted as open until 0.2 s before its end was seen (the client looks
# every 0.1 s)
long = [(o, c - 0.2) for o, c in held if c - o > 0.7]
most = max([sum(1 for o, c in long if o <= t < c) for t, _ in long] or [0])
print("most-held", most)
print("longest %.1f" % max([c - o for o, c in held] or [0]))
EOF

test_expect_success 'slow clients: at most --max-per-address from one address' '
	start_serve --request-timeout 2 --max-connections 8 \
		--max-per-address 4 &&
	python3 slow_clients.py "$HOSTPORT" "$TOKEN" \
		127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1,127.0.0.1 \
		127.0.0.2 >out &&
	cat out &&
	grep "^served 200 while-held" out &&
	most=$(sed -n "s/^most-held //p" out) &&
	test "$most" -ge 3 && test "$most" -le 4
'

test_expect_success 'slow clients: each request has a total deadline' '
	# one slow client from each of 8 addresses: every connection the
	# server takes, each trickling, cut after 2 seconds and back again
	# (one may wait its turn in the backlog first: held less than 5 s,
	# where without the deadline each is held the whole 7)
	python3 slow_clients.py "$HOSTPORT" "$TOKEN" \
		127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9 \
		127.0.0.1 >out &&
	cat out &&
	grep "^served 200 while-held" out &&
	test "$(sed -n "s/^most-held //p" out)" = 8 &&
	longest=$(sed -n "s/^longest //p" out) &&
	test "${longest%.*}" -lt 5
'


test_expect_success 'two servers on one store keep their own tokens' '
	first=$TOKEN &&
	test_start_server serve2 aptix serve --port 0 &&
	test_wait_for_file "$TRASH_DIRECTORY/serve2.log" 10 serve2 &&
	for i in $(test_seq 100)
	do
		grep -q "^token-file" "$TRASH_DIRECTORY/serve2.log" && break
		sleep 0.1
	done &&
	second=$(sed -n "s/^token //p" "$TRASH_DIRECTORY/serve2.log") &&
	file2=$(sed -n "s/^token-file //p" "$TRASH_DIRECTORY/serve2.log") &&
	url2=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve2.log") &&
	grep "warning: another server holds .*serve.token" \
		"$TRASH_DIRECTORY/serve2.log" &&
	test "$file2" = "$PWD/.aptix/serve.$(cat "$TRASH_DIRECTORY/serve2.pid").token" &&
	test "$(cat "$file2")" = "$second" &&
	test "$(stat -c %a "$file2")" = 600 &&
	test "$(cat .aptix/serve.token)" = "$first" &&
	test "$(curl -sS -o /dev/null -w "%{http_code}" \
		-H "Authorization: Bearer $second" "${url2}api/conversations")" = 200 &&
	test_stop_server serve2 &&
	test_path_is_missing "$file2" &&
	test "$(cat .aptix/serve.token)" = "$first" &&
	test "$(api GET /api/conversations)" = 200
'

test_expect_success 'a token file left by a killed server is replaced' '
	pid=$(cat "$TRASH_DIRECTORY/serve.pid") &&
	kill -9 $pid &&
	wait_for_exit $pid 10 &&
	rm -f "$TRASH_DIRECTORY/serve.pid" &&
	test_path_is_file .aptix/serve.token &&
	old=$(cat .aptix/serve.token) &&
	test_start_server serve aptix serve --port 0 &&
	test_when_finished "test_stop_server serve 2>/dev/null; :" &&
	# the server says where its token went once it is written there
	for i in $(test_seq 300)
	do
		grep -q "^token-file" "$TRASH_DIRECTORY/serve.log" && break
		sleep 0.1
	done &&
	test "$(sed -n "s/^token-file //p" "$TRASH_DIRECTORY/serve.log")" = \
		"$PWD/.aptix/serve.token" &&
	test "$(cat .aptix/serve.token)" != "$old" &&
	! grep "another server" "$TRASH_DIRECTORY/serve.log" &&
	test "$(cat .aptix/serve.token)" = \
		"$(sed -n "s/^token //p" "$TRASH_DIRECTORY/serve.log")" &&
	test_stop_server serve &&
	test_path_is_missing .aptix/serve.token
'

test_expect_success '--unix-socket replaces a stale socket only' '
	echo precious >not-a-socket &&
	test_must_fail timeout 10 aptix serve --unix-socket not-a-socket 2>err &&
	grep "not-a-socket.* is not a socket" err &&
	echo precious >expect &&
	test_cmp expect not-a-socket &&
	mkdir a-dir &&
	test_must_fail timeout 10 aptix serve --unix-socket a-dir 2>err &&
	test -d a-dir &&
	ln -s not-a-socket a-link &&
	test_must_fail timeout 10 aptix serve --unix-socket a-link 2>err &&
	test -h a-link && test_cmp expect not-a-socket &&
	# a socket whose server is gone is replaced
	python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" \
		"$TRASH_DIRECTORY/stale.sock" &&
	test -S stale.sock &&
	start_unix_serve "$TRASH_DIRECTORY/stale.sock" &&
	unix_list "$TRASH_DIRECTORY/stale.sock" &&
	# one a server listens on is not
	test_must_fail timeout 10 aptix serve --unix-socket "$TRASH_DIRECTORY/stale.sock" 2>err &&
	grep "another server listens on" err &&
	unix_list "$TRASH_DIRECTORY/stale.sock" &&
	test_stop_server userve &&
	test_path_is_missing stale.sock
'

test_expect_success '--bind 0.0.0.0 prints an address to connect to' '
	rm -f .aptix/serve.token &&
	test_start_server serve aptix serve --port 0 --bind 0.0.0.0 &&
	test_wait_for_file .aptix/serve.token 10 serve &&
	grep "warning: listening on 0.0.0.0 (every address of this host)" \
		"$TRASH_DIRECTORY/serve.log" &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/serve.log") &&
	case "$URL" in http://127.0.0.1:*/) : ;; *) false ;; esac &&
	! grep "0\.0\.0\.0:" "$TRASH_DIRECTORY/serve.log" &&
	TOKEN=$(cat .aptix/serve.token) &&
	URL=${URL%/} &&
	test "$(api GET /api/conversations)" = 200 &&
	# every other address of the host is printed, and answers
	for u in $(sed -n "s/^also //p" "$TRASH_DIRECTORY/serve.log")
	do
		test "$(curl -sS -o /dev/null -w "%{http_code}" --noproxy "*" \
			-H "Authorization: Bearer $TOKEN" "${u}api/conversations")" = 200 ||
		return 1
	done &&
	test_stop_server serve
'

test_expect_success GIT 'in a git work tree the token file is where the README says' '
	git init -q gitwt &&
	(cd gitwt && aptix init -q) &&
	test_path_is_missing gitwt/.aptix &&
	test_start_server gserve aptix -C gitwt serve --port 0 &&
	test_wait_for_file gitwt/.git/aptix/serve.token 10 gserve &&
	(cd gitwt && cat "$(aptix rev-parse --aptix-dir)/serve.token") >token &&
	sed -n "s/^token //p" "$TRASH_DIRECTORY/gserve.log" >expect &&
	test_cmp expect token &&
	grep "^token-file $PWD/gitwt/.git/aptix/serve.token\$" \
		"$TRASH_DIRECTORY/gserve.log" &&
	test_stop_server gserve
'

test_expect_success 'damaged meta pages under a running server: 5xx, and it goes on' '
	mkdir damaged &&
	cp -R .aptix damaged/.aptix &&
	rm -f damaged/.aptix/serve.*token damaged/.aptix/lock.mdb &&
	test_start_server dserve aptix -C damaged serve --port 0 &&
	test_wait_for_file damaged/.aptix/serve.token 10 dserve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/dserve.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat damaged/.aptix/serve.token) &&
	test "$(api GET "/api/conversations?all=1")" = 200 &&
	test "$(json_field ".items[0].id" <body)" != null &&
	cp damaged/.aptix/data.mdb saved.mdb &&
	for how in zero garbage
	do
		if test $how = zero
		then
			dd if=/dev/zero of=damaged/.aptix/data.mdb bs=4096 \
				count=2 conv=notrunc 2>/dev/null
		else
			python3 -c "
import sys
f = open(sys.argv[1], \"r+b\")
for off in (16, 4096 + 16):
    f.seek(off)
    f.write(bytes((i * 37 + 11) % 256 for i in range(120)))
" damaged/.aptix/data.mdb
		fi &&
		for path in "/api/conversations?all=1" "/api/graph?all=1" \
			"/api/conversations/$conv" "/api/turns/$B/full"
		do
			code=$(api GET "$path") &&
			echo "$how $path: $code $(cat body)" &&
			case "$code" in 5??) : ;; *) return 1 ;; esac &&
			json_field .error.message <body | grep "corrupt" ||
			return 1
		done &&
		test "$(curl -sS -o /dev/null -w "%{http_code}" "$URL/")" = 200 &&
		cp saved.mdb damaged/.aptix/data.mdb &&
		# the file mended, the same server reads it again
		test "$(api GET "/api/conversations?all=1")" = 200 &&
		test "$(json_field ".items[0].id" <body)" != null || return 1
	done &&
	test_stop_server dserve
'

test_expect_success 'POST execute with tools, then with tool_outputs' '
	rm -f .aptix/serve.token &&
	test_start_server tserve aptix serve --port 0 &&
	test_wait_for_file .aptix/serve.token 10 tserve &&
	URL=$(sed -n "s/^url //p" "$TRASH_DIRECTORY/tserve.log") &&
	URL=${URL%/} &&
	TOKEN=$(cat .aptix/serve.token) &&
	standin_fault "{\"kind\":\"tool_calls\",\"calls\":[{\"name\":\"grep\",\"arguments\":\"{\\\"q\\\":\\\"x\\\"}\",\"call_id\":\"call_g\"}]}" &&
	test "$(post /api/ai/agent/execute "{\"instruction\":\"find x\",\"files\":false,\"rag\":false,\"tools\":[{\"type\":\"function\",\"name\":\"grep\",\"parameters\":{\"type\":\"object\"}}]}")" = 200 &&
	test "$(json_field .status <body)" = awaiting_tool_results &&
	test "$(json_field .kind <body)" = tool_calls &&
	test "$(json_field .tool_calls[0].call_id <body)" = call_g &&
	test "$(json_field .tool_calls[0].arguments <body)" = "{\"q\":\"x\"}" &&
	tconv=$(json_field .conversation <body) &&
	tsess=$(json_field .session <body) &&
	test "$(post /api/ai/agent/execute "{\"conversation\":\"$tconv\",\"tools\":{}}")" = 400 &&
	json_field .error.message <body | grep "tools. is an array" &&
	test "$(post /api/ai/agent/execute "{\"conversation\":\"$tconv\",\"tool_outputs\":{\"call_nope\":\"y\"}}")" = 400 &&
	json_field .error.message <body | grep "call_nope" &&
	test "$(aptix rev-parse "$tconv")" = "$tsess" &&
	test "$(post /api/ai/agent/execute "{\"conversation\":\"$tconv\",\"tool_outputs\":[{\"call_id\":\"call_g\",\"output\":\"x.c:1\",\"exit_code\":0}]}")" = 200 &&
	test "$(json_field .status <body)" = completed &&
	test "$(json_field .parent <body)" = "$tsess" &&
	aptix show --json "$tconv" >show.json &&
	test "$(json_field .tool_results[0].call_id <show.json)" = call_g &&
	test_stop_server tserve
'

test_done
