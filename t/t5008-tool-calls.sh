#!/bin/sh
test_description='tool calls against the OpenAI stand-in (issue 24)

A turn whose response asks for function calls is committed as
awaiting_tool_results and prints the calls; the next continue sends their
outputs (function_call_output with previous_response_id, or the calls and
outputs again when the chain is gone) and records calls and results as
objects. Outputs that do not answer the calls are refused before anything
is sent or stored; a credential in an output is redacted; kill -9 while
answering, and two processes answering the same calls.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

field () {
	aptix show --json "$1" | json_field "$2"
}

# calls <json of calls> [<delta chars>]: the next response asks for them
calls () {
	standin_fault "{\"kind\":\"tool_calls\",\"delta_chars\":${2:-8},\"calls\":$1}"
}

# status_of <rev>: the snapshot's status
status_of () {
	aptix cat-object -p "$1" | sed -n "s/^status  *//p"
}

# store_state: what a refused answer must leave unchanged
store_state () {
	{
		object_count &&
		aptix rev-parse HEAD &&
		request_count
	} >"$1"
}

test_expect_success 'setup: stand-in, store, tools' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	cat >tools.json <<-\EOF &&
	[{"type":"function","name":"shell","description":"run a command",
	  "parameters":{"type":"object","properties":{"cmd":{"type":"string"}},
	  "required":["cmd"]}}]
	EOF
	printf "%s\n" "a.c" "b.c" >ls.out
'

test_expect_success 'one call: printed, committed as awaiting_tool_results' '
	calls "[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\": \\\"ls\\\"}\",\"call_id\":\"call_one\"}]" &&
	aptix continue --no-files --no-rag --tools tools.json -m "list the files" >out 2>err &&
	printf "call_one\tshell\t{\"cmd\": \"ls\"}\n" >expect &&
	test_cmp expect out &&
	grep "^hint: the model asks for 1 tool call " err &&
	grep "aptix continue --conversation $conv --tool-output <call_id>=<file>" err &&
	s1=$(aptix rev-parse HEAD) &&
	test "$(status_of $s1)" = awaiting_tool_results &&
	request_body 1 >body &&
	test "$(json_field .tools[0].name <body)" = shell &&
	aptix fsck --full >fsck &&
	! grep -v "^dangling" fsck
'

test_expect_success 'the call is an object linked from a version 2 turn' '
	turn=$(aptix cat-object -p $s1 | sed -n "s/^turn  *//p") &&
	aptix cat-object -p $turn >turn.txt &&
	grep "^format  *2$" turn.txt &&
	call=$(sed -n "s/^tool call  *//p" turn.txt) &&
	test "$(aptix cat-object -t $call)" = tool-call &&
	aptix cat-object tool-call $call >call.json &&
	test "$(json_field .arguments <call.json)" = "{\"cmd\": \"ls\"}" &&
	test "$(json_field .call_id <call.json)" = call_one &&
	case "$(json_field .item_id <call.json)" in fc_*) ;; *) false ;; esac
'

test_expect_success 'refused before anything is sent or stored: a plain message' '
	store_state before &&
	test_must_fail aptix continue --no-files --no-rag -m "what now?" 2>err &&
	grep "awaits the output of tool call .call_one. (shell)" err &&
	store_state after &&
	test_cmp before after
'

test_expect_success 'refused: an unknown call id, an output answered twice' '
	store_state before &&
	test_must_fail aptix continue --tool-output call_one=ls.out \
		--tool-output call_two=ls.out 2>err &&
	grep "unknown tool call id .call_two.: the head of .$conv. asks for call_one; nothing sent" err &&
	test_must_fail aptix continue --tool-output call_one=ls.out \
		--tool-output call_one=ls.out 2>err &&
	grep "tool call .call_one. is answered twice" err &&
	test_must_fail aptix continue --tool-output call_one=ls.out \
		--tool-exit call_two=1 2>err &&
	grep "tool-exit names tool call .call_two., which has no --tool-output" err &&
	test_must_fail aptix continue --tool-output call_one 2>err &&
	grep "expected <call_id>=<file>" err &&
	store_state after &&
	test_cmp before after
'

