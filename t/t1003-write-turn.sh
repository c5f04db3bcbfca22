#!/bin/sh

test_description='aptix write-turn: turns from loose JSON and from options

Valid turns from JSON (any key order and spacing) and from options, the
options overriding or filling the JSON; every kind of malformed input is
fatal (exit 128) and writes nothing.'

. "$(dirname "$0")"/test-lib.sh

count_objects () {
	aptix cat-object --batch-check --batch-all-objects >objects.list &&
	wc -l <objects.list | tr -d " "
}

# expect_fatal <pattern> <command>...: the command dies (128) with one
# "fatal: " line matching <pattern>, prints nothing on stdout and the
# store holds no new object.
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

write_stdin () {
	aptix write-turn --stdin <"$1"
}

test_expect_success 'setup' '
	aptix init -q &&
	instr=$(echo "do the thing" | aptix hash-object -w --stdin) &&
	answer=$(echo "done" | aptix hash-object -w --stdin) &&
	snip=$(echo "int x;" | aptix hash-object -w --stdin) &&
	content=$(printf "int x;\nint y;\n" | aptix hash-object -w --stdin) &&
	zero=0000000000000000000000000000000000000000000000000000000000000000 &&
	nowhere=$(echo nowhere | aptix hash-object --stdin) &&
	test_write_lines $instr $answer $snip $content | sort >expect &&
	aptix cat-object --batch-check --batch-all-objects | cut -d" " -f1 >actual &&
	test_cmp expect actual
'

test_expect_success '-h shows the usage' '
	test_expect_code 129 aptix write-turn -h >out &&
	grep "^usage: aptix write-turn" out &&
	grep -e "--instruction-text" out
'

test_expect_success 'a turn from JSON' '
	cat >full.json <<-EOF &&
	{
	  "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
	            "cached_tokens": 2, "reasoning_tokens": 1, "model_requests": 1},
	  "status": "completed",
	  "seq": 1,
	  "conversation": "c1",
	  "instruction": "$instr",
	  "answer": "$answer",
	  "created_at": 1700000000000,
	  "response_at": 1700000001000,
	  "model": "gpt-x",
	  "mode": "ask",
	  "workspace": "/w",
	  "response_id": "resp_1",
	  "chunks": [{"chunk_id": "11111111-2222-3333-4444-555555555555",
	              "path": "a.c", "start_line": 1, "end_line": 2,
	              "content_hash": "ab12", "score_micro": 900000,
	              "sent": true, "snippet": "$snip"}],
	  "files": [{"path": "a.c", "sha256": "cd34", "size": 14,
	             "touched": true, "sent": true, "too_large": false,
	             "binary": false, "content": "$content"}],
	  "warnings": ["slow"]
	}
	EOF
	turn=$(write_stdin full.json) &&
	echo "$turn" | grep -E "^[0-9a-f]{64}$" &&
	test "$(aptix cat-object -t $turn)" = turn &&
	cat >expect <<-EOF &&
	{"answer":"$answer","chunks":[{"chunk_id":"11111111-2222-3333-4444-555555555555","content_hash":"ab12","end_line":2,"path":"a.c","score_micro":900000,"sent":true,"snippet":"$snip","start_line":1}],"conversation":"c1","created_at":1700000000000,"files":[{"binary":false,"content":"$content","path":"a.c","sent":true,"sha256":"cd34","size":14,"too_large":false,"touched":true}],"instruction":"$instr","mode":"ask","model":"gpt-x","response_at":1700000001000,"response_id":"resp_1","seq":1,"status":"completed","status_at":1700000000000,"usage":{"cached_tokens":2,"input_tokens":10,"model_requests":1,"output_tokens":5,"reasoning_tokens":1,"total_tokens":15},"v":1,"warnings":["slow"],"workspace":"/w"}
	EOF
	aptix cat-object turn $turn >actual &&
	test_cmp expect actual &&
	aptix hash-object -t turn actual >id &&
	echo $turn >expect &&
	test_cmp expect id
'

