#!/bin/sh
# shellcheck disable=SC2034 # read by test-lib.sh
test_description='aptix diff: what changed in the context between two sessions

Instructions, active files (added, removed, changed by SHA-256), chunks
(added, removed by chunk id), model, previous response id and chain
restarts; --stat and --json; names resolved as everywhere (ids,
abbreviations, conversations, ~N); bad arguments.'
. "$(dirname "$0")"/test-lib.sh

SHA_A1=1111111111111111111111111111111111111111111111111111111111111111
SHA_B1=2222222222222222222222222222222222222222222222222222222222222222
SHA_B2=3333333333333333333333333333333333333333333333333333333333333333
SHA_C1=4444444444444444444444444444444444444444444444444444444444444444
SHA_D1=5555555555555555555555555555555555555555555555555555555555555555
CHUNK_KEPT=00000000-0000-0000-0000-000000000001
CHUNK_GONE=00000000-0000-0000-0000-000000000002
CHUNK_NEW=00000000-0000-0000-0000-000000000003

# file_ref <path> <sha256> <size>
file_ref () {
	printf '{"path":"%s","sha256":"%s","size":%s,"touched":true,"sent":true,"too_large":false,"binary":false}' "$1" "$2" "$3"
}

# chunk_ref <id> <path> <start> <end>
chunk_ref () {
	printf '{"chunk_id":"%s","path":"%s","start_line":%s,"end_line":%s,"content_hash":"ab","score_micro":500000,"sent":true}' "$1" "$2" "$3" "$4"
}

# session <conv> <seq> <instruction> <extra turn fields> [<parent>]:
# write a completed turn and its session; print the session id
session () {
	local instr turn
	instr=$(printf '%s' "$3" | aptix hash-object -w --stdin) &&
	turn=$(aptix write-turn --stdin <<-EOF
	{"conversation":"$1","seq":$2,"status":"completed",
	 "instruction":"$instr",
	 "created_at":${APTIX_TEST_DATE}000,"status_at":${APTIX_TEST_DATE}000,
	 "usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0,
	          "cached_tokens":0,"reasoning_tokens":0,"model_requests":0}
	 $4}
	EOF
	) &&
	aptix commit-session --created-at ${APTIX_TEST_DATE}000 \
		${5:+--parent "$5"} "$turn"
}

test_expect_success 'setup' '
	test_tick &&
	aptix init -q &&
	a=$(session c1 1 "Explain the parser" ",
		\"model\":\"gpt-a\",\"response_id\":\"resp_1\",
		\"files\":[$(file_ref a.c $SHA_A1 10),$(file_ref b.c $SHA_B1 20),
		           $(file_ref c.c $SHA_C1 30)],
		\"chunks\":[$(chunk_ref $CHUNK_KEPT src/p.c 1 20),
		            $(chunk_ref $CHUNK_GONE src/q.c 5 9)]") &&
	test_tick &&
	b=$(session c1 2 "Now fix the bug
in the lexer" ",
		\"model\":\"gpt-b\",\"response_id\":\"resp_2\",
		\"previous_response_id\":\"resp_1\",\"chain_restarted\":true,
		\"files\":[$(file_ref d.c $SHA_D1 2048),$(file_ref a.c $SHA_A1 10),
		           $(file_ref b.c $SHA_B2 25)],
		\"chunks\":[$(chunk_ref $CHUNK_NEW src/lex.c 100 140),
		            $(chunk_ref $CHUNK_KEPT src/p.c 1 20)]" $a) &&
	aptix update-ref refs/conversations/c1 $b &&
	same=$(session c2 1 "Explain the parser" ",
		\"model\":\"gpt-a\",
		\"files\":[$(file_ref a.c $SHA_A1 10),$(file_ref b.c $SHA_B1 20),
		           $(file_ref c.c $SHA_C1 30)],
		\"chunks\":[$(chunk_ref $CHUNK_GONE src/q.c 5 9),
		            $(chunk_ref $CHUNK_KEPT src/p.c 1 20)]") &&
	empty=$(session c3 1 "Explain the parser" "") &&
	aptix update-ref refs/conversations/c3 $empty
'

test_expect_success 'instructions, model, response ids, files, chunks' '
	aptix diff $a $b >out &&
	cat >expect <<-EOF &&
	diff $(echo $a | cut -c1-12) $(echo $b | cut -c1-12)
	Instructions:
	  - Explain the parser
	  + Now fix the bug
	  + in the lexer
	Model: gpt-a -> gpt-b
	Previous response id: (none) -> resp_1
	Chain restarted: no -> yes
	Files: 1 added, 1 removed, 1 changed
	  M b.c (sha256 222222222222 -> 333333333333)
	  D c.c (sha256 444444444444)
	  A d.c (sha256 555555555555)
	Chunks: 1 added, 1 removed
	  + $CHUNK_NEW src/lex.c:100-140
	  - $CHUNK_GONE src/q.c:5-9
	EOF
	test_cmp expect out
'

test_expect_success 'the other way round' '
	aptix diff $b $a >out &&
	grep "^  - Now fix the bug$" out &&
	grep "^  + Explain the parser$" out &&
	grep "^Model: gpt-b -> gpt-a$" out &&
	grep "^Chain restarted: yes -> no$" out &&
	grep "^  M b.c (sha256 333333333333 -> 222222222222)$" out &&
	grep "^  A c.c (sha256 444444444444)$" out &&
	grep "^  D d.c (sha256 555555555555)$" out &&
	grep "^  - $CHUNK_NEW src/lex.c:100-140$" out &&
	grep "^  + $CHUNK_GONE src/q.c:5-9$" out