test_expect_success 'refused: an output over the API limit, with its size' '
	store_state before &&
	python3 -c "import sys; sys.stdout.write(\"x\" * 10485761)" >big &&
	test_must_fail aptix continue --tool-output call_one=big 2>err &&
	grep "the output of tool call .call_one. is 10485761 characters, over the API.s limit of 10485760" err &&
	store_state after &&
	test_cmp before after
'

test_expect_success 'answer: function_call_output with previous_response_id' '
	n=$(request_count) &&
	aptix continue --tool-output call_one=ls.out --tool-exit call_one=0 >out 2>err &&
	grep "^Answer #2 to tool outputs: call_one=a.c" out &&
	request_body $((n + 1)) >body &&
	test "$(json_field .previous_response_id <body)" = "$(field $s1 .response_id)" &&
	test "$(json_field .input[0].type <body)" = function_call_output &&
	test "$(json_field .input[0].call_id <body)" = call_one &&
	test "$(json_field .input[0].output <body)" = "$(cat ls.out)" &&
	test "$(json_field .tools[0].name <body)" = shell &&
	s2=$(aptix rev-parse HEAD) &&
	test "$(status_of $s2)" = committed &&
	test "$(aptix rev-parse HEAD^)" = $s1
'

test_expect_success 'the result is an object: exit code, output, its call' '
	turn=$(aptix cat-object -p $s2 | sed -n "s/^turn  *//p") &&
	result=$(aptix cat-object -p $turn | sed -n "s/^tool result  *//p") &&
	aptix cat-object -p $result >result.txt &&
	grep "^exit code  *0$" result.txt &&
	grep "^status  *ok$" result.txt &&
	grep "^call  *$call$" result.txt &&
	grep "^source  *aptix$" result.txt &&
	output=$(sed -n "s/^output  *[0-9]* bytes //p" result.txt) &&
	aptix cat-object blob $output >sent &&
	test_cmp ls.out sent &&
	aptix fsck --full >fsck &&
	! grep -v "^dangling" fsck
'

test_expect_success 'show: the call asked, then the result sent' '
	aptix show $s1 >show1 &&
	grep "^No answer: the model asks for tool calls.$" show1 &&
	grep -A1 "^Tool calls:$" show1 >calls &&
	grep "^    call_one  shell  {\"cmd\": \"ls\"}$" calls &&
	aptix show $s2 >show2 &&
	grep -A3 "^Tool results:$" show2 >results &&
	grep "^    call_one  shell  ok, exit 0, output 8 bytes$" results &&
	grep "^        | a.c$" results &&
	grep "^        | b.c$" results
'

test_expect_success 'show --json: tool_calls and tool_results' '
	aptix show --json $s1 >s1.json &&
	test "$(json_field .status <s1.json)" = awaiting_tool_results &&
	test "$(json_field .tool_calls[0].call_id <s1.json)" = call_one &&
	test "$(json_field .tool_calls[0].id <s1.json)" = $call &&
	test "$(json_field .tool_results <s1.json)" = "[]" &&
	aptix show --json $s2 >s2.json &&
	test "$(json_field .tool_results[0].exit_code <s2.json)" = 0 &&
	test "$(json_field .tool_results[0].name <s2.json)" = shell &&
	test "$(json_field .tool_results[0].output_bytes <s2.json)" = 8 &&
	test "$(json_field .tool_results[0].truncated <s2.json)" = false &&
	test "$(json_field .tool_results[0].output <s2.json)" = "$(cat ls.out)"
'

test_expect_success 'log --tools marks the turns; -S and --grep search calls' '
	aptix log --oneline --decorate --tools >log &&
	grep "^$(printf %.12s $s1) \[1 tool call\] list the files$" log &&
	grep "^$(printf %.12s $s2) (HEAD -> [^)]*) \[1 tool result\] $" log &&
	aptix log --oneline -S "\"ls\"" >found &&
	test_line_count = 1 found &&
	grep "^$(printf %.12s $s1) " found &&
	aptix log --oneline -S b.c >found &&
	test_line_count = 1 found &&
	grep "^$(printf %.12s $s2) " found &&
	aptix log --oneline --grep "^b\.c$" >found &&
	test_line_count = 1 found &&
	aptix log --oneline -S "not anywhere" >found &&
	test_must_be_empty found
'

