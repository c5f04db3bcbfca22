#!/bin/sh
test_description='aptix import llm: the logs.db of llm 0.32 (threads, turns, messages, parts)'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 (sqlite3, hashlib.blake2b) writes the logs.db'
	test_done
fi

# The logs.db is written by t/lib-llm-logs.py, which follows llm's own
# code (schema, part storage, b2: hashes) at commit f3f4f29c6e5e of
# github.com/simonw/llm: there is no database from the real tool in the
# fixtures.
GEN=$TEST_DIRECTORY/lib-llm-logs.py
A=llm-01kaaaaaaaaaaaaaaaaaaaaaaa
B=llm-01kbbbbbbbbbbbbbbbbbbbbbbb

count_objects () {
	aptix cat-object --batch-check --batch-all-objects | wc -l
}

test_expect_success 'setup: a logs.db, the same grown, the same tampered with' '
	aptix init -q &&
	python3 "$GEN" logs.db &&
	python3 "$GEN" grown.db grow &&
	python3 "$GEN" tampered.db tamper
'

test_expect_success 'import: every hash verifies, two threads, a call left for later' '
	aptix import --json llm logs.db >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 4 &&
	test "$(json_field conversation_count out)" = 3 &&
	test "$(json_field tool_call_count out)" = 3 &&
	test "$(json_field pending_count out)" = 1 &&
	test "$(json_field skipped_count out)" = 0
'

test_expect_success 'a tool call and its result are one turn, usage of both calls' '
	aptix show --format=%I $A~1 >instr &&
	echo "What is in README.md?" >expect &&
	test_cmp expect instr &&
	aptix show $A~1 >show &&
	grep "call_1  read_file  {\"path\":\"README.md\",\"max\":2.5,\"lines\":40}" show &&
	grep "call_1  read_file  ok, output 45 bytes, from llm" show &&
	aptix show --json $A~1 >show.json &&
	python3 - <<-\EOF
	import json
	v = json.load(open("show.json"))
	u = v["usage"]
	assert (u["input_tokens"], u["output_tokens"], u["cached_tokens"],
	        u["model_requests"]) == (420, 42, 100, 2), u
	assert v["model"] == "gpt-4.1-mini-2025-04-14", v["model"]
	assert v["answer"] == "Let me read it.\n\nIt describes a tiny demo project.", v
	EOF
'

test_expect_success 'floats, escapes, non-ASCII keys hash as in Python; calls without ids' '
	aptix show llm-01kddddddddddddddddddddddd >show &&
	grep "call-1  calc  {\"a\":0.1,\"b\":1e+16,\"c\":1e-05,\"d\":-0.0,\"e\":100.0,\"f\":123456.789,\"g\":1.5e-300,\"h\":\[true,null,-7\]" show &&
	grep "call-2  calc  {}" show &&
	grep "call-2  calc  ok, output 1 bytes, from llm" show
'

test_expect_success 'text stored through a fragment reads as llm resolves it' '
	aptix show --format=%I $A >instr &&
	printf "Quote it:\n# Demo\n\nA tiny project: one file, caf\303\251 \342\234\223.\n" >expect &&
	test_cmp expect instr
'

test_expect_success 'the source record keeps the columns and hashes llm wrote' '
	aptix show --json $A >show.json &&
	resp=$(python3 -c "import json; print(json.load(open(\"show.json\"))[\"response_payload_id\"])") &&
	aptix cat-object -p "$resp" >record &&
	grep "\"tip\":\"b2:[0-9a-f]\{32\}\"" record &&
	grep "text_ref" record
'

test_expect_success 'the fork shares the snapshots of the messages it shares' '
	aptix rev-parse $A~1 >expect &&
	aptix rev-parse $B~1 >actual &&
	test_cmp expect actual &&
	aptix cat-object -p $B >snap &&
	grep "^forked from  *$A$" snap &&
	aptix show --format=%A $B >answer &&
	printf "Un petit projet de d\303\251monstration.\n" >expect &&
	test_cmp expect answer
'

test_expect_success 'again: nothing new' '
	count_objects >before &&
	aptix import --json llm logs.db >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	count_objects >after &&
	test_cmp before after
'

test_expect_success 'a grown database: only its new turn' '
	aptix rev-parse $A >old-tip &&
	aptix import --json llm grown.db >out &&
	test "$(json_field new_turn_count out)" = 1 &&
	aptix rev-parse $A~1 >parent &&
	test_cmp old-tip parent &&
	aptix show --format=%I $A >instr &&
	echo "Thanks!" >expect &&
	test_cmp expect instr
'

test_expect_success 'export json, import into an empty store: the same objects' '
	aptix export --format=json --all -o all.json &&
	mkdir fresh &&
	(cd fresh && aptix init -q) &&
	instore fresh aptix import --json json all.json >out &&
	test "$(json_field skipped_count out)" = 0 &&
	snapshot_state . >expect &&
	snapshot_state fresh >actual &&
	test_cmp expect actual
'

test_expect_success 'a message whose hash does not match: warned, its turn refused' '
	mkdir tampered &&
	(cd tampered && aptix init -q &&
	 test_expect_code 1 aptix import --json llm ../tampered.db >../out 2>../err) &&
	grep "tampered.db.*message .b2:[0-9a-f]\{32\}.: it does not match its hash: its turn is not imported" err &&
	test "$(json_field new_turn_count out)" = 3 &&
	test "$(json_field skipped_count out)" = 1 &&
	aptix rev-parse $B~1 >expect &&
	instore tampered aptix rev-parse $A >actual &&
	test_cmp expect actual
'

test_expect_success 'default location: $LLM_USER_PATH, $XDG_CONFIG_HOME, ~/.config' '
	mkdir -p h/.config/io.datasette.llm lp xdg/io.datasette.llm &&
	cp logs.db h/.config/io.datasette.llm/ &&
	cp logs.db lp/ && cp logs.db xdg/io.datasette.llm/ &&
	(
		unset LLM_USER_PATH XDG_CONFIG_HOME &&
		HOME=$PWD/h aptix import --dry-run --json llm >out1 &&
		HOME=$PWD/nowhere LLM_USER_PATH=$PWD/lp \
			aptix import --dry-run --json llm >out2 &&
		HOME=$PWD/nowhere XDG_CONFIG_HOME=$PWD/xdg \
			aptix import --dry-run --json llm >out3 &&
		HOME=$PWD/nowhere aptix import --dry-run --json llm >out4
	) &&
	test "$(json_field file_count out1)" = 1 &&
	test "$(json_field file_count out2)" = 1 &&
	test "$(json_field file_count out3)" = 1 &&
	test "$(json_field file_count out4)" = 0
'

test_expect_success 'a database of llm before 0.32, and not a database' '
	python3 -c "import sqlite3; d = sqlite3.connect(\"old.db\"); d.execute(\"create table responses (id text)\"); d.commit()" &&
	test_expect_code 1 aptix import llm old.db 2>err &&
	grep "old.db: an llm database older than llm 0.32" err &&
	echo hello >notes.db &&
	test_expect_code 1 aptix import llm notes.db 2>err &&
	grep "notes.db: " err
'

test_done