'

test_expect_success 'the same context: "same" everywhere' '
	aptix diff $a $same >out &&
	cat >expect <<-EOF &&
	diff $(echo $a | cut -c1-12) $(echo $same | cut -c1-12)
	Instructions: same
	Model: same (gpt-a)
	Previous response id: same
	Chain restarted: same (no)
	Files: same (3)
	Chunks: same (2)
	EOF
	test_cmp expect out
'

test_expect_success 'a session against itself' '
	aptix diff $b $b >out &&
	grep "^Instructions: same$" out &&
	grep "^Previous response id: same (resp_1)$" out &&
	grep "^Chain restarted: same (yes)$" out &&
	grep "^Files: same (3)$" out
'

test_expect_success 'a turn without files or chunks' '
	aptix diff $a $empty >out &&
	grep "^Files: 0 added, 3 removed, 0 changed$" out &&
	grep "^  D a.c (sha256 111111111111)$" out &&
	grep "^Chunks: 0 added, 2 removed$" out &&
	grep "^Model: gpt-a -> (none)$" out
'

test_expect_success '--stat: counts and sizes' '
	aptix diff --stat $a $b >out &&
	cat >expect <<-EOF &&
	diff $(echo $a | cut -c1-12) $(echo $b | cut -c1-12)
	Instructions: changed
	Model: gpt-a -> gpt-b
	Previous response id: (none) -> resp_1
	Chain restarted: no -> yes
	Files: 1 added, 1 removed, 1 changed
	  M b.c  20 bytes -> 25 bytes
	  D c.c  30 bytes
	  A d.c  2.0 KiB
	Chunks: 1 added, 1 removed
	EOF
	test_cmp expect out
'

test_expect_success JQ '--json' '
	aptix diff --json $a $b >out &&
	jq -r "[.a, .b, .instructions.same, .instructions.b, .model.a,
		.model.b, .model.same, .previous_response_id.b,
		.chain_restarted.a, .chain_restarted.b] | map(tostring) |
		join(\"|\")" out >actual &&
	printf "%s\n" "$a|$b|false|Now fix the bug
in the lexer|gpt-a|gpt-b|false|resp_1|false|true" >expect &&
	test_cmp expect actual &&
	jq -r ".files.added[] | [.path, .sha256, .size] | map(tostring) | join(\" \")" out >actual &&
	echo "d.c $SHA_D1 2048" >expect &&
	test_cmp expect actual &&
	jq -r ".files.removed[].path" out >actual &&
	echo c.c >expect &&
	test_cmp expect actual &&
	jq -r ".files.changed[] | [.path, .sha256_a, .sha256_b, .size_a, .size_b] | map(tostring) | join(\" \")" out >actual &&
	echo "b.c $SHA_B1 $SHA_B2 20 25" >expect &&
	test_cmp expect actual &&
	jq -r ".chunks.added[] | [.chunk_id, .path, .start_line, .end_line] | map(tostring) | join(\" \")" out >actual &&
	echo "$CHUNK_NEW src/lex.c 100 140" >expect &&
	test_cmp expect actual &&
	jq -r ".chunks.removed[].chunk_id" out >actual &&
	echo $CHUNK_GONE >expect &&
	test_cmp expect actual &&
	jq -r ".stat | [.files_added, .files_removed, .files_changed, .chunks_added, .chunks_removed] | map(tostring) | join(\" \")" out >actual &&
	echo "1 1 1 1 1" >expect &&
	test_cmp expect actual
'

test_expect_success JQ '--json: the same context' '
	aptix diff --json $a $same >out &&
	jq -e ".instructions.same and .model.same and .previous_response_id.same and .chain_restarted.same" out &&
	test "$(jq -c "[.files.added, .files.removed, .files.changed, .chunks.added, .chunks.removed]" out)" = "[[],[],[],[],[]]"
'

test_expect_success 'names: abbreviations, conversations, ~N' '
	aptix diff $a $b >expect &&
	aptix diff $(echo $a | cut -c1-8) c1 >out &&
	test_cmp expect out &&
	aptix diff c1~1 c1 >out &&
	test_cmp expect out
'

test_expect_success 'bad arguments' '
	test_expect_code 128 aptix diff $a 2>err &&
	grep "^fatal: .* no parent to compare with" err &&
	test_expect_code 129 aptix diff $a $b $b 2>err &&
	grep "^usage: aptix diff" err &&
	test_expect_code 129 aptix diff 2>err &&
	test_expect_code 128 aptix diff $a nosuchname 2>err &&
	grep "^fatal: " err &&
	turn=$(aptix rev-parse "$a^{turn}") &&
	test_expect_code 128 aptix diff $a $turn 2>err &&
	grep "^fatal: .* is a turn, not a session" err
'

test_expect_success 'diff -h' '
	test_expect_code 129 aptix diff -h >out &&
	grep "^usage: aptix diff \[--stat\] \[--json\] \[--no-pager\] <session-a> <session-b>" out &&
	aptix --list-cmds=porcelain >cmds &&
	grep -x diff cmds &&
	aptix help >help &&
	grep "^   diff  *show what changed in the context between two sessions$" help
'

test_done
