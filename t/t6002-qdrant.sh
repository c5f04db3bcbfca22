#!/bin/sh
test_description='aptix index and rag-query with the Qdrant backend

Against the stand-in (t/standin/openai_standin.py), which serves both the
embeddings endpoint and a Qdrant REST imitation and logs every request:
points are upserted with their payload and the api-key header, only new
chunks are embedded, removed chunks are deleted, queries fall back to
/points/search on a Qdrant without /points/query, a Qdrant that is down
gives a warning, a wrong vector size a clear error, and the Qdrant key is
never stored nor printed.'
. "$(dirname "$0")"/test-lib.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed for the stand-in'
	test_done
fi
test_lazy_prereq MDB_DUMP 'mdb_dump -V'

LOGS=$TRASH_DIRECTORY/requests
OKEY=sk-test-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
QKEY=qk-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

start_standin () {
	rm -f "$TRASH_DIRECTORY/standin.port" &&
	test_start_server standin python3 "$TEST_DIRECTORY/standin/openai_standin.py" \
		--port-file "$TRASH_DIRECTORY/standin.port" --log-dir "$LOGS" \
		--api-key "$OKEY" --qdrant-api-key "$QKEY" "$@" &&
	test_wait_for_file "$TRASH_DIRECTORY/standin.port" 10 standin &&
	STANDIN_URL=http://127.0.0.1:$(cat "$TRASH_DIRECTORY/standin.port") &&
	OPENAI_BASE_URL=$STANDIN_URL/v1 &&
	OPENAI_API_KEY=$OKEY &&
	QDRANT_URL=$STANDIN_URL &&
	QDRANT_API_KEY=$QKEY &&
	export STANDIN_URL OPENAI_BASE_URL OPENAI_API_KEY QDRANT_URL QDRANT_API_KEY
}

# http <method> <path> [<json>]: a request to the stand-in, printed
http () {
	python3 - "$STANDIN_URL$2" "$1" "${3-}" "$QKEY" <<-\EOF
	import sys, urllib.request, urllib.error
	url, method, body, key = sys.argv[1:5]
	req = urllib.request.Request(url, method=method,
	                             data=body.encode() if body else None,
	                             headers={"Content-Type": "application/json",
	                                      "api-key": key})
	try:
	    sys.stdout.write(urllib.request.urlopen(req, timeout=10).read().decode())
	except urllib.error.HTTPError as e:
	    sys.stdout.write(e.read().decode())
	EOF
}

control () {
	http POST /__control "$1" >/dev/null
}

# log_mark: remember how many requests are logged; logs_since: check the
# newer ones with python (the list "logs" of parsed entries, in order)
log_mark () {
	MARK=$(find "$LOGS" -name '*.json' | wc -l | tr -d ' ')
}

logs_since () {
	python3 - "$LOGS" "$MARK" "$1" <<-\EOF
	import glob, hashlib, json, os, sys
	d, mark, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	files = sorted(glob.glob(os.path.join(d, "*.json")))[mark:]
	logs = [json.load(open(f)) for f in files]
	paths = [(e["method"], e["path"]) for e in logs]
	def only(method, suffix):
	    got = [e for e in logs if e["method"] == method and e["path"].endswith(suffix)]
	    return got
	exec(code)
	EOF
}

test_expect_success 'setup: the stand-in and a small tree' '
	start_standin &&
	aptix init -q ws &&
	mkdir -p ws/src/net ws/docs &&
	cat >ws/src/config.c <<-\EOF &&
	/* parseConfigFile: read the configuration file */
	int parseConfigFile(const char *path)
	{
		return read_config_entries(path);
	}
	EOF
	cat >ws/src/net/server.c <<-\EOF &&
	/* the http server answers requests */
	int http_server_listen(int port);
	EOF
	printf "# Guide\n\nEdit the configuration file, then start the server.\n" >ws/docs/guide.md &&
	printf "def tokenize(text):\n    return text.split()\n" >ws/src/tok.py &&
	aptix -C ws config rag.backend qdrant &&
	aptix -C ws config rag.embed-batch 2
'

test_expect_success 'index: collection created, chunks embedded and upserted' '
	log_mark &&
	aptix -C ws index >out 2>err &&
	test_must_be_empty err &&
	grep "^files:  4 scanned, 4 changed, 0 unchanged, 0 removed, 0 skipped" out &&
	grep "^chunks: 4 added, 0 removed, 4 embedded; 4 in 4 files (qdrant, " out &&
	logs_since "
