#!/bin/sh
test_description='secrets: API keys never reach the store or any output

OPENAI_API_KEY and QDRANT_API_KEY are set to unique markers (and a wrong
OpenAI key, another marker, for a 401). Turns that succeed and fail
(401, 500, an error event, a dropped stream, dry runs, --json), RAG
indexing and queries against the Qdrant stand-in, config commands
(including attempts to store a key), show --raw, log, reflog, status,
cat-object --batch-all-objects and fsck all run; then every record of
the store (mdb_dump, objects inflated), the raw bytes of its files and
every stdout and stderr are searched for the markers: none may appear.
The store is 0700 and its files 0600, whatever the umask, also after
turns and config writes.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

rand () {
	od -An -N12 -tx1 /dev/urandom | tr -d ' \n'
}

OKEY=sk-proj-OPENAIMARKER$(rand)
WRONG=sk-proj-WRONGMARKER$(rand)
QKEY=QDRANTMARKER$(rand)
mkdir -p "$TRASH_DIRECTORY/outputs"

# run <cmd>...: run a command with its stdout and stderr also kept
# under outputs/ (all of them are searched at the end); the exit code
# is the command's.
run_n=0
run () {
	local rc
	run_n=$((run_n + 1))
	"$@" >"$TRASH_DIRECTORY/outputs/$run_n.out" 2>"$TRASH_DIRECTORY/outputs/$run_n.err"
	rc=$?
	cat "$TRASH_DIRECTORY/outputs/$run_n.out"
	cat "$TRASH_DIRECTORY/outputs/$run_n.err" >&2
	return $rc
}

