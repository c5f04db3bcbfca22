#!/bin/sh
test_description='aptix index and rag-query with the local backend

A small generated source tree is indexed into the store (BM25, no
network); rag-query shows what retrieval finds. Re-indexing is
incremental: unchanged files touch nothing, a changed file has only its
chunks replaced, a deleted file loses its chunks.'
. "$(dirname "$0")"/test-lib.sh

test_lazy_prereq MDB_DUMP 'mdb_dump -V'

# rag_dump: the keys and values of the store's rag table, as hex lines,
# but for the time of the last run ("i" ns), which each run sets
rag_dump () {
	mdb_dump -s rag "$(aptix -C ws rev-parse --aptix-dir)" |
	sed -e '1,/^HEADER=END$/d' | sed -e '/^ 6966$/,+1d'
}

# ids_of <path>: the chunk ids rag-query --json lists for a path
ids_of () {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["chunks"]:
    if c["path"] == sys.argv[2]:
        print(c["chunk_id"])
' "$1" "$2" | sort
}

test_expect_success PYTHON3 'setup: a small source tree' '
	aptix init -q ws &&
	cd ws &&
	mkdir -p src lib docs &&
	cat >src/config.c <<-\EOF &&
	#include <stdio.h>

	/* parseConfigFile: read the configuration file at path */
	int parseConfigFile(const char *path)
	{
		FILE *fp = fopen(path, "r");

		if (!fp)
			return -1;
		return read_config_entries(fp);
	}
	EOF
	cat >src/server.c <<-\EOF &&
	/* the HTTP server: accept connections and answer requests */
	int http_server_listen(int port)
	{
		return accept_connections(port);
	}
	EOF
	cat >lib/tokens.py <<-\EOF &&
	class TokenStream:
	    def next_token(self):
	        return self.lexer.scan()
	EOF
	printf "# Guide\n\nRun the server, then edit the configuration.\n" >docs/guide.md &&
	python3 -c "
