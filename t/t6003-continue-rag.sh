#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='aptix continue: retrieved chunks in every turn

End to end against the stand-in (OpenAI responses and embeddings, and a
Qdrant imitation): a small generated repository is indexed; two turns
whose questions retrieve overlapping chunks; the second request carries
only the snippets the chain has not had (checked against the request
bodies the stand-in received and the sources recorded on each turn),
with the local backend and with Qdrant. --no-rag; a chain restart sends
every chunk again; Qdrant down or failing gives a warning, or with
rag.required a clean failure before the model is called; a wrong vector
size is a clear error.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq JQ
then
	skip_all='python3 (for the stand-in) and jq are needed'
	test_done
fi

STATE=$TRASH_DIRECTORY/standin.state

# qstart [<args>]: (re)start the stand-in, keeping its state (stored
# responses, collections) in $STATE, and point QDRANT_URL at it
qstart () {
	start_standin --state "$STATE" "$@" &&
	QDRANT_URL=$STANDIN_URL &&
	export QDRANT_URL
}

# msg <n>: the text of the last input message of the n-th /v1/responses
msg () {
	request_log "$1" | jq -r '.body.input[-1].content |
		if type == "string" then . else map(.text // "") | join("") end'
}

# sources_of <rev>: "path:start-end sent|already" for each chunk ref,
# sorted (the order, best first, is checked against rag-query)
sources_of () {
	aptix -C ws show --json "$1" | jq -r '.sources[] |
		"\(.path):\(.start_line)-\(.end_line) \(if .sent then "sent" else "already" end)"' |
	sort
}

# check_turn <n> <rev> [<earlier rev>...]: the n-th request is the one of
# the turn of <rev>; its sources agree with what the request carried: a
# chunk is in the body (header and text) exactly when it is recorded as
# sent, and it is sent exactly when no earlier turn of the chain (the
# revs given) sent the same chunk
check_turn () {
	local n=$1 rev
	shift
	msg "$n" >"$TRASH_DIRECTORY/.msg" &&
	for rev in "$@"
	do
		aptix -C ws show --json "$rev" || return 1
	done >"$TRASH_DIRECTORY/.shows" &&
	python3 - "$TRASH_DIRECTORY/.msg" "$TRASH_DIRECTORY/.shows" <<-\EOF
	import hashlib, json, subprocess, sys
	msg = open(sys.argv[1]).read()
	dec = json.JSONDecoder()
	raw, shows = open(sys.argv[2]).read(), []
	i = 0
	while i < len(raw):
	    if raw[i].isspace():
	        i += 1
	        continue
	    o, i = dec.raw_decode(raw, i)
	    shows.append(o)
	this, earlier = shows[0], shows[1:]
	had = set()
	for e in earlier:
	    had |= {(c["chunk_id"], c["content_hash"]) for c in e["sources"] if c["sent"]}
	sent = 0
	assert this["sources"], "no sources"
	for c in this["sources"]:
	    text = subprocess.run(["aptix", "-C", "ws", "cat-object", "blob",
	                           c["snippet"]], capture_output=True,
	                          check=True).stdout.decode()
	    assert hashlib.sha256(text.encode()).hexdigest() == c["content_hash"], c
	    head = "Retrieved from %s lines %d-%d (score " % (
	        c["path"], c["start_line"], c["end_line"])
	    want = (c["chunk_id"], c["content_hash"]) not in had
	    assert c["sent"] == want, (c, had)
	    assert (head in msg) == c["sent"], (c, msg)
	    assert (text in msg) == c["sent"], (c, text, msg)
	    sent += c["sent"]
	assert msg.count("Retrieved from ") == sent, msg
	EOF
}

# same_sources <continue --json output> <rev>: the sources printed by
# continue --json are those recorded on the turn
same_sources () {
	aptix -C ws show --json "$2" >"$TRASH_DIRECTORY/.show" &&
	python3 - "$1" "$TRASH_DIRECTORY/.show" <<-\EOF
	import json, sys
	a = json.load(open(sys.argv[1]))["sources"]
	b = json.load(open(sys.argv[2]))["sources"]
	keys = ["chunk_id", "path", "start_line", "end_line", "content_hash", "sent"]
	assert [[x[k] for k in keys] for x in a] == [[x[k] for k in keys] for x in b], (a, b)
	assert all(abs(x["score"] - y["score"]) < 1e-5 for x, y in zip(a, b)), (a, b)
	EOF
}

# log_mark: remember how many requests the stand-in has logged;
# paths_since: "METHOD /path status" of each request logged after that
log_mark () {
	MARK=$(find "$STANDIN_LOG_DIR" -name "*.json" | wc -l | tr -d " ")
}

paths_since () {
	python3 - "$STANDIN_LOG_DIR" "$MARK" <<-\EOF
	import glob, json, os, sys
	files = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))[int(sys.argv[2]):]
	for f in files:
	    e = json.load(open(f))
	    print(e["method"], e["path"], (e.get("response") or {}).get("status"))
	EOF
}

