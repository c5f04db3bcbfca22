#!/bin/sh
test_description='aptix continue against the OpenAI stand-in

Three chained turns, streaming and --no-stream, --dry-run, --json, the
ways of giving the instruction, the model and instructions settings, and
the API key that must never be stored or printed.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# resp_of <rev>: the response id of the turn of that session
resp_of () {
	aptix show --json "$1" | json_field .response_id
}

test_expect_success 'setup: stand-in and store' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	test -n "$conv"
'

test_expect_success 'first turn: no previous_response_id, answer streamed' '
	aptix continue -m "first question" >out1 2>err1 &&
	echo "Answer #1 to: first question (chain depth 1, context chars 14)" >expect &&
	test_cmp expect out1 &&
	test "$(request_count)" = 1 &&
	request_body 1 >body1 &&
	! grep previous_response_id body1 &&
	test "$(json_field .stream <body1)" = true &&
	test "$(json_field .input[0].content <body1)" = "first question" &&
	test "$(json_field .input[0].role <body1)" = user &&
	test "$(json_field .store <body1)" = true
'

test_expect_success 'first turn: the summary line is on stderr' '
	s1=$(aptix rev-parse HEAD) &&
	short=$(printf %.12s "$s1") &&
	cshort=$(printf %.8s "$conv") &&
	grep -E "^\[$cshort $short\] [0-9]+ tokens \([0-9]+ in, [0-9]+ out\), [0-9.]+ s$" err1 &&
	test_line_count = 1 err1
'

test_expect_success 'first turn: stored with the response id and answer' '
	aptix show --json >show1 &&
	test "$(json_field .status <show1)" = committed &&
	test "$(json_field .parent <show1)" = null &&
	test "$(json_field .seq <show1)" = 1 &&
	test "$(json_field .instruction <show1)" = "first question" &&
	test "$(json_field .answer <show1)" = "$(cat out1)" &&
	test "$(json_field .previous_response_id <show1)" = null &&
	rid1=$(json_field .response_id <show1) &&
	case "$rid1" in resp_*) ;; *) false ;; esac &&
	request_log 1 | json_field .response.response_id >expect &&
	echo "$rid1" >actual &&
	test_cmp expect actual
'

test_expect_success 'second turn carries the first response id' '
	aptix continue -m "second question" >out2 2>err2 &&
	echo "Answer #2 to: second question (chain depth 2, context chars 29)" >expect &&
	test_cmp expect out2 &&
	test "$(request_count)" = 2 &&
	test "$(request_body 2 | json_field .previous_response_id)" = "$rid1" &&
	test "$(resp_of HEAD~1)" = "$rid1" &&
	aptix cat-object -p "HEAD~1^{turn}" >turn1 &&
	grep "^response id  *$rid1$" turn1 &&
	test "$(aptix rev-parse HEAD~1)" = "$s1"
'

test_expect_success 'third turn carries the second response id' '
	rid2=$(resp_of HEAD) &&
	aptix continue -m "third question" >out3 2>err3 &&
	grep "^Answer #3 to: third question (chain depth 3, " out3 &&
	test "$(request_body 3 | json_field .previous_response_id)" = "$rid2" &&
	aptix cat-object -p "HEAD^{turn}" >turn3 &&
	grep "^previous response id  *$rid2$" turn3 &&
	grep "^seq  *3$" turn3 &&
	test "$(aptix show --json | json_field .parent)" = "$(aptix rev-parse HEAD~1)"
'

test_expect_success 'log --oneline shows the three turns' '
	aptix log --oneline --decorate >log &&
	test_line_count = 3 log &&
	sed -e "s/^[0-9a-f]\{12\} //" -e "s/^(HEAD -> [^)]*) //" log >actual &&
	test_write_lines "third question" "second question" "first question" >expect &&
	test_cmp expect actual &&
	head -n 1 log | grep "(HEAD -> $cshort)"
'