test_expect_success 'diff includes the calls' '
	aptix diff $s1 $s2 >diff &&
	grep "^Tool calls:$" diff &&
	grep "^  -tool call call_one shell {\"cmd\": \"ls\"}$" diff &&
	grep "^  +tool result call_one ok, exit 0, output 8 bytes$" diff &&
	aptix diff --json $s1 $s2 >diff.json &&
	json_field .tool_calls.b <diff.json | grep "^tool result call_one"
'

test_expect_success 'usage counts the calls and the requests that answered' '
	aptix usage --json >usage.json &&
	test "$(json_field .total.tool_calls <usage.json)" = 1 &&
	test "$(json_field .total.tool_result_requests <usage.json)" = 1 &&
	aptix usage >usage &&
	grep "^1 tool call; 1 request sent tool results" usage
'

test_expect_success 'refused: a call answered already' '
	store_state before &&
	test_must_fail aptix continue --tool-output call_one=ls.out 2>err &&
	grep "tool call .call_one. was answered already (it was asked in turn 1 of conversation .$conv.); nothing sent" err &&
	store_state after &&
	test_cmp before after
'

test_expect_success 'two parallel calls, arguments in many deltas, --json' '
	long=$(printf "%0200d" 0) &&
	calls "[{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":\\\"echo $long\\\"}\",\"call_id\":\"call_p1\"},{\"name\":\"shell\",\"arguments\":\"{\\\"cmd\\\":\\\"false\\\"}\",\"call_id\":\"call_p2\"}]" 1 &&
	n=$(request_count) &&
	aptix continue --no-files --no-rag --json -m "run both" >out.json &&
	request_log $((n + 1)) | json_field .response.events >events &&
	test $(grep -c "function_call_arguments.delta" events) -gt 200 &&
	test "$(json_field .kind <out.json)" = tool_calls &&
	test "$(json_field .status <out.json)" = awaiting_tool_results &&
	test "$(json_field .tool_calls[0].call_id <out.json)" = call_p1 &&
	test "$(json_field .tool_calls[0].arguments <out.json)" = "{\"cmd\":\"echo $long\"}" &&
	test "$(json_field .tool_calls[1].name <out.json)" = shell &&
	request_body $((n + 1)) >body &&
	test "$(json_field .tools[0].name <body)" = shell
'

# refused_results <json> <what stderr says>: continue refuses it
refused_results () {
	printf "%s\n" "$1" >bad.json &&
	test_must_fail aptix continue --tool-results bad.json 2>err &&
	grep -e "$2" err
}

test_expect_success 'a wrong --tool-results is refused, naming the result' '
	store_state before &&
	refused_results "[{\"call_id\":\"call_p1\",\"output\":\"x\",\"exit_code\":\"0\"}]" \
		"^fatal: --tool-results bad.json: tool result .call_p1.: .exit_code. must be an integer$" &&
	refused_results "{\"call_p1\":{\"stdout\":\"x\"}}" \
		"tool result .call_p1.: an \"output\" string is needed" &&
	refused_results "[{\"output\":\"x\"}]" "tool result .#1.: no \"call_id\" string" &&
	refused_results "[{\"call_id\":\"call_p1\",\"output\":\"x\",\"status\":\"maybe\"}]" \
		"status. is ok, error, denied or cancelled" &&
	refused_results "[]" "tool results: none given" &&
	store_state after &&
	test_cmp before after
'

test_expect_success 'both outputs at once with --tool-results' '
	cat >results.json <<-EOF &&
	[{"call_id":"call_p1","output":"$long\n","stdout":"$long\n",
	  "exit_code":0,"duration_ms":5,"cwd":"/src","argv":["sh","-c","echo"]},
	 {"call_id":"call_p2","output":"exit 1","stderr":"false failed\n",
	  "exit_code":1}]
	EOF
	aptix continue --tool-results results.json >out &&
	grep "^Answer #.* to tool outputs: call_p1=0000.*; call_p2=exit 1 " out &&
	turn=$(aptix cat-object -p HEAD | sed -n "s/^turn  *//p") &&
	aptix cat-object -p $turn | sed -n "s/^tool result  *//p" >results &&
	test_line_count = 2 results &&
	aptix cat-object -p $(sed -n 2p results) >r2 &&
	grep "^exit code  *1$" r2 &&
	grep "^status  *error$" r2 &&
	grep "^stderr  *13 bytes" r2 &&
	aptix cat-object -p $(sed -n 1p results) >r1 &&
	grep "^duration  *5 ms$" r1 &&
	grep "^cwd  */src$" r1 &&
	grep "^argv  *sh$" r1