test_expect_success 'key order and white space do not matter' '
	tr -d "\n " <full.json >compact.json &&
	test "$(aptix write-turn -F compact.json)" = "$turn" &&
	cat >reordered.json <<-EOF &&
	{"warnings":["slow"],"files":[{"content":"$content","binary":false,
	"too_large":false,"sent":true,"touched":true,"size":14,"sha256":"cd34",
	"path":"a.c"}],"chunks":[{"snippet":"$snip","sent":true,
	"score_micro":900000,"content_hash":"ab12","end_line":2,"start_line":1,
	"path":"a.c","chunk_id":"11111111-2222-3333-4444-555555555555"}],
	"response_id":"resp_1","workspace":"/w","mode":"ask","model":"gpt-x",
	"response_at":1700000001000,"created_at":1700000000000,
	"answer":"$answer","instruction":"$instr","conversation":"c1",
	"seq":1,"status":"completed","usage":{"model_requests":1,
	"reasoning_tokens":1,"cached_tokens":2,"total_tokens":15,
	"output_tokens":5,"input_tokens":10}}
	EOF
	test "$(aptix write-turn -F reordered.json)" = "$turn"
'

test_expect_success 'writing the same turn again adds nothing' '
	before=$(count_objects) &&
	test "$(write_stdin full.json)" = "$turn" &&
	test "$(count_objects)" = "$before"
'

test_expect_success '-F - reads standard input' '
	test "$(aptix write-turn -F - <full.json)" = "$turn"
'

test_expect_success 'a turn from options alone' '
	before=$(count_objects) &&
	t=$(aptix write-turn --conversation c1 --seq 2 \
		--instruction-text "second step" --answer-text "second answer" \
		--model m1 --response-id r2 --previous-response-id r1 \
		--warning w1 --warning w2 --error e1 \
		--created-at 1700000005000) &&
	test "$(count_objects)" = $((before + 3)) &&
	i=$(printf "second step" | aptix hash-object --stdin) &&
	a=$(printf "second answer" | aptix hash-object --stdin) &&
	test "$(aptix cat-object blob $i)" = "second step" &&
	test "$(aptix cat-object blob $a)" = "second answer" &&
	cat >expect <<-EOF &&
	{"answer":"$a","conversation":"c1","created_at":1700000005000,"errors":["e1"],"instruction":"$i","model":"m1","previous_response_id":"r1","response_id":"r2","seq":2,"status":"completed","status_at":1700000005000,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1,"warnings":["w1","w2"]}
	EOF
	aptix cat-object turn $t >actual &&
	test_cmp expect actual
'

test_expect_success 'options alone: pending without an answer, --instruction by name' '
	short=$(echo $instr | cut -c1-12) &&
	t=$(aptix write-turn --conversation c1 --seq 3 --instruction $short \
		--created-at 1700000006000) &&
	cat >expect <<-EOF &&
	{"conversation":"c1","created_at":1700000006000,"instruction":"$instr","seq":3,"status":"pending","status_at":1700000006000,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}
	EOF
	aptix cat-object turn $t >actual &&
	test_cmp expect actual &&
	t=$(aptix write-turn --conversation c1 --seq 3 --instruction $short \
		--status failed --error boom --created-at 1700000006000) &&
	aptix cat-object turn $t >actual &&
	grep "\"status\":\"failed\"" actual &&
	grep "\"errors\":\\[\"boom\"\\]" actual
'

test_expect_success 'created_at defaults to now (APTIX_TEST_DATE)' '
	test_tick &&
	t=$(aptix write-turn --conversation c1 --seq 4 --instruction $instr) &&
	aptix cat-object turn $t >actual &&
	grep "\"created_at\":${APTIX_TEST_DATE}000," actual &&
	grep "\"status_at\":${APTIX_TEST_DATE}000," actual
'

test_expect_success 'options override the JSON' '
	t=$(aptix write-turn -F full.json --seq 7 --status failed \
		--model other --warning new --conversation c9 \
		--created-at 1700000009000 --answer-text "new answer") &&
	a=$(printf "new answer" | aptix hash-object --stdin) &&
	aptix cat-object turn $t >actual &&
	grep "\"seq\":7," actual &&
	grep "\"status\":\"failed\"" actual &&
	grep "\"model\":\"other\"" actual &&
	grep "\"warnings\":\\[\"new\"\\]" actual &&
	grep "\"conversation\":\"c9\"" actual &&
	grep "\"created_at\":1700000009000," actual &&
	grep "\"answer\":\"$a\"" actual &&
	grep "\"status_at\":1700000009000," actual &&
	grep "\"response_id\":\"resp_1\"" actual
'

test_expect_success 'options fill what the JSON lacks' '
	cat >partial.json <<-EOF &&
	{"status": "pending", "instruction": "$instr"}
	EOF
	expect_fatal "field .conversation. is missing" \
		aptix write-turn -F partial.json &&
	t=$(aptix write-turn -F partial.json --conversation c2 --seq 1 \
		--created-at 1700000010000) &&
	cat >expect <<-EOF &&
	{"conversation":"c2","created_at":1700000010000,"instruction":"$instr","seq":1,"status":"pending","status_at":1700000010000,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}
	EOF
	aptix cat-object turn $t >actual &&
	test_cmp expect actual