# perms_ok: .aptix is 0700, each file in it 0600
perms_ok () {
	test "$(stat -c %a .aptix)" = 700 &&
	for f in .aptix/*
	do
		test "$(stat -c %a "$f")" = 600 || {
			echo "$f has mode $(stat -c %a "$f")" >&2
			return 1
		}
	done
}

test_expect_success 'setup: stand-in requiring the marker keys' '
	umask 000 &&
	test_when_finished "umask 022" &&
	run aptix init &&
	perms_ok &&
	rm -f standin.port &&
	test_start_server standin python3 "$TEST_DIRECTORY/standin/openai_standin.py" \
		--port-file standin.port --log-dir "$STANDIN_LOG_DIR" \
		--api-key "$OKEY" --qdrant-api-key "$QKEY" &&
	test_wait_for_file standin.port 10 standin &&
	STANDIN_URL=http://127.0.0.1:$(cat standin.port) &&
	OPENAI_BASE_URL=$STANDIN_URL/v1 &&
	QDRANT_URL=$STANDIN_URL &&
	OPENAI_API_KEY=$OKEY &&
	QDRANT_API_KEY=$QKEY &&
	export STANDIN_URL OPENAI_BASE_URL QDRANT_URL OPENAI_API_KEY QDRANT_API_KEY &&
	mkdir src &&
	printf "int parse_config(const char *p)\\n{\\n\\treturn p != 0;\\n}\\n" >src/a.c
'

test_expect_success 'turns that succeed' '
	umask 000 &&
	test_when_finished "umask 022" &&
	run aptix continue -m "explain parse_config in src/a.c" &&
	run aptix continue --json -m "and again, as JSON" &&
	run aptix continue --no-stream -m "without streaming" &&
	head=$(aptix rev-parse HEAD) &&
	run aptix fork "$head" -m "a fork" &&
	run aptix rerun "$head" &&
	perms_ok
'

test_expect_success 'dry runs print no key' '
	run aptix continue --dry-run -m "a dry run" >dry &&
	grep "^Authorization: Bearer <redacted>$" dry &&
	run aptix continue --dry-run --json -m "a dry run as JSON" &&
	OPENAI_API_KEY=$WRONG run aptix continue --dry-run -m "a dry run, wrong key"
'

test_expect_success 'turns that fail: 401 (wrong key), 500, error event, dropped stream' '
	test_when_finished "standin_reset" &&
	OPENAI_API_KEY=$WRONG test_must_fail run aptix continue -m "with the wrong key" 2>err &&
	grep "401\\|API key" err &&
	OPENAI_API_KEY=$WRONG test_must_fail run aptix continue --json -m "wrong key, JSON" &&
	standin_fault "{\"kind\":\"status\",\"status\":500,\"repeat\":10}" &&
	test_must_fail run aptix continue -m "a 500" &&
	standin_reset &&
	standin_fault "{\"kind\":\"error_event\"}" &&
	test_must_fail run aptix continue --json -m "an error event" &&
	standin_fault "{\"kind\":\"drop\"}" &&
	test_must_fail run aptix continue -m "a dropped stream" &&
	standin_fault "{\"kind\":\"bad_json\"}" &&
	test_must_fail run aptix continue -m "bad JSON" &&
	OPENAI_API_KEY= test_must_fail run aptix continue -m "no key at all"
'

test_expect_success 'retrieval through the Qdrant stand-in (wrong key too)' '
	run aptix config rag.backend qdrant &&
	test_might_fail run aptix index src &&
	test_might_fail run aptix rag-query "parse the config" &&
	QDRANT_API_KEY=$WRONG test_might_fail run aptix rag-query "parse the config" &&
	QDRANT_API_KEY=$WRONG test_might_fail run aptix continue -m "retrieval with a wrong Qdrant key" &&
	test_might_fail run aptix continue -m "retrieval with the right key" &&
	run aptix config rag.backend local &&
	test_might_fail run aptix index src
'

test_expect_success 'config refuses to store a key, and never echoes it' '
	umask 000 &&
	test_when_finished "umask 022" &&
	test_must_fail run aptix config openai.api-key "$OKEY" &&
	test_must_fail run aptix config qdrant.api-key "$QKEY" &&
	test_must_fail run aptix config openai.token "$OKEY" &&
	test_must_fail run aptix config "x.$OKEY.secret" "$OKEY" &&
	run aptix config openai.model gpt-test &&
	run aptix config --list &&
	perms_ok
'

test_expect_success 'every reading command' '
	for s in $(aptix log --all --format=%H)
	do
		run aptix show --raw "$s" >/dev/null &&
		run aptix show --json "$s" >/dev/null || return 1
	done &&
	run aptix log --all &&
	run aptix log --all --format="%H %T %S %s" &&
	run aptix reflog &&
	run aptix reflog HEAD &&
	run aptix status &&
	run aptix status --json &&
	run aptix sessions --json &&
	run aptix for-each-ref &&
	run aptix cat-object --batch --batch-all-objects >/dev/null &&
	run aptix fsck --full &&
	test_might_fail run aptix diff HEAD^ HEAD
'

test_expect_success 'the store and all output are free of the keys' '
	store_text >store.txt &&
	mdb_dump -a -p .aptix >dump.txt &&
	aptix cat-object --batch --batch-all-objects >objects.txt &&
	test_line_count -gt 50 store.txt &&
	found= &&
	for key in "$OKEY" "$WRONG" "$QKEY"
	do
		for f in store.txt dump.txt objects.txt .aptix/* outputs/*
		do
			if grep -a -q -e "$key" "$f"
			then
				echo "key ${key%%MARKER*}... found in $f" >&2 &&
				found=t
			fi
		done
	done &&
	test -z "$found" &&
	echo "searched $(ls outputs | wc -l) outputs of $run_n commands and $(wc -l <store.txt) store records"
'

test_expect_success 'the keys made it to the stand-in (the search is meaningful)' '
	# the stand-in logs auth as present/absent, never the key: check
	# that the right key was accepted and the wrong one refused
	grep -l "\"status\": *200" "$STANDIN_LOG_DIR"/*-POST-v1_responses.json >ok.list &&
	test_line_count -gt 3 ok.list &&
	grep -l "\"status\": *401" "$STANDIN_LOG_DIR"/*-POST-v1_responses.json >refused.list &&
	test_line_count -gt 0 refused.list
'

test_expect_success 'store permissions after everything' '
	perms_ok &&
	ls -la .aptix
'

# Regression: a file of the workspace holding the value of OPENAI_API_KEY
# or QDRANT_API_KEY (a .env file, a settings file) is neither indexed,
# nor sent, nor stored: a warning names it.
test_expect_success 'a key written in a workspace file is neither sent nor stored' '
	printf "OPENAI_API_KEY=%s\n" "$OKEY" >.env &&
	printf "QDRANT_KEY = \"%s\"\ndef parse_config():\n    pass\n" "$QKEY" >settings.py &&
	aptix config rag.backend local &&
	aptix index >/dev/null &&
	aptix continue -q -m "what does settings.py set for parse_config" >/dev/null &&
	store_text >store2.txt &&
	! grep -F -e "$OKEY" -e "$QKEY" store2.txt
'

# The same for the active files of a git work tree (the dirty files are
# sent whole) and for an instruction: QDRANT_API_KEY is recognised in a
# turn as OPENAI_API_KEY is, although the library reads neither from
# the environment (the command passes them in).
test_expect_success 'a key in a dirty file of a git work tree, or in an instruction' '
	git init -q gitws &&
	(
		cd gitws &&
		echo "int clean(void) { return 0; }" >clean.c &&
		echo "QDRANT_KEY=placeholder" >q.env &&
		echo "OPENAI_KEY=placeholder" >o.env &&
		git add . &&
		git commit -q -m initial &&
		aptix init -q &&
		printf "QDRANT_KEY=%s\n" "$QKEY" >q.env &&
		printf "OPENAI_KEY=%s\n" "$OKEY" >o.env &&
		aptix continue -m "what do the env files set" >out 2>err &&
		grep "active file .q.env. holds an API key" err &&
		grep "active file .o.env. holds an API key" err &&
		test_must_fail aptix continue -m "the key is $QKEY" 2>err2 &&
		grep "the instruction holds an API key" err2 &&
		test_must_fail aptix continue -m "the key is $OKEY" 2>err3 &&
		grep "the instruction holds an API key" err3 &&
		store_text >../store3.txt
	) &&
	! grep -F -e "$OKEY" -e "$QKEY" store3.txt
'

test_done