'

test_expect_success 'an expired chain in between: calls and outputs re-sent' '
	calls "[{\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"call_e\"}]" &&
	aptix continue --no-files --no-rag -m "once more" >out &&
	echo done >e.out &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	n=$(request_count) &&
	aptix continue --no-files --no-rag --tool-output call_e=e.out >out 2>err &&
	grep "^Answer #.* to tool outputs: call_e=done" out &&
	grep "started a new chain" err &&
	request_body $((n + 2)) >body &&
	test "$(json_field .previous_response_id <body)" = null &&
	json_field .input <body >input &&
	python3 - <<-\EOF
	import json
	items = json.load(open("input"))
	types = [i.get("type", "message") for i in items]
	assert types[-2:] == ["function_call", "function_call_output"], types
	assert items[-2]["call_id"] == items[-1]["call_id"] == "call_e"
	assert items[-2]["name"] == "shell" and items[-2]["arguments"] == "{}"
	assert items[-1]["output"] == "done\n"
	assert any(i.get("content") == "once more" for i in items), items
	EOF
'

test_expect_success 'a credential in an output is redacted, with a warning' '
	calls "[{\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"call_s\"}]" &&
	aptix continue --no-files --no-rag -m "show the env" >out &&
	token=gh"p_"$(printf "%s" "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5" | head -c 36) &&
	printf "GITHUB_TOKEN=%s\nHOME=/root\n" "$token" >env.out &&
	n=$(request_count) &&
	aptix continue --tool-output call_s=env.out >out 2>err &&
	grep "warning: the output of tool call .call_s. held a credential (rule github-token) on line 1: redacted" err &&
	request_body $((n + 1)) >body &&
	! grep "$token" body &&
	grep "REDACTED:github-token" body &&
	if test_have_prereq MDB_DUMP
	then
		! store_text | grep "$token"
	fi
'

test_expect_success '--no-tools: the tools are not sent, nor remembered' '
	n=$(request_count) &&
	aptix continue --no-files --no-rag --no-tools -m "no tools now" >out &&
	request_body $((n + 1)) >body &&
	test "$(json_field .tools <body)" = null &&
	aptix continue --no-files --no-rag -m "still none" >out &&
	request_body $((n + 2)) >body &&
	test "$(json_field .tools <body)" = null &&
	aptix continue --no-files --no-rag --tools tools.json -m "again" >out
'

test_expect_success 'kill -9 while answering, then answer again' '
	calls "[{\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"call_k\"}]" &&
	aptix continue --no-files --no-rag -m "killed later" >out &&
	waiting=$(aptix rev-parse HEAD) &&
	echo "killed output" >k.out &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	n=$(request_count) &&
	start_turn killed --no-files --no-rag --tool-output call_k=k.out &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	kill -9 $pid &&
	wait_for_exit $pid &&
	aptix continue --no-files --no-rag --tool-output call_k=k.out >out 2>err &&
	grep "^Answer #.* to tool outputs: call_k=killed output" out &&
	test "$(aptix rev-parse HEAD^)" = $waiting &&
	aptix log --all --oneline >log &&
	grep "\[failed\]" log &&
	aptix fsck --full >fsck &&
	! grep -v "^dangling" fsck
'

test_expect_success 'two processes answer the same calls: one wins' '
	calls "[{\"name\":\"shell\",\"arguments\":\"{}\",\"call_id\":\"call_r\"}]" &&
	aptix continue --no-files --no-rag -m "race" >out &&
	echo "race output" >r.out &&
	standin_fault "{\"kind\":\"slow\",\"delay\":1}" &&
	n=$(request_count) &&
	start_turn first --no-files --no-rag --tool-output call_r=r.out &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	test_must_fail aptix continue --no-files --no-rag --tool-output call_r=r.out 2>second.err &&
	grep "is busy" second.err &&
	wait $pid &&
	grep "^Answer #.* to tool outputs: call_r=race output" first.out &&
	test_must_fail aptix continue --no-files --no-rag --tool-output call_r=r.out 2>third.err &&
	grep "tool call .call_r. was answered already" third.err &&
	test "$(request_count)" = $((n + 1))
'

test_done
