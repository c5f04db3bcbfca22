#!/bin/sh
test_description='aptix import keeps the milliseconds of the tools times; a store imported at second precision is not imported twice'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 reads the JSON and writes the llm logs.db'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import
CODEX=codex-01a20a30-fe75-78c1-af75-749cedb50f1c
LLM=llm-01kaaaaaaaaaaaaaaaaaaaaaaa
PARENT_FILE=rollout-2026-11-23T20-55-12-01a20a30-fe75-78c1-af75-749cedb50f1c.jsonl

# times <dir> <rev>: created_at_ms and status_at_ms of each snapshot
times () {
	instore "$1" aptix log --format=%H "$2" |
	while read -r s
	do
		instore "$1" aptix show --json "$s" |
		python3 -c 'import json,sys; v = json.load(sys.stdin); print(v["created_at_ms"], v["status_at_ms"])' ||
		return 1
	done
}

# The tools' files as one list of "<tool> <path>" lines.
import_all () {
	local d=$1
	shift
	while read -r tool path
	do
		instore "$d" "$@" aptix import -q "$tool" "$path" >/dev/null ||
		return 1
	done <<-EOF
	codex $FIX/codex-0.169
	codex $FIX/codex-0.171-toolcall
	claude $FIX/claude-code-2.1.328/projects
	gemini $FIX/gemini-cli-0.61.0
	EOF
}

# APTIX_TEST_IMPORT_SECONDS makes the importers read the times as aptix
# did before they kept milliseconds. llm is not imported that way: its
# importer is newer than the milliseconds.
test_expect_success 'setup: a store imported at second precision, as aptix did' '
	python3 "$TEST_DIRECTORY"/lib-llm-logs.py logs.db &&
	mkdir old new &&
	(cd old && aptix init -q) &&
	(cd new && aptix init -q) &&
	import_all old env APTIX_TEST_IMPORT_SECONDS=1 &&
	times old $CODEX >old-times &&
	! grep -v "000 [0-9]*000$" old-times
'

test_expect_success 'imported now: the times keep their milliseconds' '
	import_all new &&
	instore new aptix import -q llm logs.db >/dev/null &&
	times new $CODEX >new-times &&
	grep -v "000 [0-9]*000$" new-times &&
	times new $LLM >llm-times &&
	head -n 1 llm-times >last &&
	echo "1795168860125 1795168861375" >expect &&
	test_cmp expect last
'

test_expect_success 'the old store imported again: nothing new, no duplicate' '
	snapshot_state old >before &&
	import_all old >out &&
	snapshot_state old >after &&
	test_cmp before after &&
	instore old aptix import --json codex "$FIX/codex-0.169" >summary &&
	test "$(json_field new_turn_count summary)" = 0 &&
	test "$(json_field turn_count summary)" -gt 0
'

test_expect_success 'a grown rollout: only its new turn, a child of the old snapshot' '
	mkdir -p grown &&
	(cd grown && aptix init -q) &&
	head -n 24 "$FIX/codex-0.169/$PARENT_FILE" >grown/$PARENT_FILE &&
	APTIX_TEST_IMPORT_SECONDS=1 instore grown aptix import --json codex \
		grown/$PARENT_FILE >summary &&
	test "$(json_field new_turn_count summary)" = 2 &&
	instore grown aptix rev-parse $CODEX >old-tip &&
	cp "$FIX/codex-0.169/$PARENT_FILE" grown/ &&
	instore grown aptix import --json codex grown/$PARENT_FILE >summary 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count summary)" = 1 &&
	instore grown aptix rev-parse $CODEX~1 >parent &&
	test_cmp old-tip parent &&
	times grown $CODEX >grown-times &&
	head -n 1 grown-times >last &&
	! grep "000 [0-9]*000$" last
'

test_expect_success 'the old and the new store hold the same conversations' '
	instore old aptix for-each-ref --format="%(refname)" | sort >old-refs &&
	instore new aptix for-each-ref --format="%(refname)" |
		grep -v "^refs/conversations/llm-" | sort >new-refs &&
	test_cmp old-refs new-refs
'

test_done
