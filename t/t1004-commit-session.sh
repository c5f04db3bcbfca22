#!/bin/sh

test_description='aptix commit-session: session snapshots, like commit-tree

Roots and children, fields from options and from loose JSON, defaults;
no ref moves but the index follows; parents that are not sessions and
other bad input are fatal and write nothing.'

. "$(dirname "$0")"/test-lib.sh

count_objects () {
	aptix cat-object --batch-check --batch-all-objects >objects.list &&
	wc -l <objects.list | tr -d " "
}

# expect_fatal <pattern> <command>...: see t1003
expect_fatal () {
	local pattern=$1 before after
	shift
	before=$(count_objects) &&
	test_expect_code 128 "$@" >out 2>err &&
	test_must_be_empty out &&
	test_line_count -eq 1 err &&
	grep "^fatal: " err &&
	grep -e "$pattern" err &&
	after=$(count_objects) &&
	test "$before" = "$after"
}

commit_stdin () {
	local file=$1
	shift
	aptix commit-session --stdin "$@" <"$file"
}

# shellcheck disable=SC2034 # used in the test bodies
zero_usage='"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":0,"prompt_tokens":0,"total_tokens":0}}'

test_expect_success 'setup' '
	aptix init -q &&
	t1=$(aptix write-turn --conversation c1 --seq 1 \
		--instruction-text "first" --answer-text "one" \
		--created-at 1700000000000) &&
	t2=$(aptix write-turn --conversation c1 --seq 2 \
		--instruction-text "second" --answer-text "two" \
		--created-at 1700000060000) &&
	t3=$(aptix write-turn --conversation c2 --seq 1 \
		--instruction-text "other" --created-at 1700000120000) &&
	blob=$(echo text | aptix hash-object -w --stdin) &&
	nowhere=$(echo nowhere | aptix hash-object --stdin)
'

test_expect_success '-h shows the usage' '
	test_expect_code 129 aptix commit-session -h >out &&
	grep "^usage: aptix commit-session" out &&
	grep -e "--parent" out
'

test_expect_success 'a root session with the defaults' '
	s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
	test "$(aptix cat-object -t $s1)" = session &&
	cat >expect <<-EOF &&
	{"conversation":"c1","created_at":1700000001000,"metadata":{"session_type":"agent","transport":"sse"},$zero_usage,"status":"committed","turn":"$t1","v":1}
	EOF
	aptix cat-object session $s1 >actual &&
	test_cmp expect actual
'

test_expect_success 'the same snapshot again has the same id' '
	before=$(count_objects) &&
	test "$(aptix commit-session --created-at 1700000001000 $t1)" = $s1 &&
	test "$(count_objects)" = "$before"
'

test_expect_success 'created_at defaults to now (APTIX_TEST_DATE)' '
	test_tick &&
	s=$(aptix commit-session $t1) &&
	aptix cat-object session $s >actual &&
	grep "\"created_at\":${APTIX_TEST_DATE}000," actual
'

test_expect_success 'a child session; names may be abbreviated' '
	s2=$(aptix commit-session -p $(echo $s1 | cut -c1-10) \
		--created-at 1700000061000 $(echo $t2 | cut -c1-10)) &&
	cat >expect <<-EOF &&
	{"conversation":"c1","created_at":1700000061000,"metadata":{"session_type":"agent","transport":"sse"},"parent":"$s1",$zero_usage,"status":"committed","turn":"$t2","v":1}
	EOF
	aptix cat-object session $s2 >actual &&
	test_cmp expect actual
'

test_expect_success 'every field from the options' '
	s=$(aptix commit-session --parent $s2 --status failed --title "A title" \
		--duration-ms 1234 --usage 10,20,30,2 --workspace /w \
		--created-at 1700000062000 $t2) &&
	cat >expect <<-EOF &&
	{"conversation":"c1","created_at":1700000062000,"metadata":{"session_type":"agent","title":"A title","transport":"sse","workspace":"/w"},"parent":"$s2","run_summary":{"duration_ms":1234,"usage":{"completion_tokens":20,"model_requests":2,"prompt_tokens":10,"total_tokens":30}},"status":"failed","turn":"$t2","v":1}
	EOF
	aptix cat-object session $s >actual &&
	test_cmp expect actual
'

test_expect_success 'a fork: another conversation with --forked-from' '
	expect_fatal "the turn belongs to conversation .c1., the session to .c3." \
		aptix commit-session -p $s2 --conversation c3 $t2 &&
	s=$(aptix commit-session -p $s2 --conversation c3 --forked-from c1 \
		--created-at 1700000063000 $t2) &&
	aptix cat-object session $s >actual &&
	grep "\"conversation\":\"c3\"" actual &&
	grep "\"forked_from\":\"c1\"" actual
'

