#!/bin/sh
test_description='aptix export (session-md, json, markdown) and aptix import json, session-md'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import
CODEX_PARENT=codex-01a20a30-fe75-78c1-af75-749cedb50f1c
CODEX_FORK=codex-01a20a31-1121-7e41-b774-22bab679bcc6
CODEX_TOOL=codex-01a21d63-49bd-7463-9f9d-2c58154575c0


# texts <dir> <rev>: each committed turn's instruction and answer, oldest
# first
texts () {
	instore "$1" aptix log --reverse --format="%S %H" "$2" |
	while read -r st s
	do
		test "$st" = failed && continue
		printf "I: %s\n" "$(instore "$1" aptix show --format=%I "$s")" &&
		printf "A: %s\n" "$(instore "$1" aptix show --format=%A "$s")" ||
		return 1
	done
}

tools_json='[{"type":"function","name":"shell","description":"run a command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]'

test_expect_success 'setup: native turns (files, tool calls, a failure, a fork) and imports' '
	start_standin &&
	echo "int main(void) { return 0; }" >main.c &&
	printf "caf\\351 au lait\n" >latin1.txt &&
	aptix init -q &&
	echo "$tools_json" >tools.json &&
	aptix continue -q --no-rag --file main.c --file latin1.txt \
		-m "What does main.c return?" >/dev/null &&
	standin_fault "{\"kind\":\"tool_calls\",\"delta_chars\":8,\"calls\":[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\": \\\"ls\\\"}\",\"call_id\":\"call_one\"}]}" &&
	aptix continue -q --no-files --no-rag --tools tools.json -m "list the files" >/dev/null &&
	printf "a.c\nb.c\n" >ls.out &&
	aptix continue -q --tool-output call_one=ls.out --tool-exit call_one=0 >/dev/null &&
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	test_must_fail aptix continue -q --no-files --no-rag -m "this one fails" 2>/dev/null &&
	aptix continue -q --no-files --no-rag -m "## User
a line that reads as a header, and one escaped already:
\\## Assistant" >/dev/null &&
	aptix symbolic-ref --short HEAD >native &&
	aptix fork -q HEAD~1 >/dev/null &&
	aptix continue -q --no-files --no-rag -m "A fork of it" >/dev/null &&
	cp -R "$FIX" src &&
	aptix import -q claude src/claude-code-2.1.328 >/dev/null &&
	aptix import -q codex src/codex-0.169 src/codex-0.171-toolcall >/dev/null &&
	aptix import -q gemini src/gemini-cli-0.61.0 >/dev/null &&
	aptix log --all --format=%H >all-sessions &&
	test $(wc -l <all-sessions) -gt 20
'

test_expect_success 'json --all, imported into an empty store: the same objects and refs' '
	aptix export --format=json --all -o all.json &&
	head -n 1 all.json >header &&
	grep "\"format\":\"aptix-export\"" header &&
	mkdir fresh &&
	(cd fresh && aptix init -q) &&
	instore fresh aptix import --json json all.json >out &&
	test "$(json_field .skipped_count <out)" = 0 &&
	snapshot_state . >expect &&
	snapshot_state fresh >actual &&
	test_cmp expect actual
'

test_expect_success 'json: show and log read the same in both stores' '
	for s in $(cat all-sessions)
	do
		aptix show --json "$s" >expect &&
		instore fresh aptix show --json "$s" >actual &&
		test_cmp expect actual || return 1
	done &&
	aptix log --all --format="%H %P %s" >expect &&
	instore fresh aptix log --all --format="%H %P %s" >actual &&
	test_cmp expect actual
'

test_expect_success 'json: the failed attempt and the tool result are in it' '
	grep "this one fails" all.json &&
	grep "\"base64\"" all.json &&
	instore fresh aptix log --all --format=%s >log &&
	grep "this one fails" log
'

test_expect_success 'json: importing it again adds nothing' '
	snapshot_state fresh >before &&
	instore fresh aptix import --json json all.json >out &&
	test "$(json_field .new_turn_count <out)" = 0 &&
	snapshot_state fresh >after &&
	test_cmp before after
'

