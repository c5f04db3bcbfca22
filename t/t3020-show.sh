#!/bin/sh
test_description='aptix show: one turn explained for a person'
. "$(dirname "$0")"/test-lib.sh

# shellcheck disable=SC2034 # used in the test bodies
ESC=$(printf '\033')

# usage <input> <cached> <output> <reasoning> <total> <requests>
usage_json () {
	printf '{"cached_tokens":%s,"input_tokens":%s,"model_requests":%s,"output_tokens":%s,"reasoning_tokens":%s,"total_tokens":%s}' \
		"$2" "$1" "$6" "$3" "$4" "$5"
}

# store_session <turn> <status> [<parent>] [<title>]: a session of c1
store_session () {
	local parent='' meta='{"session_type":"agent"}'
	test -n "${3-}" && parent="\"parent\":\"$3\","
	test -n "${4-}" && meta="{\"session_type\":\"agent\",\"title\":\"$4\"}"
	printf '{"conversation":"c1","created_at":%s,"metadata":%s,%s"run_summary":{"duration_ms":1500,"usage":{"completion_tokens":5,"model_requests":1,"prompt_tokens":10,"total_tokens":15}},"status":"%s","turn":"%s","v":1}\n' \
		"${APTIX_TEST_DATE}000" "$meta" "$parent" "$2" "$1" |
	aptix hash-object -w -t session --stdin
}

test_expect_success setup '
	aptix init -q &&
	test_tick &&
	instr=$(printf "Explain the parser\nin detail, please\n" | aptix hash-object -w --stdin) &&
	answer=$(printf "The parser is LL(1).\n\nIt has ${ESC}[31mtwo${ESC}[0m passes.\n" | aptix hash-object -w --stdin) &&
	request=$(printf "{\"model\":\"gpt-5\",\"input\":\"Explain the parser\",\"store\":true}" | aptix hash-object -w --stdin) &&
	response=$(printf "{\"id\":\"resp_1\"}" | aptix hash-object -w --stdin) &&
	h1=$(printf "%064d" 1) && h2=$(printf "%064d" 2) &&
	sha=abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789 &&
	chunks="[{\"chunk_id\":\"6f1c2d3e-0000-4000-8000-000000000001\",\"content_hash\":\"$h1\",\"end_line\":42,\"path\":\"src/parse.c\",\"score_micro\":873000,\"sent\":true,\"start_line\":10},{\"chunk_id\":\"6f1c2d3e-0000-4000-8000-000000000002\",\"content_hash\":\"$h2\",\"end_line\":9,\"path\":\"src/lex.c\",\"score_micro\":512000,\"sent\":false,\"start_line\":1}]" &&
	files="[{\"binary\":false,\"path\":\"src/main.c\",\"sent\":true,\"sha256\":\"$sha\",\"size\":1234,\"too_large\":false,\"touched\":true},{\"binary\":false,\"path\":\"README\",\"sent\":false,\"sha256\":\"$sha\",\"size\":10,\"too_large\":false,\"touched\":false},{\"binary\":false,\"path\":\"big.log\",\"sent\":false,\"sha256\":\"$sha\",\"size\":5000000,\"too_large\":true,\"touched\":false},{\"binary\":true,\"path\":\"logo.png\",\"sent\":false,\"sha256\":\"$sha\",\"size\":2048,\"too_large\":false,\"touched\":false}]" &&
	printf "{\"answer\":\"%s\",\"chain_expires_at\":1700003600000,\"chunks\":%s,\"conversation\":\"c1\",\"created_at\":1700000000000,\"files\":%s,\"instruction\":\"%s\",\"model\":\"gpt-5\",\"previous_response_id\":\"resp_0\",\"request\":\"%s\",\"response\":\"%s\",\"response_at\":1700000001500,\"response_id\":\"resp_1\",\"seq\":1,\"status\":\"completed\",\"status_at\":1700000001500,\"usage\":%s,\"v\":1,\"warnings\":[\"2 files were too large\"]}\n" \
		$answer "$chunks" "$files" $instr $request $response \
		"$(usage_json 10 4 5 2 15 1)" >turn1.json &&
	turn1=$(aptix hash-object -w -t turn turn1.json) &&
	s1=$(store_session $turn1 committed "" "Parser work") &&
	aptix update-ref refs/conversations/c1 $s1 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success 'show HEAD explains the turn' '
	aptix show >out &&
	aptix show HEAD >out2 &&
	test_cmp out out2 &&
	cat >expect <<-EOF &&
	session $s1
	Status:               committed
	Parent:               none (first turn of the conversation)
	Conversation:         c1 (Parser work)
	Turn:                 #1 $turn1
	Created:              Tue Nov 14 22:13:20 2023 +0000
	Response:             Tue Nov 14 22:13:21 2023 +0000
	Duration:             1.5 s
	Model:                gpt-5
	Response id:          resp_1
	Previous response id: resp_0
	Chain expires:        Tue Nov 14 23:13:20 2023 +0000
	Usage:                input 10 (cached 4), output 5 (reasoning 2), total 15 tokens; 1 request
	EOF
	sed -n "1,/^Usage:/p" out >head &&
	test_cmp expect head