assert paths[0] == (\"GET\", \"/collections/aptix\"), paths
assert logs[0][\"response\"][\"status\"] == 404
create = only(\"PUT\", \"/collections/aptix\")
assert create[0][\"body\"] == {\"vectors\": {\"size\": 64, \"distance\": \"Cosine\"}}, create
idx = sorted(e[\"body\"][\"field_name\"] for e in only(\"PUT\", \"/collections/aptix/index\"))
assert idx == [\"language\", \"path_prefixes\", \"repo\"], idx
emb = only(\"POST\", \"/v1/embeddings\")
assert [len(e[\"body\"][\"input\"]) for e in emb] == [2, 2], emb
assert all(e[\"body\"][\"model\"] == \"text-embedding-3-small\" for e in emb)
ups = only(\"PUT\", \"/collections/aptix/points\")
assert len(ups) == 2, paths
points = []
for e in ups:
    assert e[\"query\"] == {\"wait\": \"true\"}, e[\"query\"]
    assert e[\"headers\"][\"api-key\"] == \"<redacted>\", e[\"headers\"]
    assert e[\"auth\"][\"api_key_present\"] and not e[\"auth\"][\"authorization_present\"]
    assert e[\"response\"][\"status\"] == 200, e[\"response\"]
    points += e[\"body\"][\"points\"]
assert len(points) == 4
for p in points:
    pl = p[\"payload\"]
    assert sorted(pl) == [\"content_hash\", \"end_line\", \"language\", \"path\",
                          \"path_prefixes\", \"repo\", \"start_line\", \"text\"], pl
    # the repo key carries the store id (see the isolation test)
    assert __import__(\"re\").fullmatch(\"ws@[0-9a-f]{12}\", pl[\"repo\"]), pl
    assert pl[\"content_hash\"] == hashlib.sha256(pl[\"text\"].encode()).hexdigest()
    assert len(p[\"vector\"]) == 64 and len(p[\"id\"]) == 36
by = {p[\"payload\"][\"path\"]: p[\"payload\"] for p in points}
assert by[\"src/net/server.c\"][\"path_prefixes\"] == [\"src\", \"src/net\", \"src/net/server.c\"]
assert by[\"src/net/server.c\"][\"start_line\"] == 1 and by[\"src/net/server.c\"][\"end_line\"] == 2
assert by[\"src/tok.py\"][\"language\"] == \"python\"
assert by[\"docs/guide.md\"][\"language\"] == \"markdown\"
# the api key only in the api-key header; the OpenAI key only as a bearer
for e in logs:
    if e[\"path\"].startswith(\"/v1/\"):
        assert e[\"auth\"][\"authorization_scheme\"] == \"Bearer\"
        assert not e[\"auth\"][\"api_key_present\"]
"
'

test_expect_success MDB_DUMP 'the rag records are as objects-format.md says' '
	python3 - ws/.aptix "$QDRANT_URL" "$LOGS" <<-\EOF
	import glob, hashlib, json, os, subprocess, sys, time
	store, url, logs = sys.argv[1:4]
	out = subprocess.run(["mdb_dump", "-s", "rag", store], check=True,
	                     stdout=subprocess.PIPE, universal_newlines=True).stdout
	lines = [l[1:] for l in out.split("\n") if l.startswith(" ")]
	rag = {bytes.fromhex(k): bytes.fromhex(v)
	       for k, v in zip(lines[0::2], lines[1::2])}
	# the collection record: version 1, the SHA-256 of the URL
	assert rag[b"captix"] == b"\x01" + hashlib.sha256(url.encode()).digest()
	# the indexing run, in wall-clock ms
	t = int.from_bytes(rag[b"iqaptix\x00"], "big")
	assert abs(t - time.time() * 1000) < 3600 * 1000, t
	# a manifest, and its chunk id made as the document says
	m = rag[b"qaptix\x00src/tok.py"]
	text = open("ws/src/tok.py", "rb").read()
	assert m[0] == 1 and m[1:3] == (40).to_bytes(2, "big") and \
	    m[3:5] == (5).to_bytes(2, "big"), m
	assert m[5:37] == hashlib.sha256(text).digest()
	repo = m[38:38 + m[37]]
	p = 38 + m[37]
	assert m[p + 1:p + 1 + m[p]] == b"src/tok.py", m
	p += 1 + m[p]
	assert m[p] == 1 and m[p + 17:] == b"\x00", m
	h = hashlib.sha256(text).hexdigest()
	u = bytearray(hashlib.sha256(repo + b"\0src/tok.py\0" + b"1\0" + b"2\0" +
	                             h.encode()).digest()[:16])
	u[6] = 0x80 | (u[6] & 0x0f)
	u[8] = 0x80 | (u[8] & 0x3f)
	assert m[p + 1:p + 17] == bytes(u), (m[p + 1:p + 17].hex(), u.hex())
	ids = set()
	for f in glob.glob(os.path.join(logs, "*.json")):
	    e = json.load(open(f))
	    if e["method"] == "PUT" and e["path"] == "/collections/aptix/points":
	        ids |= {q["id"].replace("-", "") for q in e["body"]["points"]}
	assert bytes(u).hex() in ids, ids
	EOF
'

test_expect_success 'rag-query: an embedded query, filtered by repo' '
	log_mark &&
	aptix -C ws rag-query parse the config file >out &&
	head -n 1 out | grep -E "^0\.[0-9]{4} src/config\.c:1-5 [0-9a-f-]{36} [0-9a-f]{12}$" &&
	logs_since "
assert paths == [(\"POST\", \"/v1/embeddings\"), (\"POST\", \"/collections/aptix/points/query\")], paths
b = logs[1][\"body\"]
assert len(b[\"query\"]) == 64
repo = b[\"filter\"][\"must\"][0][\"match\"][\"value\"]
assert __import__(\"re\").fullmatch(\"ws@[0-9a-f]{12}\", repo), b
assert b[\"filter\"] == {\"must\": [{\"key\": \"repo\", \"match\": {\"value\": repo}}]}, b
assert b[\"limit\"] == 8 and b[\"with_payload\"] is True, b
assert \"score_threshold\" not in b
" &&
	log_mark &&
	aptix -C ws rag-query -k 2 --path src/net --path docs --language c server >out &&
	test_line_count = 1 out &&
	grep " src/net/server.c:1-2 " out &&
	logs_since "
b = logs[1][\"body\"]
assert b[\"limit\"] == 2
repo = b[\"filter\"][\"must\"][0][\"match\"][\"value\"]
assert repo.startswith(\"ws@\"), b
assert b[\"filter\"] == {\"must\": [{\"key\": \"repo\", \"match\": {\"value\": repo}},
                                {\"key\": \"language\", \"match\": {\"value\": \"c\"}}],
                       \"should\": [{\"key\": \"path_prefixes\", \"match\": {\"value\": \"src/net\"}},
                                  {\"key\": \"path_prefixes\", \"match\": {\"value\": \"docs\"}}]}, b
" &&
	aptix -C ws config rag.score-threshold 0.25 &&
	log_mark &&
	aptix -C ws rag-query --json server >out.json &&
	aptix -C ws config --unset rag.score-threshold &&
	logs_since "
assert logs[1][\"body\"][\"score_threshold\"] == 0.25, logs[1][\"body\"]
" &&
	python3 -c "
import json, sys
d = json.load(open(\"out.json\"))
assert d[\"backend\"] == \"qdrant\" and d[\"chunks\"], d
assert all(c[\"score\"] >= 0.25 for c in d[\"chunks\"]), d
"
'

test_expect_success 're-indexing an unchanged tree embeds and uploads nothing' '
	log_mark &&
	aptix -C ws index >out &&
	grep "^files:  4 scanned, 0 changed, 4 unchanged, 0 removed, 0 skipped" out &&
	grep "^chunks: 0 added, 0 removed, 0 embedded; 4 in 4 files" out &&
	logs_since "
assert paths == [(\"GET\", \"/collections/aptix\")], paths
"
'

test_expect_success 'a changed file: only its new chunk is embedded, the old one deleted' '
	aptix -C ws rag-query --json -k 10 config server tokenize guide >before.json &&
	old_id=$(python3 -c "
import json
d = json.load(open(\"before.json\"))
print([c[\"chunk_id\"] for c in d[\"chunks\"] if c[\"path\"] == \"src/tok.py\"][0])
") &&
	echo "# split on white space" >>ws/src/tok.py &&
	log_mark &&
	aptix -C ws index >out &&
	grep "^files:  4 scanned, 1 changed, 3 unchanged, 0 removed, 0 skipped" out &&
	grep "^chunks: 1 added, 1 removed, 1 embedded; 4 in 4 files" out &&
	OLD_ID=$old_id logs_since "
import os
assert [p for p in paths if p[0] != \"GET\"] == [(\"POST\", \"/v1/embeddings\"),
    (\"PUT\", \"/collections/aptix/points\"),
    (\"POST\", \"/collections/aptix/points/delete\")], paths
assert logs[1][\"body\"][\"input\"][0].startswith(\"src/tok.py\n\")
(p,) = logs[2][\"body\"][\"points\"]
assert p[\"payload\"][\"path\"] == \"src/tok.py\" and p[\"payload\"][\"end_line\"] == 3
assert logs[3][\"body\"] == {\"points\": [os.environ[\"OLD_ID\"]]}, logs[3][\"body\"]
assert logs[3][\"query\"] == {\"wait\": \"true\"}
" &&
	aptix -C ws rag-query white space >out &&
	head -n 1 out | grep " src/tok.py:1-3 "
'

test_expect_success 'a deleted file: its points are deleted, nothing embedded' '
	rm ws/docs/guide.md &&
	log_mark &&
	aptix -C ws index >out &&
	grep "^files:  3 scanned, 0 changed, 3 unchanged, 1 removed, 0 skipped" out &&
	grep "^chunks: 0 added, 1 removed, 0 embedded; 3 in 3 files" out &&
	logs_since "
assert [p for p in paths if p[0] != \"GET\"] == [(\"POST\", \"/collections/aptix/points/delete\")], paths
" &&
	http POST /collections/aptix/points/count "{}" >count &&
	grep "\"count\": *3" count
'

test_expect_success 'a Qdrant without /points/query: /points/search instead' '
	control "{\"qdrant_no_query\": true}" &&
	test_when_finished "control \"{\\\"qdrant_no_query\\\": false}\"" &&
	log_mark &&
	aptix -C ws rag-query --path src parse the config file >out 2>err &&
	test_must_be_empty err &&
	head -n 1 out | grep " src/config.c:1-5 " &&
	logs_since "
assert paths == [(\"POST\", \"/v1/embeddings\"), (\"POST\", \"/collections/aptix/points/query\"),
                 (\"POST\", \"/collections/aptix/points/search\")], paths
assert logs[1][\"response\"][\"status\"] == 404
b = logs[2][\"body\"]
assert len(b[\"vector\"]) == 64 and b[\"limit\"] == 8 and b[\"with_payload\"] is True, b
assert b[\"filter\"][\"should\"] == [{\"key\": \"path_prefixes\", \"match\": {\"value\": \"src\"}}], b
"
'

test_expect_success 'a missing collection is not mistaken for a missing route' '
	aptix -C ws config rag.collection nosuch &&
	test_when_finished "aptix -C ws config --unset rag.collection" &&
	log_mark &&
	aptix -C ws rag-query server >out 2>err &&
	test_must_be_empty out &&
	grep "warning: retrieval skipped: qdrant: Not found: Collection .nosuch. doesn.t exist! (HTTP 404)" err &&
	logs_since "
assert not [p for p in paths if p[1].endswith(\"/search\")], paths
"
'

test_expect_success 'Qdrant down: rag-query warns and finds nothing' '
	port=$(python3 -c "
import socket
s = socket.socket()
s.bind((\"127.0.0.1\", 0))
print(s.getsockname()[1])
s.close()
") &&
	QDRANT_URL=http://127.0.0.1:$port aptix -C ws rag-query config >out 2>err &&
	test_must_be_empty out &&
	grep "^warning: retrieval skipped: qdrant: POST http://127.0.0.1:$port/collections/aptix/points/query: " err &&
	QDRANT_URL=http://127.0.0.1:$port aptix -C ws rag-query --json config >out.json 2>/dev/null &&
	grep "retrieval skipped" out.json &&
	control "{\"faults\": [{\"endpoint\": \"qdrant\", \"kind\": \"status\", \"status\": 503, \"path_contains\": \"/points/query\"}]}" &&
	aptix -C ws rag-query config >out 2>err &&
	test_must_be_empty out &&
	grep "^warning: retrieval skipped: qdrant: Service unavailable" err &&
	aptix -C ws config rag.required true &&
	test_when_finished "aptix -C ws config --unset rag.required" &&
	test_expect_code 128 env QDRANT_URL=http://127.0.0.1:$port aptix -C ws rag-query config >out 2>err &&
	test_must_be_empty out &&
	grep "^fatal: qdrant: POST http://127.0.0.1:$port/" err &&
	test_expect_code 128 env QDRANT_API_KEY=wrong aptix -C ws rag-query config 2>err &&
	grep "^fatal: qdrant: Invalid API key or JWT (HTTP 401)" err &&
	test_expect_code 128 env -u QDRANT_URL aptix -C ws rag-query config 2>err &&
	grep "QDRANT_URL is not set" err
'

test_expect_success 'Qdrant slow: retrieval gives up after rag.timeout' '
	control "{\"faults\": [{\"endpoint\": \"qdrant\", \"kind\": \"hang\", \"max\": 20}]}" &&
	aptix -C ws config rag.timeout 1s &&
	test_when_finished "aptix -C ws config --unset rag.timeout" &&
	start=$(date +%s) &&
	aptix -C ws rag-query config >out 2>err &&
	end=$(date +%s) &&
	test $((end - start)) -lt 8 &&
	test_must_be_empty out &&
	grep "^warning: retrieval skipped: qdrant: .*timed out" err
'

test_expect_success 'a wrong vector size is a clear error' '
	http PUT /collections/small "{\"vectors\": {\"size\": 16, \"distance\": \"Cosine\"}}" >out &&
	grep "\"result\": *true" out &&
	aptix -C ws config rag.collection small &&
	test_when_finished "aptix -C ws config --unset rag.collection" &&
	test_must_fail aptix -C ws index >out 2>err &&
	grep "^fatal: qdrant: collection .small. has vectors of size 16 but the embedding model gives 64$" err &&
	aptix -C ws rag-query config >out 2>err &&
	test_must_be_empty out &&
	grep "^warning: retrieval skipped: qdrant: collection .small. has vectors of size 16 but the embedding model gives 64$" err
'

test_expect_success 'a collection deleted on the server is filled again' '
	http DELETE /collections/aptix >out &&
	log_mark &&
	aptix -C ws index >out &&
	grep "^chunks: 3 added, 0 removed, 3 embedded; 3 in 3 files" out &&
	logs_since "
assert (\"PUT\", \"/collections/aptix\") in paths, paths
" &&
	aptix -C ws rag-query configuration >out &&
	grep " src/config.c:1-5 " out
'

test_expect_success 'embeddings failing: index stops with the error' '
	echo "int brand_new(void);" >ws/src/new.c &&
	control "{\"faults\": [{\"endpoint\": \"embeddings\", \"kind\": \"status\", \"status\": 400, \"message\": \"bad input\"}]}" &&
	test_must_fail aptix -C ws index >out 2>err &&
	grep "^fatal: openai: " err &&
	aptix -C ws index >out &&
	grep "^chunks: 1 added, 0 removed, 1 embedded; 4 in 4 files" out
'

test_expect_success 'two stores named alike keep their points apart' '
	aptix init -q one/ws &&
	aptix init -q two/ws &&
	for d in one/ws two/ws
	do
		aptix -C $d config rag.backend qdrant &&
		printf "int shared_helper(void) { return 7; }\n" >$d/common.c ||
		return 1
	done &&
	printf "the SECRET_PLAN: launch at dawn\n" >one/ws/plan.txt &&
	aptix -C one/ws index >out &&
	grep "^chunks: 2 added" out &&
	aptix -C two/ws index >out &&
	grep "^chunks: 1 added" out &&
	aptix -C two/ws rag-query SECRET_PLAN launch dawn >out &&
	! grep plan.txt out &&
	grep " common.c:1-1 " out &&
	aptix -C one/ws rag-query SECRET_PLAN launch dawn >out &&
	grep " plan.txt:1-1 " out &&
	# removing a file in one store leaves the other its chunks
	rm two/ws/common.c &&
	aptix -C two/ws index >out &&
	grep "^chunks: 0 added, 1 removed" out &&
	aptix -C one/ws index >out &&
	grep "^files: .* 0 changed, 2 unchanged, 0 removed" out &&
	aptix -C one/ws rag-query shared helper >out &&
	grep " common.c:1-1 " out
'

test_expect_success MDB_DUMP 'the Qdrant key is never stored nor printed' '
	mdb_dump -a ws/.aptix >dump &&
	test_file_not_empty dump &&
	! grep -F "$(printf %s "$QKEY" | od -An -tx1 | tr -d " \n")" dump &&
	! grep -rF "$QKEY" ws/.aptix &&
	! grep -F "$QKEY" out err out.json before.json ./*.log &&
	! grep -rF "$QKEY" "$LOGS" &&
	aptix -C ws config --list >config.out 2>&1 &&
	! grep -iF "$QKEY" config.out
'

test_done