test_expect_success 'json of one conversation: a fork brings its parent line' '
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix export --format=json "$conv" >fork.json &&
	mkdir one &&
	(cd one && aptix init -q) &&
	instore one aptix import -q json fork.json >/dev/null &&
	aptix rev-parse "$conv" >expect &&
	instore one aptix rev-parse "$conv" >actual &&
	test_cmp expect actual &&
	aptix log --format=%H "$conv" >expect &&
	instore one aptix log --format=%H "$conv" >actual &&
	test_cmp expect actual
'

test_expect_success 'json: a snapshot line whose id does not match is refused' '
	mkdir tampered &&
	(cd tampered && aptix init -q) &&
	aptix export --format=json $CODEX_TOOL >tool.json &&
	sed "s/The command finished/The command FINISHED/" tool.json >bad.json &&
	! cmp -s tool.json bad.json &&
	test_expect_code 1 instore tampered aptix import json bad.json 2>err &&
	grep "would be stored as" err &&
	instore tampered aptix cat-object --batch-check --batch-all-objects >objects &&
	test_must_be_empty objects
'

test_expect_success 'json: a damaged line is warned about, the rest imported' '
	mkdir damaged &&
	(cd damaged && aptix init -q) &&
	aptix export --format=json $CODEX_PARENT >parent.json &&
	{ head -n 2 parent.json && echo "{not json" && tail -n +3 parent.json; } >damaged.json &&
	test_expect_code 1 instore damaged aptix import json damaged.json 2>err &&
	grep "damaged.json:3: malformed line" err &&
	aptix rev-parse $CODEX_PARENT >expect &&
	instore damaged aptix rev-parse $CODEX_PARENT >actual &&
	test_cmp expect actual
'

test_expect_success 'json: a file that is no export imports nothing, says so' '
	echo "{\"hello\":1}" >other.json &&
	test_expect_code 1 instore damaged aptix import json other.json 2>err &&
	grep "not an aptix export" err
'

test_expect_success 'session-md: seed 004 front matter and blocks, headers escaped' '
	aptix export --format=session-md $CODEX_FORK >fork.md &&
	sed -n 1,7p fork.md >head &&
	cat >expect <<-EOF &&
	---
	provider: openai
	model: gpt-5
	created_at: 2026-11-23T20:55:13.068Z
	aptix_conversation: $CODEX_FORK
	aptix_head: $(aptix rev-parse $CODEX_FORK)
	---
	EOF
	test_cmp expect head &&
	test $(grep -c "^## User$" fork.md) = 5 &&
	test $(grep -c "^## Assistant$" fork.md) = 5 &&
	aptix export --format=session-md "$(cat native)" >escaped.md &&
	grep "^\\\\## User$" escaped.md &&
	grep "^\\\\\\\\## Assistant$" escaped.md &&
	! grep "this one fails" escaped.md
'

test_expect_success 'session-md: export then import gives the same instructions and answers' '
	mkdir md &&
	(cd md && aptix init -q) &&
	instore md aptix import --json session-md fork.md escaped.md >out &&
	test "$(json_field .new_turn_count <out)" = 9 &&
	texts . $CODEX_FORK >expect &&
	texts md session-md-$CODEX_FORK >actual &&
	test_cmp expect actual &&
	conv=$(cat native) &&
	texts . $conv >expect &&
	texts md session-md-$conv >actual &&
	test_cmp expect actual
'

test_expect_success 'session-md: importing again adds nothing; a grown file adds its new turn' '
	instore md aptix import --json session-md fork.md >out &&
	test "$(json_field .new_turn_count <out)" = 0 &&
	printf "\n## User\n\nOne more?\n" >>fork.md &&
	instore md aptix import --json session-md fork.md >out &&
	test "$(json_field .new_turn_count <out)" = 0 &&
	test "$(json_field .pending_count <out)" = 1 &&
	printf "\n## Assistant\n\nYes.\n" >>fork.md &&
	instore md aptix import --json session-md fork.md >out &&
	test "$(json_field .new_turn_count <out)" = 1 &&
	instore md aptix show --format=%A session-md-$CODEX_FORK >answer &&
	echo Yes. >expect &&
	test_cmp expect answer
'