test_expect_success 'answers are streamed as they arrive' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":0.4}" &&
	{ aptix continue -m "stream this answer slowly, one delta after another" >out-stream 2>err-stream & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	i=0 &&
	while ! grep -q "^Answer" out-stream && test $i -lt 100
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	grep -q "^Answer" out-stream &&
	# part of the answer is on stdout while the turn still runs
	child_running $pid &&
	! grep "chain depth" out-stream &&
	wait $pid &&
	grep "^Answer #4 to: stream this answer slowly, .*(chain depth 4, " out-stream &&
	test_line_count = 1 out-stream &&
	test "$(request_log $((n + 1)) | json_field .response.stream)" = true
'

test_expect_success '--no-stream asks for a whole response and prints it' '
	aptix continue --no-stream -m "no stream please" >out-ns 2>err-ns &&
	grep "^Answer #5 to: no stream please (chain depth 5, " out-ns &&
	test_line_count = 1 out-ns &&
	last_request_body >body &&
	test "$(json_field .stream <body)" = false &&
	test "$(json_field .previous_response_id <body)" = "$(resp_of HEAD~1)" &&
	grep -E "^\[$cshort [0-9a-f]{12}\] [0-9]+ tokens" err-ns &&
	test "$(aptix show --json | json_field .answer)" = "$(cat out-ns)"
'

test_expect_success MDB_DUMP '--dry-run prints the request and changes nothing' '
	n=$(request_count) &&
	objects=$(object_count) &&
	head=$(aptix rev-parse HEAD) &&
	aptix continue --dry-run -m "just looking" >out-dry 2>err-dry &&
	head -n 3 out-dry >actual &&
	cat >expect <<-EOF &&
	POST $OPENAI_BASE_URL/responses
	Authorization: Bearer <redacted>
	Content-Type: application/json
	EOF
	test_cmp expect actual &&
	sed -e 1,4d out-dry >dry-body &&
	test "$(json_field .input[0].content <dry-body)" = "just looking" &&
	test "$(json_field .previous_response_id <dry-body)" = "$(resp_of HEAD)" &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects" &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix status >status &&
	! grep "in flight" status
'

test_expect_success '--dry-run needs no API key' '
	n=$(request_count) &&
	(
		unset OPENAI_API_KEY &&
		aptix continue --dry-run -m "dry without a key" >out-dry2
	) &&
	grep "^Authorization: Bearer <redacted>$" out-dry2 &&
	test "$(request_count)" = "$n"
'

test_expect_success '-q: no summary line' '
	aptix continue -q -m "quietly" >out-q 2>err-q &&
	grep "^Answer #6 to: quietly " out-q &&
	test_must_be_empty err-q
'

test_expect_success '--json prints one object with the result' '
	parent=$(aptix rev-parse HEAD) &&
	aptix continue --json -m "answer as json" >out-json 2>err-json &&
	python3 -m json.tool out-json >/dev/null &&
	for key in kind text session conversation parent response_id usage \
		warnings error_code error_message
	do
		python3 -c "import json,sys; sys.exit(0 if sys.argv[1] in json.load(open(\"out-json\")) else 1)" $key ||
		{ echo "missing key $key" >&2; return 1; }
	done &&
	test "$(json_field .kind <out-json)" = answer &&
	json_field .text <out-json >text &&
	grep "^Answer #7 to: answer as json (chain depth 7, " text &&
	test "$(json_field .session <out-json)" = "$(aptix rev-parse HEAD)" &&
	test "$(json_field .conversation <out-json)" = "$conv" &&
	test "$(json_field .parent <out-json)" = "$parent" &&
	test "$(json_field .response_id <out-json)" = "$(resp_of HEAD)" &&
	test "$(json_field .warnings <out-json | tr -d " \n")" = "[]" &&
	test "$(json_field .error_code <out-json)" = null &&
	test "$(json_field .error_message <out-json)" = null &&
	test "$(json_field .usage.total_tokens <out-json)" -gt 0 &&
	test "$(json_field .usage.total_tokens <out-json)" = \
		"$(aptix show --json | json_field .usage.total_tokens)"
'

test_expect_success MDB_DUMP 'a missing OPENAI_API_KEY fails before anything is recorded' '
	n=$(request_count) &&
	objects=$(object_count) &&
	head=$(aptix rev-parse HEAD) &&
	(
		unset OPENAI_API_KEY &&
		test_must_fail aptix continue -m "no key" >out-nokey 2>err-nokey
	) &&
	grep "OPENAI_API_KEY is not set" err-nokey &&
	test_must_be_empty out-nokey &&
	(
		OPENAI_API_KEY= &&
		test_must_fail aptix continue -m "empty key" 2>err-emptykey
	) &&
	grep "OPENAI_API_KEY" err-emptykey &&
	(
		OPENAI_API_KEY="$OPENAI_API_KEY
" &&
		test_expect_code 128 aptix continue -m "newline key" \
			2>err-nlkey
	) &&
	grep "OPENAI_API_KEY holds a line break" err-nlkey &&
	! grep -F "$OPENAI_API_KEY" err-nlkey &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects" &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix log --all --oneline >log &&
	! grep "no key" log
'

test_expect_success MDB_DUMP 'an empty instruction is refused' '
	n=$(request_count) &&
	objects=$(object_count) &&
	test_must_fail aptix continue -m "" 2>err-empty1 &&
	grep "instruction is empty" err-empty1 &&
	test_must_fail aptix continue -m " 	 " 2>err-empty2 &&
	grep "instruction is empty" err-empty2 &&
	printf "\n\n" >blank &&
	test_must_fail aptix continue -F blank 2>err-empty3 &&
	grep "instruction is empty" err-empty3 &&
	test_must_fail aptix continue </dev/null 2>err-empty4 &&
	grep "instruction is empty" err-empty4 &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects"
'

test_expect_success 'the instruction from a file (-F)' '
	cat >instr.txt <<-\EOF &&
	Refactor parse_config():

	  - keep the "quotes" and \backslashes\
	  - and a tab:	here
	EOF
	aptix continue -F instr.txt >out-F 2>err-F &&
	test "$(last_request_body | json_field ".input[0].content")" = "$(cat instr.txt)" &&
	aptix show --json >show-F &&
	test "$(json_field .instruction <show-F)" = "$(cat instr.txt)" &&
	aptix cat-object blob "$(json_field .instruction_id <show-F)" >actual &&
	printf "%s" "$(cat instr.txt)" >expect &&
	test_cmp_bin expect actual
'

test_expect_success 'the instruction from stdin (-F - and no option)' '
	echo "from stdin with dash" | aptix continue -F - >out-stdin1 2>err-stdin1 &&
	grep "^Answer #9 to: from stdin with dash (chain depth" out-stdin1 &&
	test "$(aptix show --json | json_field .instruction)" = "from stdin with dash" &&
	echo "from plain stdin" | aptix continue >out-stdin2 2>err-stdin2 &&
	grep "^Answer #10 to: from plain stdin (chain depth" out-stdin2 &&
	test "$(aptix show --json | json_field .instruction)" = "from plain stdin"
'

# Regression: text that is not UTF-8 (or holds NUL) cannot go into a JSON
# request; it must be refused before anything is sent, not dropped.
test_expect_success 'an instruction that is not UTF-8 is refused or sent, not dropped' '
	printf "bad \377\376 bytes\n" >bad-utf8.txt &&
	n=$(request_count) &&
	if aptix continue -F bad-utf8.txt >out-bad 2>err-bad
	then
		last_request_body | json_field ".input[0].content" | grep "bytes"
	else
		test "$(request_count)" = "$n"
	fi
'

test_expect_success '-m and -F together are refused' '
	n=$(request_count) &&
	test_must_fail aptix continue -m one -F instr.txt 2>err-mF &&
	grep "cannot be used together" err-mF &&
	test "$(request_count)" = "$n"
'

test_expect_success '--model goes into the request and the turn' '
	aptix continue --model gpt-test-model -m "which model" >out-model 2>err-model &&
	test "$(last_request_body | json_field .model)" = gpt-test-model &&
	test "$(aptix show --json | json_field .model)" = gpt-test-model
'

test_expect_success 'config openai.model and openai.instructions land in the request' '
	aptix config openai.model configured-model &&
	aptix config openai.instructions "Be terse. Answer in French." &&
	aptix continue -m "configured" >out-cfg 2>err-cfg &&
	last_request_body >body &&
	test "$(json_field .model <body)" = configured-model &&
	test "$(json_field .instructions <body)" = "Be terse. Answer in French." &&
	test "$(aptix show --json | json_field .model)" = configured-model &&
	aptix continue --model override-model -m "override" >out-cfg2 2>err-cfg2 &&
	test "$(last_request_body | json_field .model)" = override-model &&
	aptix config openai.temperature 0.25 &&
	aptix continue -m "warm" >out-cfg4 2>err-cfg4 &&
	test "$(last_request_body | json_field .temperature)" = 0.25 &&
	aptix config --unset openai.temperature &&
	aptix config --unset openai.model &&
	aptix config --unset openai.instructions &&
	aptix continue -m "defaults again" >out-cfg3 2>err-cfg3 &&
	last_request_body >body &&
	test "$(json_field .model <body)" != configured-model &&
	test "$(json_field .instructions <body)" != "Be terse. Answer in French."
'

# Regression: the temperature is sent as configured, not as the nearest
# double's 17 digits (0.20000000000000001).
test_expect_success 'openai.temperature 0.2 is sent as 0.2' '
	aptix config openai.temperature 0.2 &&
	test_when_finished "aptix config --unset openai.temperature" &&
	aptix continue -m "temperate" >out-t 2>err-t &&
	req=$(aptix show --json | json_field .request_payload_id) &&
	aptix cat-object -p "$req" >sent &&
	grep -F "\"temperature\":0.2," sent &&
	aptix continue --dry-run -m "dry" >dry &&
	grep -F "\"temperature\": 0.2," dry
'

test_expect_success 'a wrong API key: HTTP 401, recorded as failed, key not shown' '
	wrong_key=sk-wrong-$(od -An -N12 -tx1 /dev/urandom | tr -d " \n") &&
	head=$(aptix rev-parse HEAD) &&
	(
		OPENAI_API_KEY=$wrong_key &&
		test_expect_code 1 aptix continue -m "wrong key" >out-wrong 2>err-wrong
	) &&
	grep "401" err-wrong &&
	grep "Incorrect API key" err-wrong &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix log --all --oneline >log &&
	grep "\[failed\] wrong key" log
'

test_expect_success MDB_DUMP 'the API key is in neither the store nor any output' '
	aptix log --all >out-log-all &&
	aptix show --raw >out-show-raw &&
	aptix show --json --raw >out-show-json &&
	aptix status >out-status &&
	aptix sessions >out-sessions &&
	aptix config --list >out-config &&
	aptix fsck >out-fsck 2>&1 &&
	test_must_fail aptix config openai.api-key "$OPENAI_API_KEY" 2>err-secret &&
	grep "refusing to store a secret" err-secret &&
	for s in $(aptix log --all --format=%H)
	do
		aptix show --raw --json $s || return 1
	done >out-show-all &&
	store_text >store.txt &&
	test_file_not_empty store.txt &&
	grep "first question" store.txt &&
	grep "Answer #1 to" store.txt &&
	! grep -F "$OPENAI_API_KEY" store.txt &&
	! grep -F "$wrong_key" store.txt &&
	! grep -F "${OPENAI_API_KEY#sk-test-}" store.txt &&
	! grep -r -a -F "$OPENAI_API_KEY" .aptix &&
	! grep -r -a -F "$OPENAI_API_KEY" . &&
	! grep -r -a -F "$wrong_key" . &&
	grep "Bearer <redacted>" out-dry
'

test_expect_success MDB_DUMP 'an unknown --conversation is an error without --create' '
	n=$(request_count) &&
	objects=$(object_count) &&
	test_must_fail aptix continue --conversation typo -m x 2>err &&
	grep "conversation .typo. not found" err &&
	grep -e "--create" err &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects" &&
	! aptix sessions | grep typo &&
	aptix continue --create --conversation newone -m "on a new one" \
		>out 2>err &&
	aptix sessions >list &&
	grep newone list &&
	test "$(aptix symbolic-ref --short HEAD)" = newone &&
	grep "Switched to a new conversation .newone." err &&
	aptix switch "$conv" >/dev/null &&
	test_must_fail aptix continue --create -m x 2>err &&
	grep "needs --conversation" err
'

test_expect_success 'names that read as a session id or HEAD are not created' '
	objects=$(object_count) &&
	for name in deadbeef 0123 ABCDEF12
	do
		test_must_fail aptix continue -c --conversation $name -m x \
			2>err &&
		grep "cannot name a new conversation" err &&
		test_must_fail aptix switch -c $name 2>err &&
		grep "cannot name a new conversation" err || return 1
	done &&
	test_must_fail aptix switch -c HEAD 2>err &&
	grep "cannot name a new conversation: it reads as HEAD" err &&
	test "$(object_count)" = "$objects" &&
	test "$(aptix symbolic-ref --short HEAD)" = "$conv" &&
	aptix switch -c abc >out &&
	aptix switch "$conv"
'

# As git commit -F: the trailing newlines of -F and stdin are dropped.
test_expect_success '-F <file> and stdin lose their trailing newlines' '
	printf "trailing\n\n\n" >nl.txt &&
	aptix continue -q -F nl.txt >out 2>err &&
	aptix cat-object blob "$(aptix show --json | json_field .instruction_id)" >actual &&
	printf trailing >expect &&
	test_cmp_bin expect actual &&
	last_request_body >body &&
	grep -F "\"content\":\"trailing\"}" body &&
	printf "piped\r\n\n" | aptix continue -q >out 2>err &&
	aptix cat-object blob "$(aptix show --json | json_field .instruction_id)" >actual &&
	printf piped >expect &&
	test_cmp_bin expect actual
'

test_expect_success 'the prompt as an argument' '
	aptix continue -q "positional prompt" >out 2>err &&
	test "$(last_request_body | json_field ".input[0].content")" = "positional prompt" &&
	n=$(request_count) &&
	test_expect_code 129 aptix continue one two 2>err &&
	grep "^fatal: too many arguments" err &&
	test_expect_code 129 aptix continue -m one two 2>err &&
	grep "^fatal: a prompt argument and -m or -F" err &&
	test "$(request_count)" = "$n"
'

test_expect_success 'piped stdin with -m or a prompt is attached as a fenced block' '
	printf "line one\nline two\n" | aptix continue -q -m "explain" >out 2>err &&
	printf "explain\n\n\`\`\`stdin\nline one\nline two\n\`\`\`" >expect &&
	aptix cat-object blob "$(aptix show --json | json_field .instruction_id)" >actual &&
	test_cmp_bin expect actual &&
	last_request_body | json_field ".input[0].content" >sent &&
	printf "%s\n" "$(cat expect)" >expect.sent &&
	test_cmp expect.sent sent &&
	printf "a \`\`\`\` fence\n" | aptix continue -q "what" >out 2>err &&
	aptix cat-object blob "$(aptix show --json | json_field .instruction_id)" >actual &&
	printf "what\n\n\`\`\`\`\`stdin\na \`\`\`\` fence\n\`\`\`\`\`" >expect &&
	test_cmp_bin expect actual &&
	aptix continue -q -m "nothing piped" </dev/null >out 2>err &&
	test "$(last_request_body | json_field ".input[0].content")" = "nothing piped"
'

test_expect_success 'the instruction and --files-from cannot both read stdin' '
	n=$(request_count) &&
	objects=$(object_count) &&
	echo instr.txt | test_must_fail aptix continue -F - --files-from - \
		2>err &&
	grep "cannot both be read from stdin" err &&
	echo instr.txt | test_must_fail aptix continue --files-from - 2>err &&
	grep "cannot both be read from stdin" err &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects" &&
	echo instr.txt | aptix continue -q -m "one reader" --files-from - \
		>out 2>err &&
	last_request_body | json_field ".input[0].content" >sent &&
	grep "instr.txt" sent &&
	! grep "stdin" sent
'

test_done