test_expect_success 'a session from JSON; options and the argument override it' '
	cat >session.json <<-EOF &&
	{
	  "turn": "$t3",
	  "status": "awaiting_tool_results",
	  "created_at": 1700000121000,
	  "run_summary": {"duration_ms": 5,
	                  "usage": {"prompt_tokens": 1, "completion_tokens": 2,
	                            "total_tokens": 3, "model_requests": 1}},
	  "metadata": {"transport": "stream", "title": "From JSON"}
	}
	EOF
	s=$(commit_stdin session.json) &&
	cat >expect <<-EOF &&
	{"conversation":"c2","created_at":1700000121000,"metadata":{"session_type":"agent","title":"From JSON","transport":"stream"},"run_summary":{"duration_ms":5,"usage":{"completion_tokens":2,"model_requests":1,"prompt_tokens":1,"total_tokens":3}},"status":"awaiting_tool_results","turn":"$t3","v":1}
	EOF
	aptix cat-object session $s >actual &&
	test_cmp expect actual &&
	s=$(commit_stdin session.json --status committed --duration-ms 9 \
		--title T -p $s1 $t1) &&
	aptix cat-object session $s >actual &&
	grep "\"conversation\":\"c1\"" actual &&
	grep "\"turn\":\"$t1\"" actual &&
	grep "\"parent\":\"$s1\"" actual &&
	grep "\"status\":\"committed\"" actual &&
	grep "\"duration_ms\":9," actual &&
	grep "\"title\":\"T\"" actual &&
	grep "\"transport\":\"stream\"" actual &&
	grep "\"prompt_tokens\":1," actual
'

test_expect_success 'no ref moves; the index knows the sessions' '
	aptix fsck >out &&
	grep "^dangling session" out &&
	! grep -v "^dangling" out
'

test_expect_success PYTHON3 'no ref moves (store level)' '
	test_must_fail python3 "$TEST_DIRECTORY/lib-store.py" .aptix \
		get refs refs/conversations/c1 &&
	test_must_fail python3 "$TEST_DIRECTORY/lib-store.py" .aptix \
		get refs refs/conversations/c2
'

test_expect_success 'the parent must be a session' '
	expect_fatal "parent .$t1. is a turn, not a session" \
		aptix commit-session -p $t1 $t2 &&
	expect_fatal "parent .$blob. is a blob, not a session" \
		aptix commit-session -p $blob $t2 &&
	expect_fatal "parent .$nowhere. does not exist" \
		aptix commit-session -p $nowhere $t2 &&
	expect_fatal "." aptix commit-session -p no-such-name $t2
'

test_expect_success 'the turn must be a turn' '
	expect_fatal "turn .$s1. is a session, not a turn" \
		aptix commit-session $s1 &&
	expect_fatal "turn .$blob. is a blob, not a turn" \
		aptix commit-session $blob &&
	expect_fatal "turn .$nowhere. does not exist" \
		aptix commit-session $nowhere &&
	echo "{\"turn\": \"$blob\"}" >turn-blob.json &&
	expect_fatal "turn .$blob. is a blob, not a turn" \
		commit_stdin turn-blob.json
'

test_expect_success 'bad field values are fatal' '
	expect_fatal "field .status. is not a known status" \
		aptix commit-session --status nope $t1 &&
	expect_fatal "invalid conversation id" \
		aptix commit-session --conversation "bad id" $t1 &&
	expect_fatal "field .conversation. is empty" \
		aptix commit-session --conversation "" $t1
'

while IFS='	' read -r name pattern json
do
	test_expect_success "malformed JSON input: $name" "
		printf '%s' '$json' | sed \"s/TURN/\$t1/; s/BLOB/\$blob/\" >bad.json &&
		expect_fatal \"$pattern\" commit_stdin bad.json
	"
done <<\EOF
bad-json	session: malformed JSON at line 1	{"turn":
not-an-object	session: input must be a JSON object	[]
wrong-type	field 'created_at' must be an integer	{"turn": "TURN", "created_at": "now"}
unknown-field	session: field 'colour' is unknown	{"turn": "TURN", "colour": 1}
unknown-metadata	metadata: field 'colour' is unknown	{"turn": "TURN", "metadata": {"colour": 1}}
unknown-usage	usage: field 'coins' is unknown	{"turn": "TURN", "run_summary": {"usage": {"coins": 1}}}
run-summary-not-object	field 'run_summary' must be an object	{"turn": "TURN", "run_summary": 1}
missing-turn	field 'turn' is missing	{"conversation": "c1", "status": "committed"}
bad-id	field 'turn' must be a 64-digit lowercase hex object id	{"conversation": "c1", "turn": "abc"}
parent-not-session	parent '[0-9a-f]*' is a blob, not a session	{"turn": "TURN", "parent": "BLOB"}
EOF

test_expect_success 'malformed JSON input: NUL byte' '
	printf "{\"turn\": \"%s\",Q \"status\": \"committed\"}" $t1 | q_to_nul >nul.json &&
	expect_fatal "malformed JSON.*NUL" commit_stdin nul.json
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix commit-session &&
	test_expect_code 129 aptix commit-session $t1 $t2 &&
	test_expect_code 129 aptix commit-session --usage 1,2,3 $t1 2>err &&
	grep "four numbers" err &&
	test_expect_code 129 aptix commit-session --usage 1,2,3,4,5 $t1 &&
	test_expect_code 129 aptix commit-session --usage a,b,c,d $t1 &&
	test_expect_code 129 aptix commit-session --duration-ms -5 $t1 &&
	test_expect_code 129 aptix commit-session --created-at x $t1
'

test_done