test_expect_success 'session-md: an Aptove file without aptix keys' '
	cat >aptove.md <<-\EOF &&
	---
	provider: claude
	model: claude-sonnet-4-20250514
	created_at: 2026-02-15T10:30:00Z
	---

	## User

	What files are in the current directory?

	## Assistant

	I will check the directory listing for you. Here are the files:
	- src/
	- Cargo.toml

	## User

	Show me Cargo.toml

	## Assistant

	Here is the contents of Cargo.toml:
	...
	EOF
	instore md aptix import --json session-md aptove.md >out &&
	test "$(json_field .new_turn_count <out)" = 2 &&
	conv=$(instore md aptix log --all -n 1 --format=%c --grep="Show me Cargo") &&
	case $conv in session-md-????????????????) ;; *) false ;; esac &&
	instore md aptix log --format=%s "$conv" >log &&
	printf "%s\n" "Show me Cargo.toml" "What files are in the current directory?" >expect &&
	test_cmp expect log &&
	instore md aptix show --format=%A "$conv~1" >answer &&
	printf "%s\n" "I will check the directory listing for you. Here are the files:" "- src/" "- Cargo.toml" >expect &&
	test_cmp expect answer
'

test_expect_success 'session-md: a front matter that does not end imports nothing' '
	printf -- "---\nprovider: claude\n\n## User\n\nhi\n" >corrupt.md &&
	snapshot_state md >before &&
	test_expect_code 1 instore md aptix import session-md corrupt.md 2>err &&
	grep "front matter does not end" err &&
	snapshot_state md >after &&
	test_cmp before after
'

test_expect_success 'markdown: headings, turns, tool calls folded' '
	aptix export $CODEX_TOOL >tool.md &&
	grep "^# RUN: echo fixture-out" tool.md &&
	grep "^## Turn 1 " tool.md &&
	grep "<summary>Tool call <code>exec_command</code>" tool.md &&
	grep "<summary>Tool result (call_fake0003): error, exit code 3</summary>" tool.md &&
	# in the order it happened: asked, the call, its result, the answer
	grep -n -e "^\*\*User\*\*$" -e "<summary>Tool call" \
		-e "<summary>Tool result" -e "^\*\*Assistant\*\*$" tool.md |
		cut -d: -f2- | sed "s/<code>.*//; s/ (call.*//" >order &&
	printf "%s\n" "**User**" "<summary>Tool call " \
		"<summary>Tool result" "**Assistant**" >expect &&
	test_cmp expect order &&
	aptix export --all --format=markdown >all.md &&
	test $(grep -c "^## Turn " all.md) -ge $(wc -l <all-sessions)
'

test_expect_success 'a range: what B has that A has not' '
	aptix export --format=json $CODEX_PARENT~1..$CODEX_PARENT >range.json &&
	test $(grep -c "\"type\":\"snapshot\"" range.json) = 1
'

test_expect_success 'errors: bad format, unknown name, --all with session-md' '
	snapshot_state . >before &&
	test_expect_code 128 aptix export --format=pdf 2>err &&
	grep "unknown format .pdf." err &&
	test_expect_code 128 aptix export no-such-conversation 2>err &&
	grep "unknown conversation or session .no-such-conversation." err &&
	test_expect_code 128 aptix export --all --format=session-md 2>err &&
	grep "session-md holds one conversation" err &&
	test_expect_code 129 aptix export a b 2>err &&
	snapshot_state . >after &&
	test_cmp before after
'

test_expect_success 'errors: an unwritable -o leaves nothing behind' '
	echo file >plain &&
	test_expect_code 128 aptix export -o plain/out.md 2>err &&
	grep "cannot create .plain/out.md.: Not a directory" err &&
	test_expect_code 128 aptix export -o no/such/dir/out.md 2>err &&
	grep "cannot create .no/such/dir/out.md.: No such file" err &&
	test_must_fail aptix export >/dev/full 2>err &&
	test -s err
'

test_expect_success 'errors: a failed export does not replace the file' '
	echo keep >kept.md &&
	test_expect_code 128 aptix export -o kept.md no-such-conversation 2>err &&
	echo keep >expect &&
	test_cmp expect kept.md &&
	! ls kept.md.tmp-* 2>/dev/null
'

test_expect_success 'import: unknown tool names the new ones' '
	test_expect_code 128 aptix import nosuch 2>err &&
	grep "json, session-md" err
'

test_expect_success 'stop the stand-in' '
	stop_standin
'

test_done
