#!/bin/sh
test_description='aptix status and aptix switch'
. "$(dirname "$0")"/test-lib.sh

# new_turn <conv> <instruction> <status> [<seq>]: print the turn's id
new_turn () {
	local ms=${APTIX_TEST_DATE}000 instr errors=
	test "$3" = failed && errors='"errors":["HTTP 500: upstream exploded","retries exhausted"],'
	instr=$(printf '%s\n' "$2" | aptix hash-object -w --stdin) &&
	printf '{"conversation":"%s","created_at":%s,%s"instruction":"%s","seq":%s,"status":"%s","status_at":%s,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}\n' \
		"$1" "$ms" "$errors" "$instr" "${4:-1}" "$3" "$ms" |
	aptix hash-object -w -t turn --stdin
}

# new_session <conv> <instruction> <status> [<parent>] [<title>]
new_session () {
	local parent='' meta='{"session_type":"agent"}' turn tstatus=completed
	test -n "${4-}" && parent="\"parent\":\"$4\","
	test -n "${5-}" && meta="{\"session_type\":\"agent\",\"title\":\"$5\"}"
	test "$3" = failed && tstatus=failed
	turn=$(new_turn "$1" "$2" $tstatus) &&
	printf '{"conversation":"%s","created_at":%s,"metadata":%s,%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":0,"prompt_tokens":0,"total_tokens":0}},"status":"%s","turn":"%s","v":1}\n' \
		"$1" "${APTIX_TEST_DATE}000" "$meta" "$parent" "$3" "$turn" |
	aptix hash-object -w -t session --stdin
}

test_expect_success 'a new store: on a conversation with no turns' '
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix status >out &&
	cat >expect <<-EOF &&
	On conversation $conv
	No turns yet.
	EOF
	test_cmp expect out
'

test_expect_success setup '
	test_tick &&
	s1=$(new_session c1 "First question" committed "" "The c1 talk") &&
	test_tick &&
	s2=$(new_session c1 "Second question" committed $s1) &&
	aptix update-ref refs/conversations/c1 $s2 &&
	test_tick &&
	p1=$(new_session project-one "One" committed "" "Project one") &&
	p2=$(new_session project-two "Two" committed) &&
	aptix update-ref refs/conversations/project-one $p1 &&
	aptix update-ref refs/conversations/project-two $p2
'

test_expect_success 'switch to a conversation' '
	aptix switch c1 >out &&
	echo "Switched to conversation '\''c1'\'' (The c1 talk)" >expect &&
	test_cmp expect out &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual &&
	aptix reflog HEAD >log &&
	head -n 1 log >actual &&
	grep "HEAD@{0}: switch: moving from .* to c1$" actual
'

test_expect_success 'status shows the head' '
	aptix status >out &&
	cat >expect <<-EOF &&
	On conversation c1 (The c1 talk)
	Head: $(echo $s2 | cut -c1-12) Second question  (2023-11-14 22:14 UTC)
	EOF
	test_cmp expect out
'

test_expect_success 'status: local time (TZ), --date' '
	TZ=JST-9 aptix status >out &&
	grep "^Head: .* Second question  (2023-11-15 07:14 JST)$" out &&
	TZ=JST-9 aptix status --date=iso >out &&
	grep "^Head: .* Second question  (2023-11-15 07:14:20 +0900)$" out
'

test_expect_success 'switch again: already there' '
	aptix switch c1 >out &&
	grep "^Already on conversation .c1. (The c1 talk)$" out &&
	aptix reflog HEAD >log2 &&
	test_cmp log log2
'

test_expect_success 'switch by unique prefix' '
	aptix switch project-o >out &&
	grep "^Switched to conversation .project-one. (Project one)$" out &&
	test "$(aptix symbolic-ref HEAD)" = refs/conversations/project-one
'

test_expect_success 'an ambiguous or unknown conversation is fatal' '
	test_must_fail aptix switch proj 2>err &&
	grep "^fatal: .*ambiguous" err &&
	test_must_fail aptix switch nope 2>err &&
	grep "^fatal: conversation .nope. not found" err &&
	test_must_fail aptix switch "bad id" 2>err &&
	grep "^fatal: " err &&
	test "$(aptix symbolic-ref HEAD)" = refs/conversations/project-one
'

test_expect_success 'switch -c starts a new empty conversation' '
	aptix switch -c >out &&
	id=$(sed -n "s/^Switched to a new conversation .\(.*\).$/\1/p" out) &&
	echo "$id" | grep -E "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$" &&
	test "$(aptix symbolic-ref HEAD)" = "refs/conversations/$id" &&
	aptix reflog HEAD | head -n 1 | grep "switch: moving from .* to $id$" &&
	aptix status >out &&
	printf "On conversation %s\nNo turns yet.\n" "$id" >expect &&
	test_cmp expect out &&
	aptix switch --create >out2 &&
	! test_cmp out out2
'

test_expect_success 'switch -c with a name' '
	aptix switch -c my-topic >out &&
	echo "Switched to a new conversation '\''my-topic'\''" >expect &&
	test_cmp expect out &&
	test "$(aptix symbolic-ref HEAD)" = refs/conversations/my-topic &&
	test_must_fail aptix switch -c c1 2>err &&
	grep "^fatal: conversation .c1. already exists" err &&
	test_must_fail aptix switch -c "a/b" 2>err &&
	grep "^fatal: " err &&
	test "$(aptix symbolic-ref HEAD)" = refs/conversations/my-topic
'