'

test_expect_success 'the JSON keeps its status_at' '
	cat >statusat.json <<-EOF &&
	{"conversation": "c1", "seq": 1, "status": "completed",
	 "instruction": "$instr", "created_at": 5, "status_at": 9}
	EOF
	t=$(write_stdin statusat.json) &&
	aptix cat-object turn $t >actual &&
	grep "\"created_at\":5,.*\"status_at\":9," actual
'

# malformed input: <name> <pattern> <json>
while IFS='	' read -r name pattern json
do
	test_expect_success "malformed: $name" "
		printf '%s' '$json' | sed \"s/INSTR/\$instr/; s/TURN/\$turn/;
			s/NOWHERE/\$nowhere/; s/ZERO/\$zero/\" >bad.json &&
		expect_fatal \"$pattern\" write_stdin bad.json
	"
done <<\EOF
bad-json	malformed JSON at line 1	{"seq": 1,
empty-input	malformed JSON	
trailing-garbage	malformed JSON	{"seq": 1} x
duplicate-key	malformed JSON.*duplicate	{"seq": 1, "seq": 2}
not-an-object	input must be a JSON object	[1, 2]
a-string	malformed JSON	"turn"
seq-is-a-string	field 'seq' must be an integer	{"conversation": "c", "seq": "1", "status": "pending", "instruction": "INSTR"}
seq-is-real	field 'seq' must be an integer	{"conversation": "c", "seq": 1.5, "status": "pending", "instruction": "INSTR"}
seq-zero	field 'seq' must be 1 or more	{"conversation": "c", "seq": 0, "status": "pending", "instruction": "INSTR"}
conversation-number	field 'conversation' must be a string	{"conversation": 5, "seq": 1, "status": "pending", "instruction": "INSTR"}
conversation-empty	field 'conversation' is empty	{"conversation": "", "seq": 1, "status": "pending", "instruction": "INSTR"}
warnings-not-strings	field 'warnings' must be an array of strings	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "warnings": [1]}
usage-not-object	field 'usage' must be an object	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "usage": 3}
chunk-sent-not-bool	chunk: field 'sent' must be true or false	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "chunks": [{"chunk_id": "x", "path": "p", "start_line": 1, "end_line": 1, "content_hash": "h", "score_micro": 1, "sent": "yes"}]}
status-unknown	field 'status' must be pending, completed or failed	{"conversation": "c", "seq": 1, "status": "done", "instruction": "INSTR"}
missing-status	field 'status' is missing	{"conversation": "c", "seq": 1, "instruction": "INSTR"}
missing-conversation	field 'conversation' is missing	{"seq": 1, "status": "pending", "instruction": "INSTR"}
missing-seq	field 'seq' is missing	{"conversation": "c", "status": "pending", "instruction": "INSTR"}
missing-instruction	field 'instruction' is missing	{"conversation": "c", "seq": 1, "status": "pending"}
missing-usage-field	usage: field 'cached_tokens' is missing	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "usage": {"input_tokens": 1}}
missing-chunk-field	chunk: field 'path' is missing	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "chunks": [{"chunk_id": "x", "start_line": 1, "end_line": 1, "content_hash": "h", "score_micro": 1, "sent": true}]}
unknown-field	turn: field 'colour' is unknown	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "colour": "red"}
unknown-usage-field	usage: field 'coins' is unknown	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "usage": {"coins": 1}}
unknown-file-field	file: field 'mode' is unknown	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "files": [{"mode": 1}]}
bad-id	field 'instruction' must be a 64-digit lowercase hex object id	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "1234abcd"}
uppercase-id	field 'answer' must be a 64-digit lowercase hex object id	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "answer": "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"}
zero-id	field 'instruction' must not be all zeros	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "ZERO"}
missing-blob	turn: instruction '[0-9a-f]*' does not exist	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "NOWHERE"}
missing-snippet	turn: chunk snippet '[0-9a-f]*' does not exist	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "chunks": [{"chunk_id": "x", "path": "p", "start_line": 1, "end_line": 1, "content_hash": "h", "score_micro": 1, "sent": true, "snippet": "NOWHERE"}]}
missing-file-content	turn: file content '[0-9a-f]*' does not exist	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "files": [{"path": "a", "sha256": "h", "size": 1, "touched": false, "sent": false, "too_large": false, "binary": false, "content": "NOWHERE"}]}
blob-is-a-turn	turn: instruction '[0-9a-f]*' is a turn, not a blob	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "TURN"}
answer-is-a-turn	turn: answer '[0-9a-f]*' is a turn, not a blob	{"conversation": "c", "seq": 1, "status": "pending", "instruction": "INSTR", "answer": "TURN"}
huge-integer	field 'seq' is out of range	{"conversation": "c", "seq": 9007199254740993, "status": "pending", "instruction": "INSTR"}
EOF

