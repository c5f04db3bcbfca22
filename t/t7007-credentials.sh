#!/bin/sh
test_description='credentials: detected, withheld, refused, redacted, purged

A dirty .env holding an OpenAI project key, an AWS key id and secret,
a GitHub token and a PEM private key is withheld (status, --dry-run, the
request the stand-in recorded, the objects, the index); .aptixignore
names paths never sent nor indexed; instructions, config values,
--model and --workspace holding a credential and URLs with user
information are refused; a server echoing the key does not get it into
the stored raw response; aptix purge removes a blob that holds a secret
from the objects, the reflog, the free pages of the store and the index.

No real credential is written here: every token is made at run time from
random characters in the provider'"'"'s format.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-credcorpus.sh

# wsstore: the store of ws (in its git directory when ws is a work tree)
wsstore () {
	(cd ws && aptix rev-parse --aptix-dir)
}

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi
if ! test_have_prereq MDB_DUMP
then
	skip_all='mdb_dump is needed to read the store'
	test_done
fi

# rand <n> [<set>]: n random characters of set (default [A-Za-z0-9])
rand () {
	LC_ALL=C tr -dc "${2:-A-Za-z0-9}" </dev/urandom | head -c "$1"
}

# The fake credentials, in their providers' formats.
OAI_KEY=sk-proj-$(rand 48)
AWS_ID=AK"IA"$(rand 16 A-Z2-7)
AWS_SECRET=$(rand 40 A-Za-z0-9/+)
GH_TOKEN=gh"p_"$(rand 36)
PEM_BODY=$(rand 64 A-Za-z0-9+/)