# free_port: a local port nothing listens on
free_port () {
	python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
'
}

test_expect_success 'setup: the stand-in and a small generated repository' '
	qstart --embed-dim 256 &&
	aptix init -q ws &&
	mkdir -p ws/src ws/docs ws/lib &&
	cat >ws/src/config.c <<-\EOF &&
	/* parseConfigFile: read the configuration file at path */
	int parseConfigFile(const char *path)
	{
		return read_config_entries(path);
	}

	/* config_reload: read the configuration again on SIGHUP */
	int config_reload(void)
	{
		return parseConfigFile(config_path);
	}
	EOF
	cat >ws/src/server.c <<-\EOF &&
	/* http_server_listen: the HTTP server accepts connections on a port */
	int http_server_listen(int port)
	{
		return accept_connections(port);
	}

	/* server_answer: answer one request of a client */
	int server_answer(int fd)
	{
		return write_response(fd);
	}
	EOF
	cat >ws/src/tokens.py <<-\EOF &&
	class TokenStream:
	    """split the input text into tokens"""
	    def next_token(self):
	        return self.lexer.scan()
	EOF
	printf "# Guide\n\nEdit the configuration file, then start the server.\n" >ws/docs/guide.md &&
	python3 - <<-\EOF &&
	names = ["matrix", "vector", "bitmap", "queue", "stack", "graph"]
	for i, n in enumerate(names):
	    with open("ws/lib/%s.c" % n, "w") as f:
	        for j in range(3):
	            f.write("/* %s_op%d: operation %d on a %s */\n" % (n, j, j, n))
	            f.write("int %s_op%d(struct %s *x)\n{\n" % (n, j, n))
	            f.write("\treturn %s_apply(x, %d);\n}\n\n" % (n, i * 10 + j))
	EOF
	aptix -C ws config rag.chunk-lines 6 &&
	aptix -C ws config rag.chunk-overlap 0 &&
	aptix -C ws config rag.top-k 3 &&
	aptix -C ws index >out 2>err &&
	grep "^files:  10 scanned, 10 changed" out &&
	grep "(local, " out
'

test_expect_success 'local: turn 1 sends the chunks retrieved for its question' '
	aptix -C ws rag-query --json "parse the configuration file" >q1.json &&
	aptix -C ws continue --json -m "parse the configuration file" >out1.json 2>err1 &&
	test "$(request_count)" = 1 &&
	l1=$(aptix -C ws rev-parse HEAD) &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 sent
	src/config.c:1-6 sent
	src/config.c:7-11 sent
	EOF
	test_cmp expect actual &&
	check_turn 1 HEAD &&
	msg 1 >m1 &&
	grep -F "int parseConfigFile(const char *path)" m1 &&
	tail -n 2 m1 >tail &&
	test_write_lines "Instruction:" "parse the configuration file" >expect &&
	test_cmp expect tail &&
	# retrieval is what rag-query finds for the instruction
	python3 - q1.json out1.json <<-\EOF &&
	import json, sys
	q = [c["chunk_id"] for c in json.load(open(sys.argv[1]))["chunks"]]
	t = [c["chunk_id"] for c in json.load(open(sys.argv[2]))["sources"]]
	assert q == t, (q, t)
	EOF
	same_sources out1.json HEAD
'

test_expect_success 'local: turn 2 sends only the snippets not already sent' '
	aptix -C ws continue --json -m "configuration of the http server port" >out2.json 2>err2 &&
	test "$(request_count)" = 2 &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 already
	src/server.c:1-6 sent
	src/server.c:7-11 sent
	EOF
	test_cmp expect actual &&
	check_turn 2 HEAD HEAD~1 &&
	msg 2 >m2 &&
	grep "^Retrieved from src/server.c lines 1-6 (score " m2 &&
	! grep "docs/guide.md" m2 &&
	! grep -F "Edit the configuration file, then start the server." m2 &&
	same_sources out2.json HEAD &&
	python3 -c "