test_expect_success 'switch usage' '
	test_expect_code 129 aptix switch -h >out &&
	grep "^usage: aptix switch" out &&
	test_expect_code 129 aptix switch 2>err &&
	test_expect_code 129 aptix switch c1 project-one 2>err &&
	test_expect_code 129 aptix switch -c a b 2>err
'

test_expect_success 'status shows a failed turn newer than the head' '
	aptix switch c1 &&
	test_tick &&
	f3=$(new_session c1 "Third question" failed $s2) &&
	aptix status >out &&
	short=$(echo $f3 | cut -c1-12) &&
	cat >expect <<-EOF &&
	On conversation c1 (The c1 talk)
	Head: $(echo $s2 | cut -c1-12) Second question  (2023-11-14 22:14 UTC)

	Last turn failed (2023-11-14 22:16 UTC):
	  session $short  Third question
	  error: HTTP 500: upstream exploded
	  error: retries exhausted
	  retry it with: aptix rerun $short
	EOF
	test_cmp expect out &&
	aptix rev-parse $short >actual &&
	echo $f3 >expect &&
	test_cmp expect actual
'

test_expect_success 'only the last failed turn is shown' '
	test_tick &&
	f4=$(new_session c1 "Fourth question" failed $s2) &&
	aptix status >out &&
	grep "^  session $(echo $f4 | cut -c1-12)  Fourth question$" out &&
	! grep "Third question" out
'

test_expect_success 'a failed turn older than the head is not shown' '
	test_tick &&
	s5=$(new_session c1 "Fourth question, again" committed $s2) &&
	aptix update-ref refs/conversations/c1 $s5 $s2 &&
	aptix status >out &&
	! grep "failed" out &&
	! grep "rerun" out &&
	grep "^Head: $(echo $s5 | cut -c1-12) Fourth question, again" out
'

test_expect_success 'failed turns of other conversations are not shown' '
	test_tick &&
	new_session project-two "Broken" failed $p2 &&
	aptix status >out &&
	! grep "Broken" out
'

test_lazy_prereq LMDB_UTILS 'mdb_dump -V && python3 -c "import sys"'

test_expect_success LMDB_UTILS 'status lists the turns in flight; a dead one is recovered' '
	pending=$(new_turn c1 "Still thinking" pending 4) &&
	dead=$(new_turn project-two "Left behind" pending 2) &&
	pi=$(printf "Still thinking\n" | aptix hash-object --stdin) &&
	di=$(printf "Left behind\n" | aptix hash-object --stdin) &&
	pbytes=$(aptix cat-object turn $pending | sed "s/\"/\\\\\"/g") &&
	dbytes=$(aptix cat-object turn $dead | sed "s/\"/\\\\\"/g") &&
	host=$(uname -n) &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put running c1 \
		"{\"host\":\"$host\",\"instruction\":\"$pi\",\"parent\":\"$s5\",\"pending\":\"$pbytes\\n\",\"pid\":$$,\"since\":1700000500000,\"start\":0,\"turn\":\"$pending\"}" &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put running project-two \
		"{\"host\":\"$host\",\"instruction\":\"$di\",\"parent\":\"$p2\",\"pending\":\"$dbytes\\n\",\"pid\":$$,\"since\":1700000400000,\"start\":1,\"turn\":\"$dead\"}" &&
	aptix status >out &&
	sed -n "/^Turns in flight:/,\$p" out >actual &&
	cat >expect <<-EOF &&
	Turns in flight:
	  c1  pid $$  since 2023-11-14T22:21:40.000Z  host $host  running
	      Still thinking
	EOF
	test_cmp expect actual &&
	aptix log --oneline --all >log &&
	grep "\[failed\] Left behind" log
'

test_expect_success JQ 'status --json' '
	test_tick &&
	f6=$(new_session c1 "Sixth question" failed $s5) &&
	aptix status --json >out &&
	jq -r "[.conversation, .title, .head.session, .head.summary,
		.head.created_at, .last_failed.session,
		.last_failed.instruction, .last_failed.retry,
		(.last_failed.errors | join(\";\"))] | join(\"|\")" out >actual &&
	echo "c1|The c1 talk|$s5|Fourth question, again|2023-11-14T22:18:20.000Z|$f6|Sixth question|aptix rerun $(echo $f6 | cut -c1-12)|HTTP 500: upstream exploded;retries exhausted" >expect &&
	test_cmp expect actual
'

test_expect_success JQ,LMDB_UTILS 'status --json lists the turns in flight' '
	aptix status --json >out &&
	jq -r ".running[] | [.conversation, .state, .pid, .since, .since_ms, .turn, .instruction] | map(tostring) | join(\"|\")" out >actual &&
	cat >expect <<-EOF &&
	c1|running|$$|2023-11-14T22:21:40.000Z|1700000500000|$pending|Still thinking
	EOF
	test_cmp expect actual
'

test_expect_success JQ 'status --json on a new conversation' '
	aptix switch -c fresh &&
	aptix status --json >out &&
	jq -r "[.conversation, .title, .head, .last_failed] | map(tostring) | join(\"|\")" out >actual &&
	echo "fresh|null|null|null" >expect &&
	test_cmp expect actual
'

test_expect_success 'a detached HEAD' '
	aptix update-ref --no-deref HEAD $s5 &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	aptix status >out &&
	grep "^HEAD detached at $(echo $s5 | cut -c1-12)$" out
'

test_expect_success 'status usage' '
	test_expect_code 129 aptix status -h >out &&
	grep "^usage: aptix status" out &&
	test_expect_code 129 aptix status extra 2>err
'

test_done