# no_secret <file>...: none of the fake credentials is in the files
no_secret () {
	for s in "$OAI_KEY" "$AWS_ID" "$AWS_SECRET" "$GH_TOKEN" "$PEM_BODY"
	do
		if grep -a -F -q -e "$s" "$@"
		then
			echo "a secret (${s%"${s#????}"}...) is in $(grep -a -l -F -e "$s" "$@")" >&2
			return 1
		fi
	done
}

test_expect_success 'setup: a git work tree with a dirty .env and a key' '
	start_standin &&
	git init -q ws &&
	(
		cd ws &&
		echo "int main(void) { return 0; }" >main.c &&
		echo "placeholder" >.env &&
		git add . &&
		git commit -q -m initial &&
		aptix init -q &&
		cat >.env <<-EOF &&
		# settings
		OPENAI_API_KEY=$OAI_KEY
		AWS_ACCESS_KEY_ID=$AWS_ID
		AWS_SECRET_ACCESS_KEY=$AWS_SECRET
		GITHUB_TOKEN=$GH_TOKEN
		EOF
		{
			echo "-----BEGIN RSA PRIVATE KEY-----" &&
			echo "$PEM_BODY" && echo "$PEM_BODY" &&
			echo "-----END RSA PRIVATE KEY-----"
		} >deploy.pem &&
		printf "AWS_ACCESS_KEY_ID=%s\n" "$AWS_ID" >aws.env &&
		printf "token: %s\n" "$GH_TOKEN" >gh.yml &&
		echo "int main(void) { return 1; } /* MAIN_V2 */" >main.c
	)
'

test_expect_success 'the detector finds each credential, by rule and line' '
	(
		cd ws &&
		test_expect_code 1 aptix credscan .env deploy.pem main.c >../found
	) &&
	cat >expect <<-\EOF &&
	.env:2: openai-project-key: OpenAI API key
	.env:3: aws-access-key-id: AWS access key id
	.env:4: aws-secret-access-key: AWS secret access key
	.env:5: github-token: GitHub token
	deploy.pem:1: private-key: private key (PEM block)
	EOF
	test_cmp expect found &&
	aptix credscan --rules >rules &&
	test_line_count = 65 rules &&
	# credentials.md documents every rule, and says how many
	grep "^## The rules (65)$" "$TEST_DIRECTORY/../credentials.md" &&
	cut -f1 rules | while read -r rule
	do
		grep -q "^| \`$rule\` |" "$TEST_DIRECTORY/../credentials.md" ||
		{ echo "rule $rule is not documented" >&2; return 1; }
	done &&
	aptix -C ws credscan main.c
'

test_expect_success 'every format of the corpus is found, by its rule' '
	make_credcorpus corpus &&
	test_line_count -ge 50 corpus.expect &&
	while read -r f rule
	do
		test_expect_code 1 aptix credscan "corpus/$f" >found &&
		grep -q "^corpus/$f:[0-9]*: $rule: " found ||
		{ echo "$f: no $rule in: $(cat found)" >&2; return 1; }
	done <corpus.expect &&
	# a real encrypted key of openssl and of ssh-keygen, when installed
	if command -v openssl >/dev/null && command -v ssh-keygen >/dev/null
	then
		grep "^openssl-genrsa.pem private-key$" corpus.expect &&
		grep "^ssh-keygen-pem private-key$" corpus.expect &&
		grep "^Proc-Type: 4,ENCRYPTED" corpus/openssl-genrsa.pem &&
		grep "^Proc-Type: 4,ENCRYPTED" corpus/ssh-keygen-pem
	fi
'

test_expect_success 'the corpus in a work tree: every file withheld' '
	test_when_finished "rm -rf ws/corpus" &&
	cp -R corpus ws/ &&
	aptix -C ws status --json >cstatus.json &&
	python3 - cstatus.json corpus.expect <<-\EOF
	import json, sys
	files = {f["path"]: f for f in json.load(open(sys.argv[1]))["files"]}
	for line in open(sys.argv[2]):
	    name = "corpus/" + line.split()[0]
	    assert files[name]["action"] == "withheld", (name, files.get(name))
	EOF
'

test_expect_success 'status shows the files as withheld, with rule and line' '
	aptix -C ws status >out 2>err &&
	grep "^  \.env  *withheld: holds a credential: OpenAI API key on line 2 (rule openai-project-key)$" out &&
	grep "^  deploy\.pem  *withheld: holds a credential: private key (PEM block) on line 1" out &&
	grep "^  aws\.env  *withheld: .*aws-access-key-id" out &&
	grep "^  gh\.yml  *withheld: .*github-token" out &&
	grep "^  main\.c  *send$" out &&
	grep "warning: active file .\.env. holds a credential" err &&
	aptix -C ws status --json >json &&
	python3 -c "
import json, sys
files = {f[\"path\"]: f for f in json.load(open(\"json\"))[\"files\"]}
assert files[\".env\"][\"action\"] == \"withheld\", files
assert \"line 2\" in files[\".env\"][\"note\"]
assert files[\".env\"][\"sha256\"] is None
assert files[\"main.c\"][\"action\"] == \"send\"
" &&
	no_secret out err json
'

test_expect_success 'a dry run lists them and sends none' '
	aptix -C ws continue --dry-run -m "what is configured" >out 2>err &&
	grep "Active files withheld (they hold credentials): \.env, aws\.env, deploy\.pem, gh\.yml" out &&
	grep "MAIN_V2" out &&
	grep "warning: active file .deploy\.pem. holds a credential" err &&
	no_secret out err
'

test_expect_success 'a turn sends and stores none of them' '
	aptix -C ws continue -m "what is configured" >out 2>err &&
	last_request_body >body &&
	grep "MAIN_V2" body &&
	grep "withheld (they hold credentials)" body &&
	no_secret body "$STANDIN_LOG_DIR"/* &&
	(cd ws && store_text) >store.txt &&
	grep -a -F "MAIN_V2" store.txt &&
	no_secret store.txt "$(wsstore)"/* out err &&
	grep "warning: active file .gh\.yml. holds a credential" err
'

test_expect_success 'indexing skips them and says so; retrieval never returns them' '
	aptix -C ws index >out 2>err &&
	grep "warning: .\.env. holds a credential, OpenAI API key on line 2 (rule openai-project-key): not indexed" err &&
	grep "warning: .deploy\.pem. holds a credential" err &&
	aptix -C ws rag-query "AWS_ACCESS_KEY_ID GITHUB_TOKEN OPENAI_API_KEY" >q 2>qerr &&
	(cd ws && store_text) >store.txt &&
	no_secret store.txt q qerr
'

test_expect_success '.aptixignore: ignored paths are never sent nor indexed' '
	(
		cd ws &&
		mkdir -p notes/deep build docs &&
		echo "NOTES_MARKER" >notes/todo.txt &&
		echo "DEEP_MARKER" >notes/deep/x.txt &&
		echo "KEEP_MARKER" >notes/keep.txt &&
		echo "BUILD_MARKER" >build/out.txt &&
		echo "DOCS_FILE_MARKER" >docs/build &&
		echo "LOG_MARKER" >docs/run.log &&
		cat >.aptixignore <<-\EOF
		# never sent
		notes/**
		!notes/keep.txt
		/build/
		*.log
		EOF
	) &&
	aptix -C ws status >out &&
	! grep -e "notes/todo" -e "notes/deep" -e "build/out" -e "run\.log" out &&
	grep "^  docs/build  *send" out &&
	grep "^  notes/keep\.txt  *send" out &&
	aptix -C ws continue --dry-run -m "look" --file docs/run.log >out 2>err &&
	grep "warning: .docs/run\.log. is excluded by \.aptixignore: not sent" err &&
	! grep -e NOTES_MARKER -e DEEP_MARKER -e BUILD_MARKER -e LOG_MARKER out &&
	grep KEEP_MARKER out &&
	aptix -C ws index >out &&
	(cd ws && store_text) >store.txt &&
	! grep -a -e NOTES_MARKER -e DEEP_MARKER -e BUILD_MARKER -e LOG_MARKER store.txt &&
	grep -a KEEP_MARKER store.txt
'

test_expect_success 'an instruction holding a credential is refused, store unchanged' '
	(cd ws && object_count) >before &&
	test_must_fail aptix -C ws continue -m "use $GH_TOKEN to push" 2>err &&
	grep "fatal: the instruction holds a credential, GitHub token on line 1 (rule github-token): refusing to store or send it" err &&
	test_must_fail aptix -C ws continue --dry-run -m "a key: $OAI_KEY" 2>err2 &&
	grep "the instruction holds a credential" err2 &&
	(cd ws && object_count) >after &&
	test_cmp before after &&
	no_secret err err2
'

test_expect_success 'config values, --model and --workspace holding one are refused' '
	test_must_fail aptix -C ws config openai.model "$OAI_KEY" 2>err &&
	grep "refusing to store .openai.model.: its value holds a credential, OpenAI API key" err &&
	test_must_fail aptix -C ws config x.note "$GH_TOKEN" 2>err2 &&
	test_must_fail aptix -C ws continue --model "$OAI_KEY" -m "hi" 2>err3 &&
	grep "the model name holds a credential" err3 &&
	test_must_fail aptix -C ws continue --workspace "$GH_TOKEN" -m "hi" 2>err4 &&
	grep "the workspace id holds a credential" err4 &&
	no_secret err err2 err3 err4 "$(wsstore)/config"
'

test_expect_success 'a title holding a credential is refused: rename, /rename' '
	(cd ws && aptix sessions --json) >before &&
	test_must_fail aptix -C ws conversation rename "deploy $GH_TOKEN" 2>err &&
	grep "fatal: the title holds a credential, GitHub token on line 1 (rule github-token): refusing to store it" err &&
	test_must_fail aptix -C ws conversation rename "k $OPENAI_API_KEY" 2>err2 &&
	grep "fatal: the title holds an API key" err2 &&
	(cd ws && aptix sessions --json) >after &&
	test_cmp before after &&
	# chat, in a store of its own (it leaves its lock directory)
	aptix init -q tws &&
	aptix -C tws continue -m "a first turn" >/dev/null 2>&1 &&
	conv=$(aptix -C tws symbolic-ref --short HEAD) &&
	printf "/rename %s\n" "$OAI_KEY" |
		aptix -C tws chat --no-rag --session "$conv" >out 2>err3 &&
	grep "the title holds a credential, OpenAI API key" err3 &&
	(cd ws && store_text) >store.txt &&
	(cd tws && store_text) >>store.txt &&
	no_secret err err2 err3 out store.txt &&
	! grep -a -F "$OPENAI_API_KEY" store.txt err2
'

test_expect_success 'URLs with user information are refused' '
	pw=$(rand 16) &&
	test_must_fail aptix -C ws config openai.base-url "http://user:$pw@127.0.0.1:1/v1" 2>err &&
	grep "refusing to store .openai.base-url.: the URL holds user information" err &&
	! grep -F "$pw" err "$(wsstore)/config" &&
	OPENAI_BASE_URL="http://u:$pw@127.0.0.1:$STANDIN_PORT/v1" \
		test_must_fail aptix -C ws continue --dry-run -m "hi" >out 2>err2 &&
	grep "the OpenAI base URL holds user information" err2 &&
	! grep -F "$pw" out err2 &&
	aptix -C ws config rag.backend qdrant &&
	QDRANT_URL="http://u:$pw@127.0.0.1:$STANDIN_PORT" \
		test_must_fail aptix -C ws index 2>err3 &&
	grep "QDRANT_URL holds user information" err3 &&
	aptix -C ws config rag.backend local &&
	! grep -F "$pw" err3
'

test_expect_success 'a server echoing the key: the stored raw response has it redacted' '
	test_when_finished "standin_reset" &&
	standin_fault "{\"kind\":\"status\",\"status\":400,\"message\":\"Incorrect API key provided: $OPENAI_API_KEY\"}" &&
	test_must_fail aptix -C ws continue --no-stream -m "echo one" >out 2>err &&
	standin_reset &&
	standin_fault "{\"kind\":\"failed\",\"message\":\"bad key $OPENAI_API_KEY here\"}" &&
	test_must_fail aptix -C ws continue --no-stream -m "echo two" >>out 2>>err &&
	grep "<redacted>" err &&
	for s in $(aptix -C ws log --all --format=%H)
	do
		aptix -C ws show --json "$s" || return 1
	done >shown &&
	(cd ws && store_text) >store.txt &&
	grep -a -F "Incorrect API key provided: <redacted>" store.txt &&
	grep -a -F "bad key <redacted> here" store.txt &&
	! grep -a -F -e "$OPENAI_API_KEY" store.txt shown out err &&
	! grep -a -F -e "$OPENAI_API_KEY" "$(wsstore)"/*
'

test_expect_success 'purge: setup, a secret the detector does not know, everywhere' '
	PURGE=PURGEMARKER$(rand 24) &&
	echo "$PURGE" >purge-secret &&
	echo "int leaked(void) { return 7; } /* $PURGE */" >ws/leak.c &&
	aptix -C ws continue -m "why is $PURGE in leak.c" >out 2>err &&
	aptix -C ws continue --create --conversation purge-test \
		-m "a new conversation titled $PURGE" >out 2>err &&
	aptix -C ws index >/dev/null &&
	aptix -C ws rag-query "leaked" >q &&
	grep " leak\.c:1-1 " q &&
	grep -a -c -F "$PURGE" "$(wsstore)/data.mdb" >count &&
	test "$(cat count)" -gt 2 &&
	aptix -C ws reflog >reflog &&
	grep -F "$PURGE" reflog &&
	# chat_history, as an aptix before this one saved a refused line
	printf "_HiStOrY_V2_\n/help\nwhy\\040is\\040%s\\040here\n/log\n" \
		"$PURGE" >"$(wsstore)/chat_history"
'

test_expect_success 'purge without --force lists and changes nothing; --dry-run too' '
	cp "$(wsstore)/data.mdb" before.mdb &&
	test_expect_code 128 aptix -C ws purge --secret-from-file ../purge-secret >list 2>err &&
	grep "refusing\|run again with --force" err &&
	grep "^purge blob [0-9a-f]\{64\}$" list &&
	grep "^redact session [0-9a-f]\{64\}$" list &&
	grep "^redact reflog record of refs/conversations/" list &&
	grep "^unindex leak\.c$" list &&
	grep "^clean chat_history$" list &&
	aptix -C ws purge --dry-run --secret-from-file ../purge-secret >list2 &&
	test_cmp list list2 &&
	cmp before.mdb "$(wsstore)/data.mdb"
'

test_expect_success 'purge --force: the bytes are nowhere in the store files' '
	blob=$(sed -n "s/^purge blob //p" list | head -n 1) &&
	aptix -C ws purge --force --reason "leaked in a turn" \
		--secret-from-file ../purge-secret >out 2>err &&
	grep "purged .* blobs, redacted .* and 1 lines from chat_history" err &&
	! grep -a -F "$PURGE" "$(wsstore)"/* &&
	printf "_HiStOrY_V2_\n/help\n/log\n" >expect.history &&
	test_cmp expect.history "$(wsstore)/chat_history" &&
	test "$(stat -c %a "$(wsstore)/chat_history")" = 600 &&
	(cd ws && store_text) >store.txt &&
	! grep -a -F "$PURGE" store.txt &&
	aptix -C ws reflog >reflog &&
	! grep -F "$PURGE" reflog &&
	aptix -C ws log --all >log &&
	! grep -F "$PURGE" log &&
	aptix -C ws rag-query "leaked" >q &&
	! grep "leak\.c" q &&
	test_must_fail aptix -C ws cat-object -p "$blob" 2>err &&
	grep "fatal: object .$blob. was purged on 20[0-9-]*T[0-9:.]*Z: leaked in a turn" err
'

test_expect_success 'fsck is clean after purge: purged and redacted, not broken' '
	aptix -C ws fsck --full >fsck &&
	grep "^purged blob $blob on .*: leaked in a turn$" fsck &&
	grep "^redacted session [0-9a-f]* on .*: leaked in a turn$" fsck &&
	! grep -e "^broken" -e "^missing" -e "^hash mismatch" -e "^corrupt" fsck
'

test_expect_success 'after purge: show says purged, a new chain rehydrates without it' '
	aptix -C ws show HEAD >shown &&
	grep "\[purged on 20[0-9-]*T[0-9:.]*Z: leaked in a turn\]" shown &&
	# the secret leaves the work tree too, as it should
	rm ws/leak.c &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix -C ws continue -m "after the purge" >out 2>err &&
	grep "started a new chain" err &&
	last_request_body >body &&
	grep -F "[purged]" body &&
	! grep -F "$PURGE" body
'

test_expect_success 'compaction needs the store alone' '
	mkfifo hold &&
	{ aptix -C ws continue --dry-run -F ../hold >/dev/null 2>&1 & } &&
	holder=$! &&
	test_when_finished "kill_children $holder" &&
	# the holder has the store open, then waits on the fifo
	i=0 &&
	while ! ls -l /proc/$holder/fd 2>/dev/null | grep -q "data\.mdb"
	do
		i=$((i + 1)) &&
		test $i -lt 100 &&
		sleep 0.1 || return 1
	done &&
	cp "$(wsstore)/data.mdb" before.mdb &&
	test_must_fail aptix -C ws purge --compact 2>err &&
	grep "cannot compact store .*: another process (pid [0-9]*) has it open" err &&
	cmp before.mdb "$(wsstore)/data.mdb" &&
	echo "go on" >hold &&
	wait $holder &&
	aptix -C ws purge --compact &&
	aptix -C ws fsck --full >/dev/null
'

test_expect_success 'purge by id: a blob goes, a turn is refused' '
	id=$(echo "BLOBMARKER_PURGE_BY_ID" | aptix -C ws hash-object -w --stdin) &&
	turn=$(aptix -C ws rev-parse "HEAD^{turn}") &&
	test_must_fail aptix -C ws purge --force "$turn" 2>err &&
	grep "is a turn: only blobs are purged by id" err &&
	aptix -C ws purge --force --reason "by id" "$id" >out &&
	grep "^purge blob $id$" out &&
	! grep -a -F BLOBMARKER_PURGE_BY_ID "$(wsstore)"/* &&
	test_must_fail aptix -C ws cat-object -p "$id" 2>err &&
	grep "was purged on .*: by id" err &&
	aptix -C ws purge --force "$id" 2>err &&
	grep "nothing to purge" err &&
	aptix -C ws fsck
'

test_expect_success 'purge: a secret in a file name leaves the index and the stat cache' '
	NAMED=purgename$(rand 24 a-z0-9) &&
	echo "$NAMED" >name-secret &&
	echo "int named(void) { return 8; }" >"ws/named-$NAMED.c" &&
	# older than the racy window: the stat cache keeps it
	touch -d "-1 hour" "ws/named-$NAMED.c" &&
	aptix -C ws status >/dev/null &&
	aptix -C ws continue -m "look at the named file" >out 2>err &&
	aptix -C ws index >/dev/null &&
	aptix -C ws rag-query "named" >q &&
	grep -F "named-$NAMED.c" q &&
	grep -a -l -F "$NAMED" "$(wsstore)"/* >where &&
	grep "/stat-cache$" where &&
	grep "/data.mdb$" where &&
	aptix -C ws purge --force --secret-from-file ../name-secret >out 2>err &&
	grep "^unindex named-\*\{$(printf %s "$NAMED" | wc -c)\}\.c$" out &&
	grep "^drop stat-cache$" out &&
	! grep -F "$NAMED" out err &&
	! grep -a -l -F "$NAMED" "$(wsstore)"/* &&
	aptix -C ws rag-query "named" >q &&
	! grep -F "named-" q &&
	aptix -C ws fsck >/dev/null &&
	rm "ws/named-$NAMED.c"
'

# linked_store <dir>: a work tree <dir> whose store'"'"'s data.mdb is a
# symbolic link to <dir>-data/data.mdb, with a turn holding $LINKED
linked_store () {
	aptix init -q "$1" &&
	mkdir "$1-data" &&
	mv "$1/.aptix/data.mdb" "$1-data/data.mdb" &&
	ln -s "../../$1-data/data.mdb" "$1/.aptix/data.mdb" &&
	aptix -C "$1" continue -m "a linked store holding $LINKED" >out 2>err &&
	grep -a -c -F "$LINKED" "$1-data/data.mdb" >count &&
	test "$(cat count)" -gt 0
}

test_expect_success 'purge: a data.mdb that is a symbolic link is compacted where it points' '
	LINKED=PURGELINKED$(rand 24) &&
	echo "$LINKED" >linked-secret &&
	linked_store linked &&
	aptix -C linked purge --force --secret-from-file ../linked-secret >out 2>err &&
	test -h linked/.aptix/data.mdb &&
	test "$(readlink linked/.aptix/data.mdb)" = "../../linked-data/data.mdb" &&
	! grep -a -F "$LINKED" linked-data/data.mdb linked/.aptix/* &&
	aptix -C linked fsck --full >/dev/null &&
	aptix -C linked continue -m "after the purge" >out 2>err &&
	aptix -C linked log --oneline >log &&
	grep "after the purge" log &&
	test -h linked/.aptix/data.mdb
'

test_expect_success 'purge: a data.mdb with another hard link is refused, unchanged' '
	LINKED=PURGEHARD$(rand 24) &&
	echo "$LINKED" >hard-secret &&
	aptix init -q hard &&
	aptix -C hard continue -m "a store with two names holding $LINKED" >out 2>err &&
	ln hard/.aptix/data.mdb hard-copy.mdb &&
	cp hard-copy.mdb before.mdb &&
	test_must_fail aptix -C hard purge --force \
		--secret-from-file ../hard-secret >out 2>err &&
	grep "data.mdb. has 2 hard links, and the others would keep" err &&
	! grep "^purged " err &&
	cmp before.mdb hard/.aptix/data.mdb &&
	rm hard-copy.mdb &&
	aptix -C hard purge --force --secret-from-file ../hard-secret >out 2>err &&
	grep "^purged " err &&
	! grep -a -F "$LINKED" hard/.aptix/*
'

test_expect_success 'purge: a copy it cannot drop makes it fail, naming the file' '
	LINKED=PURGECOPY$(rand 24) &&
	echo "$LINKED" >copy-secret &&
	aptix -C hard continue -m "one more holding $LINKED" >out 2>err &&
	echo "a note on $LINKED" >"$(cd hard && aptix rev-parse --aptix-dir)/notes" &&
	test_must_fail aptix -C hard purge --force \
		--secret-from-file ../copy-secret >out 2>err &&
	grep "the secret is still in .*/notes.*: it is not purged" err &&
	! grep "^purged " err &&
	! grep -a -F "$LINKED" hard/.aptix/data.mdb
'

test_done