import json
s = json.load(open(\"out2.json\"))[\"sources\"]
assert [c[\"sent\"] for c in s if c[\"path\"] == \"docs/guide.md\"] == [False], s
" &&
	aptix -C ws show >show &&
	sed -n "/^Sources:/,/^\$/p" show >show-sources &&
	grep "^    docs/guide.md:1-3  score [0-9.]*  already sent$" show-sources &&
	grep "^    src/server.c:1-6  score [0-9.]*  sent$" show-sources
'

test_expect_success 'local: a turn whose chunks were all sent sends none' '
	aptix -C ws continue --json -m "the configuration file and the http server" >out3.json 2>err3 &&
	sources_of HEAD >actual &&
	! grep " sent$" actual &&
	test_line_count = 3 actual &&
	msg 3 >m3 &&
	echo "the configuration file and the http server" >expect &&
	test_cmp expect m3 &&
	check_turn 3 HEAD HEAD~1 HEAD~2
'

test_expect_success 'local: --no-rag retrieves nothing' '
	aptix -C ws continue --json --no-rag -m "http server port configuration" >out4.json 2>err4 &&
	test "$(json_field .sources <out4.json | tr -d " \n")" = "[]" &&
	sources_of HEAD >actual &&
	test_must_be_empty actual &&
	msg 4 >m4 &&
	! grep "Retrieved from" m4 &&
	echo "http server port configuration" >expect &&
	test_cmp expect m4
'

test_expect_success 'local: after a chain restart every chunk is sent again' '
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix -C ws continue -m "parse the configuration file" >out5 2>err5 &&
	test "$(request_count)" = 6 &&
	grep "started a new chain" err5 &&
	request_body 6 >body &&
	! grep previous_response_id body &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 sent
	src/config.c:1-6 sent
	src/config.c:7-11 sent
	EOF
	test_cmp expect actual &&
	check_turn 6 HEAD
'

test_expect_success 'local: a fork inherits what its ancestry sent' '
	aptix -C ws fork $l1 -m "configuration of the http server port" >out 2>err &&
	n=$(request_count) &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 already
	src/server.c:1-6 sent
	src/server.c:7-11 sent
	EOF
	test_cmp expect actual &&
	check_turn $n HEAD $l1
'

test_expect_success MDB_DUMP 'local: --dry-run shows the chunks it would send, records nothing' '
	n=$(request_count) &&
	objects=$(cd ws && object_count) &&
	aptix -C ws continue --dry-run -m "configuration of the http server port" >dry &&
	sed -e 1,4d dry >dry-body &&
	python3 -c "
import json
b = json.load(open(\"dry-body\"))
m = b[\"input\"][-1][\"content\"]
# the fork already had these
assert \"Retrieved from\" not in m, m
" &&
	aptix -C ws continue --dry-run -m "split the input text into tokens" >dry &&
	sed -e 1,4d dry >dry-body &&
	python3 -c "
import json
b = json.load(open(\"dry-body\"))
m = b[\"input\"][-1][\"content\"]
assert \"Retrieved from src/tokens.py lines 1-4 (score \" in m, m
assert \"class TokenStream:\" in m, m
" &&
	test "$(request_count)" = "$n" &&
	test "$(cd ws && object_count)" = "$objects"
'

# Regression: a rerun retrieves with the instruction it repeats.
test_expect_success 'local: a rerun retrieves for the instruction it repeats' '
	n=$(request_count) &&
	aptix -C ws rerun $l1 >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	test "$(aptix -C ws show --json | json_field .instruction)" = "parse the configuration file" &&
	sources_of HEAD >actual &&
	sources_of $l1 >expect &&
	test_cmp expect actual &&
	check_turn $((n + 1)) HEAD
'

test_expect_success 'a chunk whose lines changed since indexing is dropped' '
	aptix init -q st &&
	printf "/* quasar_flux: compute the quasar flux */\nint quasar_flux(int strtol_mode)\n{\n\treturn strtol_mode;\n}\n" >st/flux.c &&
	printf "/* nebula_drift: move the nebula */\nint nebula_drift(void);\n" >st/drift.c &&
	aptix -C st index >out &&
	aptix -C st continue --json -m "quasar flux nebula drift" >s1.json &&
	msg "$(request_count)" >m &&
	grep "^Retrieved from flux.c lines 1-5 " m &&
	grep "^Retrieved from drift.c lines 1-2 " m &&
	sed "s/strtol_mode/strtoll_mode/" st/flux.c >flux.new &&
	mv flux.new st/flux.c &&
	aptix -C st switch -c >/dev/null &&
	aptix -C st continue --json -m "quasar flux nebula drift" >s2.json &&
	msg "$(request_count)" >m &&
	! grep "^Retrieved from flux.c" m &&
	! grep -F strtol_mode m &&
	grep "^Retrieved from drift.c lines 1-2 " m &&
	json_field .warnings <s2.json >warnings &&
	grep "a chunk of .flux.c. (lines 1-5) changed since it was indexed: dropped; run aptix index" warnings
'

test_expect_success 'a chunk of a file sent whole is not sent again' '
	aptix -C st index >out &&
	aptix -C st switch -c >/dev/null &&
	aptix -C st continue --json --file flux.c -m "quasar flux nebula drift" >s3.json &&
	msg "$(request_count)" >m &&
	grep "^Active file flux.c (" m &&
	! grep "^Retrieved from flux.c" m &&
	grep "^Retrieved from drift.c lines 1-2 " m &&
	test "$(grep -c strtoll_mode m)" = 2 &&
	python3 -c "
import json
s = json.load(open(\"s3.json\"))[\"sources\"]
assert [c[\"sent\"] for c in s if c[\"path\"] == \"flux.c\"] == [False], s
"
'

test_expect_success 'qdrant: index the repository (embeddings from the stand-in)' '
	aptix -C ws config rag.backend qdrant &&
	log_mark &&
	aptix -C ws index >out 2>err &&
	test_must_be_empty err &&
	grep "^chunks: .* embedded; .* (qdrant, " out &&
	paths_since >paths &&
	grep "^POST /v1/embeddings 200$" paths &&
	grep "^PUT /collections/aptix/points 200$" paths &&
	aptix -C ws switch -c >/dev/null
'

test_expect_success 'qdrant: turn 1 sends its chunks; retrieval by embeddings' '
	log_mark &&
	n=$(request_count) &&
	aptix -C ws continue --json -m "parse the configuration file" >qout1.json 2>qerr1 &&
	test "$(request_count)" = $((n + 1)) &&
	paths_since >paths &&
	cat >expect <<-\EOF &&
	POST /v1/embeddings 200
	POST /collections/aptix/points/query 200
	POST /v1/responses 200
	EOF
	test_cmp expect paths &&
	test "$(aptix -C ws show --json | json_field .previous_response_id)" = null &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 sent
	src/config.c:1-6 sent
	src/tokens.py:1-4 sent
	EOF
	test_cmp expect actual &&
	check_turn $((n + 1)) HEAD &&
	same_sources qout1.json HEAD
'

test_expect_success 'qdrant: turn 2 sends only the snippets not already sent' '
	n=$(request_count) &&
	aptix -C ws continue --json -m "configuration of the http server port" >qout2.json 2>qerr2 &&
	sources_of HEAD >actual &&
	cat >expect <<-\EOF &&
	docs/guide.md:1-3 already
	src/server.c:1-6 sent
	src/server.c:7-11 sent
	EOF
	test_cmp expect actual &&
	check_turn $((n + 1)) HEAD HEAD~1 &&
	msg $((n + 1)) >m &&
	! grep -F "docs/guide.md" m &&
	grep -F "http_server_listen" m &&
	same_sources qout2.json HEAD
'

test_expect_success 'qdrant: --no-rag asks neither the embeddings nor Qdrant' '
	log_mark &&
	aptix -C ws continue --json --no-rag -m "the http server port" >out.json 2>err &&
	paths_since >paths &&
	echo "POST /v1/responses 200" >expect &&
	test_cmp expect paths &&
	test "$(json_field .sources <out.json | tr -d " \n")" = "[]"
'

test_expect_success 'qdrant down: the turn completes and records a warning' '
	port=$(free_port) &&
	n=$(request_count) &&
	head=$(aptix -C ws rev-parse HEAD) &&
	QDRANT_URL=http://127.0.0.1:$port aptix -C ws continue -m "config server down" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^Answer #" out &&
	grep "^warning: retrieval skipped: qdrant: POST http://127.0.0.1:$port/collections/aptix/points/query: " err &&
	msg $((n + 1)) >m &&
	echo "config server down" >expect &&
	test_cmp expect m &&
	aptix -C ws show --json >show.json &&
	test "$(json_field .status <show.json)" = committed &&
	test "$(json_field .parent <show.json)" = "$head" &&
	test "$(json_field .sources <show.json | tr -d " \n")" = "[]" &&
	json_field .warnings <show.json >warnings &&
	grep "retrieval skipped: qdrant: POST http://127.0.0.1:$port/" warnings &&
	aptix -C ws show >show &&
	sed -n "/^Warnings:/,\$p" show | grep "retrieval skipped: qdrant"
'

test_expect_success 'qdrant answering 503: the turn completes with a warning' '
	standin_fault "{\"endpoint\":\"qdrant\",\"kind\":\"status\",\"status\":503,\"path_contains\":\"/points/query\"}" &&
	test_when_finished "standin_reset" &&
	n=$(request_count) &&
	aptix -C ws continue --json -m "config server unavailable" >out.json 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	test "$(json_field .kind <out.json)" = answer &&
	json_field .warnings <out.json >warnings &&
	grep "retrieval skipped: qdrant: Service unavailable" warnings &&
	grep "^warning: retrieval skipped: qdrant: Service unavailable" err &&
	test "$(json_field .sources <out.json | tr -d " \n")" = "[]" &&
	aptix -C ws show --json | json_field .warnings | grep "Service unavailable"
'

test_expect_success 'qdrant slow: retrieval gives up after rag.timeout, the turn goes on' '
	aptix -C ws config rag.timeout 1s &&
	test_when_finished "aptix -C ws config --unset rag.timeout" &&
	standin_fault "{\"endpoint\":\"qdrant\",\"kind\":\"hang\",\"max\":20}" &&
	test_when_finished "standin_reset" &&
	n=$(request_count) &&
	start=$(date +%s) &&
	aptix -C ws continue -m "config server slow" >out 2>err &&
	end=$(date +%s) &&
	test $((end - start)) -lt 8 &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: retrieval skipped: qdrant: .*timed out" err &&
	aptix -C ws show --json | json_field .warnings | grep "timed out"
'

test_expect_success 'qdrant: the embeddings endpoint failing gives a warning too' '
	standin_fault "{\"endpoint\":\"embeddings\",\"kind\":\"status\",\"status\":400,\"message\":\"bad input\"}" &&
	test_when_finished "standin_reset" &&
	n=$(request_count) &&
	aptix -C ws continue -m "config server no embeddings" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: retrieval skipped: openai: HTTP 400: bad input" err &&
	test "$(aptix -C ws show --json | json_field .status)" = committed
'

test_expect_success 'rag.required: Qdrant down fails the turn before the model is called' '
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	port=$(free_port) &&
	n=$(request_count) &&
	head=$(aptix -C ws rev-parse HEAD) &&
	test_expect_code 1 env QDRANT_URL=http://127.0.0.1:$port \
		aptix -C ws continue -m "required but down" >out 2>err &&
	test_must_be_empty out &&
	grep "^error: retrieval failed and rag.required is set: qdrant: POST http://127.0.0.1:$port/" err &&
	test "$(request_count)" = "$n" &&
	test "$(aptix -C ws rev-parse HEAD)" = "$head" &&
	aptix -C ws log --oneline --no-failed >log &&
	! grep "required but down" log &&
	# the instruction is kept, in a failed snapshot
	aptix -C ws log --oneline --all >log &&
	grep "\[failed\] required but down" log &&
	aptix -C ws status >status &&
	! grep "in flight" status
'

# Regression: a retrieval failure with rag.required is a failed turn,
# reported as JSON with --json like any other failure.
test_expect_success 'rag.required with --json: the error is printed as JSON too' '
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	port=$(free_port) &&
	test_expect_code 1 env QDRANT_URL=http://127.0.0.1:$port \
		aptix -C ws continue --json -m "required but down" >out.json 2>err &&
	test "$(json_field .kind <out.json)" = error &&
	json_field .error_message <out.json | grep "qdrant: POST http://127.0.0.1:$port/"
'

test_expect_success 'rag.required: Qdrant answering 503 fails the turn cleanly' '
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	standin_fault "{\"endpoint\":\"qdrant\",\"kind\":\"status\",\"status\":503,\"path_contains\":\"/points/query\"}" &&
	test_when_finished "standin_reset" &&
	n=$(request_count) &&
	head=$(aptix -C ws rev-parse HEAD) &&
	test_expect_code 1 aptix -C ws continue --json -m "required but failing" >out 2>err &&
	grep "^error: retrieval failed and rag.required is set: qdrant: Service unavailable" err &&
	test "$(request_count)" = "$n" &&
	test "$(aptix -C ws rev-parse HEAD)" = "$head" &&
	# and it works again once Qdrant does
	aptix -C ws continue -m "required and up" >out 2>err &&
	test "$(request_count)" = $((n + 1))
'

# Regression: a dry run whose retrieval fails says why (it said that
# finishing was not allowed in state 'failed').
test_expect_success 'rag.required: a dry run with Qdrant failing says why' '
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	standin_fault "{\"endpoint\":\"qdrant\",\"kind\":\"status\",\"status\":503,\"path_contains\":\"/points/query\"}" &&
	test_when_finished "standin_reset" &&
	test_expect_code 128 aptix -C ws continue --dry-run -m "dry but failing" >out 2>err &&
	grep "^fatal: retrieval failed and rag.required is set: qdrant: Service unavailable" err &&
	test_must_be_empty out
'

# Regression: retrieval runs after the instruction is stored and the
# conversation claimed, so a turn killed while Qdrant is slow leaves a
# failed snapshot, and status lists it while it runs.
test_expect_success 'a turn killed during a slow retrieval keeps its instruction' '
	aptix -C ws config rag.timeout 20s &&
	test_when_finished "aptix -C ws config --unset rag.timeout" &&
	standin_fault "{\"endpoint\":\"qdrant\",\"kind\":\"hang\",\"max\":20}" &&
	test_when_finished "standin_reset" &&
	n=$(request_count) &&
	log_mark &&
	{ aptix -C ws continue -m "killed while retrieving" >kill.out 2>kill.err & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	i=0 &&
	while ! paths_since | grep -q "^POST /collections/aptix/points/query" && test $i -lt 100
	do
		sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	paths_since | grep "^POST /collections/aptix/points/query" &&
	child_running $pid &&
	aptix -C ws status >status &&
	kill -9 $pid &&
	{ wait $pid; code=$?; } &&
	test "$code" = 137 &&
	test "$(request_count)" = "$n" &&
	# log only reads; status records the dead turn, as a write would
	aptix -C ws status >/dev/null &&
	aptix -C ws log --all --oneline >log &&
	grep "\[failed\] killed while retrieving" log &&
	grep "killed while retrieving" status
'

test_expect_success 'a wrong vector size: a clear error' '
	head=$(aptix -C ws rev-parse HEAD) &&
	stop_standin &&
	qstart --embed-dim 32 &&
	n=$(request_count) &&
	aptix -C ws continue -m "parse the configuration file" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: retrieval skipped: qdrant: collection .aptix. has vectors of size 256 but the embedding model gives 32$" err &&
	aptix -C ws show --json | json_field .warnings >warnings &&
	grep "collection .aptix. has vectors of size 256 but the embedding model gives 32" warnings &&
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	test_expect_code 1 aptix -C ws continue -m "parse it again" >out 2>err &&
	grep "^error: retrieval failed and rag.required is set: qdrant: collection .aptix. has vectors of size 256 but the embedding model gives 32$" err &&
	test "$(request_count)" = $((n + 1))
'

test_expect_success 'a wrong vector size: index says so too' '
	echo "int brand_new_symbol(void);" >ws/src/new.c &&
	test_must_fail aptix -C ws index >out 2>err &&
	grep "^fatal: qdrant: collection .aptix. has vectors of size 256 but the embedding model gives 32$" err
'

test_expect_success 'the right vector size again: retrieval works' '
	stop_standin &&
	qstart --embed-dim 256 &&
	n=$(request_count) &&
	aptix -C ws continue --json -m "brand new symbol" >out.json 2>err &&
	! grep warning err &&
	test "$(json_field .warnings <out.json | tr -d " \n")" = "[]" &&
	test "$(json_field .sources <out.json | tr -d " \n")" != "[]"
'

test_done