'

test_expect_success 'the full instruction and answer follow' '
	sed -n "/^Instruction:/,/^Sources:/p" out >body &&
	cat >expect <<-EOF &&
	Instruction:
	    Explain the parser
	    in detail, please

	Answer:
	    The parser is LL(1).

	    It has ${ESC}[31mtwo${ESC}[0m passes.

	Sources:
	EOF
	test_cmp expect body
'

test_expect_success 'sources, active files and warnings' '
	sed -n "/^Sources:/,\$p" out >tail &&
	cat >expect <<-\EOF &&
	Sources:
	    src/parse.c:10-42  score 0.873  sent
	    src/lex.c:1-9  score 0.512  already sent

	Active files:
	    src/main.c  1.2 KiB  sha256 abcdef012345  sent, touched
	    README  10 bytes  sha256 abcdef012345  unchanged
	    big.log  4.8 MiB  sha256 abcdef012345  too large
	    logo.png  2.0 KiB  sha256 abcdef012345  binary

	Warnings:
	    2 files were too large
	EOF
	test_cmp expect tail
'

test_expect_success 'an expired chain is marked' '
	APTIX_TEST_DATE=1700003600 aptix show >out &&
	grep "^Chain expires: *Tue Nov 14 23:13:20 2023 +0000 (expired)$" out &&
	APTIX_TEST_DATE=1700003599 aptix show >out &&
	grep "^Chain expires: *Tue Nov 14 23:13:20 2023 +0000$" out
'

test_expect_success 'an answer with escape sequences goes raw to a pipe' '
	aptix show >out &&
	grep "It has ${ESC}\[31mtwo${ESC}\[0m passes" out
'

test_lazy_prereq SCRIPT '
	script -qc true /dev/null </dev/null >/dev/null 2>&1
'

test_expect_success SCRIPT 'on a terminal escape sequences are made harmless' '
	script -qc "aptix show" /dev/null </dev/null >tty.raw &&
	tr -d "\015" <tty.raw >tty &&
	grep "It has ^\[\[31mtwo^\[\[0m passes" tty &&
	! grep "$ESC" tty
'

test_expect_success 'a continuation shows its parent; any name works' '
	test_tick &&
	i2=$(printf "And the lexer?\n" | aptix hash-object -w --stdin) &&
	a2=$(printf "Hand-written.\n" | aptix hash-object -w --stdin) &&
	printf "{\"answer\":\"%s\",\"conversation\":\"c1\",\"created_at\":%s,\"instruction\":\"%s\",\"model\":\"gpt-5\",\"previous_response_id\":\"resp_1\",\"response_id\":\"resp_2\",\"seq\":2,\"status\":\"completed\",\"status_at\":%s,\"usage\":%s,\"v\":1}\n" \
		$a2 ${APTIX_TEST_DATE}000 $i2 ${APTIX_TEST_DATE}000 \
		"$(usage_json 20 0 3 0 23 2)" >turn2.json &&
	turn2=$(aptix hash-object -w -t turn turn2.json) &&
	s2=$(store_session $turn2 committed $s1) &&
	aptix update-ref refs/conversations/c1 $s2 $s1 &&
	aptix show >out &&
	grep "^session $s2$" out &&
	grep "^Parent: *$s1$" out &&
	grep "^Usage:.*; 2 requests$" out &&
	! grep "^Chain expires:" out &&
	! grep "^Sources:" out &&
	aptix show HEAD~1 >out &&
	grep "^session $s1$" out &&
	aptix show $(echo $s1 | cut -c1-10) >out2 &&
	test_cmp out out2 &&
	aptix show c1 >out &&
	grep "^session $s2$" out
'

test_expect_success 'a failed turn puts its errors first' '
	test_tick &&
	i3=$(printf "Refactor everything\n" | aptix hash-object -w --stdin) &&
	err="HTTP 500: upstream \\u001b]0;pwned\\u0007 error" &&
	printf "{\"conversation\":\"c1\",\"created_at\":%s,\"errors\":[\"%s\"],\"instruction\":\"%s\",\"model\":\"gpt-5\",\"response_at\":%s,\"seq\":3,\"status\":\"failed\",\"status_at\":%s,\"usage\":%s,\"v\":1}\n" \
		${APTIX_TEST_DATE}000 "$err" $i3 ${APTIX_TEST_DATE}000 ${APTIX_TEST_DATE}000 \
		"$(usage_json 0 0 0 0 0 1)" >turn3.json &&
	turn3=$(aptix hash-object -w -t turn turn3.json) &&
	s3=$(store_session $turn3 failed $s2) &&
	aptix show $s3 >out &&
	grep "^Status: *failed$" out &&
	sed -n "/^Errors:/,/^Instruction:/p" out >errs &&
	printf "Errors:\n    HTTP 500: upstream \033]0;pwned\007 error\n\nInstruction:\n" >expect &&
	test_cmp expect errs &&
	! grep "^Answer:" out
'

test_expect_success SCRIPT 'error messages are sanitized on a terminal' '
	script -qc "aptix show $s3" /dev/null </dev/null >tty.raw &&
	tr -d "\015" <tty.raw >tty &&
	grep "HTTP 500: upstream ^\[\]0;pwned^G error" tty &&
	! grep "$ESC" tty
'

test_expect_success '--raw adds the payload ids and the request' '
	aptix show --raw $s1 >out &&
	grep "^Request payload: *$request$" out &&
	grep "^Response payload: *$response$" out &&
	sed -n "/^Request:/,/^\$/p" out | sed "/^\$/d" >req &&
	cat >expect <<-\EOF &&
	Request:
	    {
	      "model": "gpt-5",
	      "input": "Explain the parser",
	      "store": true
	    }
	EOF
	test_cmp expect req &&
	aptix show $s1 >plain &&
	! grep "^Request" plain
'

test_expect_success '--json prints one object' '
	aptix show --json $s1 >out &&
	grep "^  \"session\": \"$s1\",$" out &&
	grep "^  \"answer\": \"The parser is LL(1).\\\\n\\\\nIt has \\\\u001B\[31mtwo" out &&
	! grep "$ESC" out
'

test_expect_success JQ '--json has every field' '
	aptix show --json $s1 >out &&
	jq -r "[.session, .status, .parent, .conversation, .title, .created_at,
		.created_at_ms, .response_at, .response_at_ms, .duration_ms,
		.model, .response_id, .previous_response_id,
		.chain_expires_at, .chain_expired, .turn_status] | map(tostring) | join(\" \")" out >actual &&
	echo "$s1 committed null c1 Parser work 2023-11-14T22:13:20.000Z 1700000000000 2023-11-14T22:13:21.500Z 1700000001500 1500 gpt-5 resp_1 resp_0 2023-11-14T23:13:20.000Z false completed" >expect &&
	test_cmp expect actual &&
	jq -r ".usage | [.input_tokens, .cached_tokens, .output_tokens, .reasoning_tokens, .total_tokens, .model_requests] | map(tostring) | join(\" \")" out >actual &&
	echo "10 4 5 2 15 1" >expect &&
	test_cmp expect actual &&
	jq -r ".instruction, .instruction_id, .answer_id, .request_payload_id, .response_payload_id" out >actual &&
	printf "Explain the parser\nin detail, please\n\n%s\n%s\n%s\n%s\n" $instr $answer $request $response >expect &&
	test_cmp expect actual &&
	jq -r ".sources[] | \"\(.path):\(.start_line)-\(.end_line) \(.score) \(.sent)\"" out >actual &&
	test_write_lines "src/parse.c:10-42 0.873 true" "src/lex.c:1-9 0.512 false" >expect &&
	test_cmp expect actual &&
	jq -r ".files[] | \"\(.path) \(.size) \(.state) \(.sha256[0:6])\"" out >actual &&
	test_write_lines "src/main.c 1234 sent abcdef" "README 10 unchanged abcdef" \
		"big.log 5000000 too large abcdef" "logo.png 2048 binary abcdef" >expect &&
	test_cmp expect actual &&
	jq -r ".warnings[], (.errors | length)" out >actual &&
	test_write_lines "2 files were too large" 0 >expect &&
	test_cmp expect actual &&
	aptix show --json --raw $s1 | jq -r .request_payload.model >actual &&
	echo gpt-5 >expect &&
	test_cmp expect actual &&
	aptix show --json $s3 | jq -r ".failed, .status, .turn_status, .answer, .errors[0][0:9]" >actual &&
	test_write_lines true failed failed null "HTTP 500:" >expect &&
	test_cmp expect actual
'

test_expect_success 'a name that is not a session is fatal' '
	test_must_fail aptix show $turn1 2>err &&
	grep "^fatal: .$turn1. is a turn, not a session" err &&
	test_must_fail aptix show $instr 2>err &&
	grep "is a blob, not a session" err &&
	test_must_fail aptix show no-such-thing 2>err &&
	grep "^fatal: " err
'

test_expect_success 'an unborn HEAD is fatal' '
	aptix symbolic-ref HEAD refs/conversations/empty &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	test_must_fail aptix show 2>err &&
	grep "^fatal: " err
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix show -h >out &&
	grep "^usage: aptix show" out
'

test_expect_success 'show A B shows both, as git does' '
	aptix show --no-pager $s1 >one &&
	aptix show --no-pager $s2 >two &&
	{ cat one && echo && cat two; } >expect &&
	aptix show --no-pager $s1 $s2 >actual &&
	test_cmp expect actual &&
	aptix show --json $s1 $s2 >both &&
	head -n 1 both >first &&
	echo "[" >expect &&
	test_cmp expect first &&
	grep "^    \"session\": \"$s1\",$" both &&
	grep "^    \"session\": \"$s2\",$" both &&
	test_must_fail aptix show $s1 no-such-thing >out 2>err &&
	test_must_be_empty out &&
	grep "^fatal: " err
'

test_done