for i in range(1, 131):
    print(\"int generated_function_%d(int x) { return x + %d; }\" % (i, i))
" >lib/big.c &&
	printf "bin\000ary\001" >logo.png &&
	python3 -c "print(\"huge_symbol \" * 100000)" >huge.txt &&
	cd ..
'

test_expect_success 'index builds the local index' '
	aptix -C ws index >out 2>err &&
	test_must_be_empty err &&
	cat >expect <<-\EOF &&
	files:  7 scanned, 5 changed, 0 unchanged, 0 removed, 2 skipped
	EOF
	head -n 1 out >actual &&
	test_cmp expect actual &&
	grep "^chunks: 8 added, 0 removed, 0 embedded; 8 in 5 files (local, " out
'

test_expect_success 'rag-query prints score, path:lines, chunk id, short hash' '
	aptix -C ws rag-query parse the config file >out &&
	head -n 1 out >first &&
	grep -E "^[0-9]+\.[0-9]{4} src/config\.c:1-11 [0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12} [0-9a-f]{12}$" first &&
	# best first
	awk "{ print \$1 }" out >scores &&
	sort -rn scores >sorted &&
	test_cmp sorted scores &&
	! grep -e logo.png -e huge.txt out
'

test_expect_success PYTHON3 'rag-query --json: ids and hashes follow the documented rules' '
	aptix -C ws rag-query --json -k 3 http server >out.json &&
	python3 - out.json <<-\EOF
	import hashlib, json, sys
	d = json.load(open(sys.argv[1]))
	assert d["backend"] == "local", d
	assert d["warnings"] == [], d
	assert len(d["chunks"]) == 2, d
	top = d["chunks"][0]
	assert top["path"] == "src/server.c", top
	assert top["language"] == "c" and top["start_line"] == 1 and top["end_line"] == 5
	for c in d["chunks"]:
	    h = hashlib.sha256(c["text"].encode()).hexdigest()
	    assert c["content_hash"] == h, c
	    name = "\0".join([c["repo"], c["path"], str(c["start_line"]),
	                      str(c["end_line"]), h]).encode()
	    u = bytearray(hashlib.sha256(name).digest()[:16])
	    u[6] = (u[6] & 0x0f) | 0x80
	    u[8] = (u[8] & 0x3f) | 0x80
	    x = u.hex()
	    want = "-".join([x[:8], x[8:12], x[12:16], x[16:20], x[20:]])
	    assert c["chunk_id"] == want, (c["chunk_id"], want)
	    assert c["repo"] == "ws", c["repo"]
	EOF
'

test_expect_success 'rag-query filters: -k, --path, --language' '
	aptix -C ws rag-query -k 1 configuration server >out &&
	test_line_count = 1 out &&
	aptix -C ws rag-query --path docs configuration server >out &&
	test_line_count = 1 out &&
	grep " docs/guide.md:1-3 " out &&
	aptix -C ws rag-query --path src --path docs/ configuration >out &&
	test_line_count = 2 out &&
	aptix -C ws rag-query --language python token >out &&
	grep " lib/tokens.py:1-3 " out &&
	test_line_count = 1 out &&
	aptix -C ws rag-query --path sr configuration >out &&
	test_must_be_empty out &&
	aptix -C ws config rag.path-prefix "lib, docs" &&
	aptix -C ws rag-query configuration token >out &&
	! grep " src/" out &&
	grep " lib/tokens.py" out &&
	aptix -C ws config --unset rag.path-prefix
'

test_expect_success 'camelCase and snake_case meet' '
	aptix -C ws rag-query readConfigEntries >out &&
	grep " src/config.c:" out &&
	aptix -C ws rag-query next_token >out &&
	head -n 1 out | grep " lib/tokens.py:" &&
	aptix -C ws rag-query generated_function_77 >out &&
	head -n 1 out | grep " lib/big.c:71-"
'

test_expect_success MDB_DUMP 're-indexing an unchanged tree changes nothing' '
	aptix -C ws rag-query --json configuration >before.json &&
	rag_dump >before.dump &&
	aptix -C ws index >out &&
	head -n 1 out >actual &&
	echo "files:  7 scanned, 0 changed, 5 unchanged, 0 removed, 2 skipped" >expect &&
	test_cmp expect actual &&
	grep "^chunks: 0 added, 0 removed, 0 embedded; 8 in 5 files" out &&
	rag_dump >after.dump &&
	test_cmp before.dump after.dump &&
	aptix -C ws rag-query --json configuration >after.json &&
	test_cmp before.json after.json
'

test_expect_success PYTHON3 'a changed file: only its changed chunks are replaced' '
	aptix -C ws rag-query --json -k 50 generated function >before.json &&
	ids_of before.json lib/big.c >big.before &&
	test_line_count = 4 big.before &&
	ids_of before.json src/config.c >config.before &&
	echo "int appended_symbol(void);" >>ws/lib/big.c &&
	aptix -C ws index >out &&
	grep "^files:  7 scanned, 1 changed, 4 unchanged, 0 removed, 2 skipped" out &&
	grep "^chunks: 1 added, 1 removed, 0 embedded; 8 in 5 files" out &&
	aptix -C ws rag-query --json -k 50 generated function >after.json &&
	ids_of after.json lib/big.c >big.after &&
	test_line_count = 4 big.after &&
	comm -12 big.before big.after >kept &&
	test_line_count = 3 kept &&
	ids_of after.json src/config.c >config.after &&
	test_cmp config.before config.after &&
	aptix -C ws rag-query appended_symbol >out &&
	grep " lib/big.c:106-131 " out
'

test_expect_success MDB_DUMP 'a deleted file: its chunks and terms are gone' '
	rag_dump >before.dump &&
	grep -i "$(printf "src/server.c" | od -An -tx1 | tr -d " \n")" before.dump &&
	rm ws/src/server.c &&
	aptix -C ws index >out &&
	grep "^files:  6 scanned, 0 changed, 4 unchanged, 1 removed, 2 skipped" out &&
	grep "^chunks: 0 added, 1 removed, 0 embedded; 7 in 4 files" out &&
	aptix -C ws rag-query http server listen >out &&
	! grep src/server.c out &&
	rag_dump >after.dump &&
	! grep -i "$(printf "src/server.c" | od -An -tx1 | tr -d " \n")" after.dump &&
	# the postings of a term only server.c had are gone
	! grep -i "^ $(printf "tlisten" | od -An -tx1 | tr -d " \n")\$" after.dump
'

test_expect_success 'index <path>: only that part is updated' '
	echo "def more_tokens(): pass" >>ws/lib/tokens.py &&
	echo "stale words" >>ws/docs/guide.md &&
	aptix -C ws index lib >out &&
	grep "^files:  2 scanned, 1 changed, 1 unchanged, 0 removed, 0 skipped" out &&
	aptix -C ws rag-query stale words >out &&
	test_must_be_empty out &&
	(cd ws/docs && aptix index guide.md ../lib/tokens.py >../../out) &&
	grep "^files:  2 scanned, 1 changed, 1 unchanged, 0 removed, 0 skipped" out &&
	aptix -C ws rag-query stale words >out &&
	grep " docs/guide.md:" out &&
	rm ws/docs/guide.md &&
	aptix -C ws index docs/guide.md >out &&
	grep "^files:  0 scanned, 0 changed, 0 unchanged, 1 removed, 0 skipped" out &&
	test_must_fail aptix -C ws index /tmp 2>err &&
	grep "outside the workspace" err &&
	test_must_fail aptix -C ws index nonexist 2>err &&
	grep "pathspec .nonexist. did not match any files" err &&
	test_must_fail aptix -C ws index docs/guide.md 2>err &&
	grep "pathspec .docs/guide.md. did not match any files" err
'

test_expect_success GIT 'in a git work tree, ignored files are not indexed' '
	git -C ws init -q . &&
	# its store moves into the git directory, out of git clean'"'"'s way
	aptix -C ws init --migrate -q &&
	printf "ignored/\n*.log\n" >ws/.gitignore &&
	mkdir ws/ignored &&
	echo "secret_ignored_symbol" >ws/ignored/a.c &&
	echo "secret_ignored_symbol" >ws/build.log &&
	echo "tracked_symbol" >ws/tracked.c &&
	git -C ws add tracked.c &&
	echo "untracked_symbol" >ws/untracked.c &&
	aptix -C ws index >out &&
	aptix -C ws rag-query secret_ignored_symbol tracked_symbol untracked_symbol >out &&
	grep " tracked.c:" out &&
	grep " untracked.c:" out &&
	! grep -e ignored/ -e build.log out &&
	aptix -C ws rag-query --json -k 100 symbol >out.json &&
	! grep -e "\.aptix/" -e "\.git/" out.json
'

test_expect_success GIT 'status says when indexed files changed since indexing' '
	aptix -C ws index >out &&
	aptix -C ws status >out &&
	! grep "^Retrieval index" out &&
	aptix -C ws status --json >out.json &&
	grep "\"stale\": false" out.json &&
	# touched, same content: not stale
	touch ws/tracked.c &&
	aptix -C ws status >out &&
	! grep "^Retrieval index" out &&
	echo "int changed_since;" >>ws/src/config.c &&
	rm ws/lib/tokens.py &&
	aptix -C ws status >out &&
	grep "^Retrieval index: 1 of [0-9]* indexed files changed since indexing, 1 gone (" out &&
	grep "aptix index" out &&
	aptix -C ws status --json >out.json &&
	grep "\"changed\": 1," out.json &&
	grep "\"gone\": 1," out.json &&
	grep "\"stale\": true" out.json &&
	aptix -C ws index >out &&
	aptix -C ws status >out &&
	! grep "^Retrieval index" out
'

test_expect_success PYTHON3 'a progress bar on a terminal, nothing otherwise' '
	touch ws/src/new.c ws/lib/new.py &&
	aptix -C ws index --reset -q &&
	aptix -C ws index >out 2>err &&
	test_must_be_empty err &&
	aptix -C ws index --reset -q &&
	APTIX_PROGRESS_DELAY=0 python3 - <<-\EOF
	import os, pty, sys
	pid, fd = pty.fork()
	if pid == 0:
	    os.execvp("aptix", ["aptix", "-C", "ws", "index"])
	out = b""
	while True:
	    try:
	        data = os.read(fd, 4096)
	    except OSError:
	        break
	    if not data:
	        break
	    out += data
	os.waitpid(pid, 0)
	text = out.decode()
	assert "Indexing: 100% (" in text, text
	assert "chunks/s" in text and ", done." in text, text
	assert "files:  " in text, text
	EOF
'

# A flipped bit in a chunk's stored text: an error naming the index,
# never a different text handed on (issue 22, item 7).
test_expect_success 'a damaged chunk text is an error, not another answer' '
	mkdir dmg &&
	printf "%s\n" "the marmalade parser reads tokens" >dmg/notes.txt &&
	aptix -C dmg init -q &&
	aptix -C dmg index >/dev/null &&
	aptix -C dmg rag-query marmalade >before &&
	grep "notes.txt" before &&
	store=$(aptix -C dmg rev-parse --aptix-dir) &&
	python3 "$TEST_DIRECTORY/lib-store.py" "$store" values rag >recs &&
	doc=$(grep "^6400000001 " recs) &&
	key=${doc%% *} && val=${doc#* } &&
	test "${val#*6d61726d616c616465}" != "$val" &&
	bad=$(printf "%s" "$val" | sed "s/6d61726d616c616465/6d61726d616c616466/") &&
	python3 "$TEST_DIRECTORY/lib-store.py" "$store" put rag "hex:$key" "hex:$bad" &&
	aptix -C dmg rag-query marmalade >out 2>err &&
	test_must_be_empty out &&
	grep "^warning: retrieval skipped: the retrieval index is corrupt (the text of a chunk)" err &&
	aptix -C dmg index --reset >/dev/null &&
	aptix -C dmg index >/dev/null &&
	aptix -C dmg rag-query marmalade >after &&
	test_cmp before after
'

test_expect_success 'an empty index: rag-query says so' '
	aptix -C ws index --reset >out &&
	grep "Forgot the retrieval index" out &&
	aptix -C ws rag-query anything >out 2>err &&
	test_must_be_empty out &&
	grep "the retrieval index is empty" err &&
	aptix -C ws rag-query --json anything >out.json 2>/dev/null &&
	grep "run .aptix index" out.json
'

test_expect_success 'bad settings and usage are refused' '
	test_expect_code 129 aptix -C ws rag-query &&
	test_expect_code 129 aptix -C ws index --reset lib &&
	test_must_fail aptix -C ws config rag.chunk-lines 0 2>err &&
	grep "rag.chunk-lines" err &&
	# a hand-edited file is checked when the value is used
	store=$(aptix -C ws rev-parse --aptix-dir) &&
	cp "$store/config" config.saved &&
	printf "[rag]\n\tchunk-lines = 0\n" >>"$store/config" &&
	test_must_fail aptix -C ws index 2>err &&
	grep "rag.chunk-lines" err &&
	cp config.saved "$store/config" &&
	test_must_fail aptix -C ws index --backend nope 2>err &&
	grep "must be .local. or .qdrant." err
'

test_done