test_expect_success 'malformed: NUL byte in the input' '
	printf "{\"conversation\": \"c\", \"seq\": 1Q, \"status\": \"pending\", \"instruction\": \"%s\"}" $instr |
	q_to_nul >nul.json &&
	expect_fatal "malformed JSON" write_stdin nul.json &&
	printf "{\"conversation\": \"cQ\", \"seq\": 1, \"status\": \"pending\", \"instruction\": \"%s\"}" $instr |
	q_to_nul >nul.json &&
	expect_fatal "malformed JSON" write_stdin nul.json &&
	printf "{\"conversation\": \"c\\\\u0000\", \"seq\": 1, \"status\": \"pending\", \"instruction\": \"%s\"}" $instr >nul.json &&
	grep "u0000" nul.json &&
	expect_fatal "malformed JSON" write_stdin nul.json
'

test_expect_success 'malformed: invalid UTF-8 in the input' '
	printf "{\"conversation\": \"c\\377\", \"seq\": 1, \"status\": \"pending\", \"instruction\": \"%s\"}" $instr >utf8.json &&
	expect_fatal "malformed JSON" write_stdin utf8.json
'

test_expect_success 'a blob written by the command is not kept when the turn is bad' '
	expect_fatal "field .conversation. is missing" \
		aptix write-turn --seq 1 --instruction-text "never stored" &&
	expect_fatal "field .seq. must be 1 or more" \
		aptix write-turn --conversation c --seq 0 \
		--instruction-text "never stored" --answer-text "nor this" &&
	i=$(printf "never stored" | aptix hash-object --stdin) &&
	test_must_fail aptix cat-object -e $i
'

test_expect_success 'bad option values' '
	expect_fatal "field .instruction. is missing" \
		aptix write-turn --conversation c --seq 1 &&
	expect_fatal "field .status. must be" \
		aptix write-turn --conversation c --seq 1 --status nope \
		--instruction $instr &&
	expect_fatal "instruction .* is a turn, not a blob" \
		aptix write-turn --conversation c --seq 1 --instruction $turn &&
	expect_fatal "." \
		aptix write-turn --conversation c --seq 1 --instruction nosuch &&
	expect_fatal "." aptix write-turn -F no-such-file.json
'

test_expect_success '--blob: the contents of the blobs the turn names' '
	printf "the request of a turn, long enough to be stored spliced\n" >req &&
	printf "the raw response: done\n" >resp &&
	req_id=$(aptix hash-object req) &&
	resp_id=$(aptix hash-object resp) &&
	test_must_fail aptix cat-object -e $req_id &&
	id=$(aptix write-turn --conversation blobs --seq 1 \
		--status completed --instruction $instr --answer-text done \
		--created-at 1700000000000 --blob req --blob resp \
		--stdin <<-EOF
		{"request": "$req_id", "response": "$resp_id"}
		EOF
	) &&
	aptix cat-object blob $req_id >actual &&
	test_cmp req actual &&
	aptix cat-object blob $resp_id >actual &&
	test_cmp resp actual &&
	aptix cat-object turn $id >actual &&
	grep "\"request\":\"$req_id\"" actual
'

test_expect_success '--blob that the turn does not name, -p that is not a session' '
	echo "named by nothing" >stray &&
	expect_fatal "blob .stray. .* is not named by the turn" \
		aptix write-turn --conversation c --seq 1 \
		--instruction $instr --blob stray &&
	expect_fatal "." aptix write-turn --conversation c --seq 1 \
		--instruction $instr --blob no-such-file &&
	expect_fatal "." aptix write-turn --conversation c --seq 2 \
		--instruction $instr -p $instr
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix write-turn --stdin -F full.json </dev/null &&
	test_expect_code 129 aptix write-turn extra-argument &&
	test_expect_code 129 aptix write-turn --seq abc &&
	test_expect_code 129 aptix write-turn --seq -1 &&
	test_expect_code 129 aptix write-turn --created-at 1x &&
	test_expect_code 129 aptix write-turn --instruction $instr \
		--instruction-text x 2>err &&
	grep "cannot be used together" err
'

test_done
