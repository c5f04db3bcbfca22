#!/bin/sh
test_description='restarting the response chain against the OpenAI stand-in

When the server forgot the previous response, or the chain is older than
openai.chain-ttl, the turn starts a new chain and sends the context of
the earlier turns again, rebuilt from the store: a summary of the older
turns and the most recent ones verbatim (context.window-turns...).'
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

# roles <body-file>: the roles of the input items, on one line
roles () {
	python3 -c '
import json, sys
body = json.load(open(sys.argv[1]))
print(" ".join(m["role"] for m in body["input"]))
' "$1"
}

# content <body-file> <n>: the text of input item n
content () {
	json_field ".input[$2].content" <"$1"
}

test_expect_success 'setup: two turns' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix continue -m "alpha question" >out 2>err &&
	aptix continue -m "beta question" >out 2>err &&
	a1=$(field HEAD~1 .answer) &&
	a2=$(field HEAD .answer) &&
	r2=$(field HEAD .response_id) &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success 'the server forgot the previous response: the turn still succeeds' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix continue -m "gamma question" >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	# the first try chained, and was refused
	test "$(request_body $((n + 1)) | json_field .previous_response_id)" = "$r2" &&
	test "$(request_log $((n + 1)) | json_field .response.status)" = 400 &&
	test "$(request_log $((n + 1)) | json_field .response.expired)" = "$r2" &&
	# the answer: a new chain (depth 1) carrying all three user texts
	echo "Answer #3 to: gamma question (chain depth 1, context chars 41)" >expect &&
	test_cmp expect out &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(field HEAD .status)" = committed
'

test_expect_success 'a warning on stderr says the chain restarted' '
	grep "^warning: .*$r2" err &&
	grep "^warning: .*started a new chain" err
'

test_expect_success 'the request that succeeded sends the earlier turns again' '
	request_body $((n + 2)) >body &&
	! grep previous_response_id body &&
	test "$(roles body)" = "user assistant user assistant user" &&
	test "$(content body 0)" = "alpha question" &&
	test "$(content body 1)" = "$a1" &&
	test "$(content body 2)" = "beta question" &&
	test "$(content body 3)" = "$a2" &&
	test "$(content body 4)" = "gamma question" &&
	test "$(json_field .instructions <body)" = \
		"$(request_body 1 | json_field .instructions)"
'

test_expect_success 'show lists the warning and the restart' '
	aptix show >show &&
	grep -A2 "^Warnings:" show >warnings &&
	grep "started a new chain" warnings &&
	grep "^Chain restarted: *yes" show &&
	aptix show --json >show.json &&
	test "$(json_field .chain_restarted <show.json)" = true &&
	test "$(json_field .previous_response_id <show.json)" = null &&
	json_field .warnings[0] <show.json | grep "$r2" &&
	test "$(json_field .usage.model_requests <show.json)" = 2 &&
	r3=$(json_field .response_id <show.json)
'

test_expect_success 'the next turn chains from the new response' '
	aptix continue --json -m "delta question" >out.json 2>err &&
	test "$(last_request_body | json_field .previous_response_id)" = "$r3" &&
	test "$(last_request_body | json_field .input[1])" = null &&
	json_field .text <out.json | grep "(chain depth 2, " &&
	test "$(json_field .chain_restarted <out.json)" = false &&
	test "$(json_field .warnings <out.json | tr -d " \n")" = "[]" &&
	! grep warning err
'

test_expect_success '--json reports a restart' '
	r4=$(field HEAD .response_id) &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix continue --json -m "epsilon question" >out.json 2>err &&
	test "$(json_field .kind <out.json)" = answer &&
	test "$(json_field .chain_restarted <out.json)" = true &&
	json_field .warnings[0] <out.json | grep "$r4"
'

test_expect_success 'a fork restarting its chain sends only its own ancestry' '
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix fork "$head" -m "fork of beta" >out 2>err &&
	grep "^warning: .*started a new chain" err &&
	last_request_body >body &&
	! grep previous_response_id body &&
	test "$(roles body)" = "user assistant user assistant user" &&
	test "$(content body 0)" = "alpha question" &&
	test "$(content body 2)" = "beta question" &&
	test "$(content body 4)" = "fork of beta" &&
	! grep "gamma question" body &&
	test "$(field HEAD .parent)" = "$head" &&
	aptix switch $conv >/dev/null
'

test_expect_success 'expiry by time: setup a conversation under a fake clock' '
	aptix config openai.chain-ttl 90s &&
	aptix switch -c >/dev/null &&
	tconv=$(aptix symbolic-ref --short HEAD) &&
	test_tick &&
	aptix continue -m "one" >out 2>err &&
	t1=$(field HEAD .response_id) &&
	test "$(field HEAD .created_at_ms)" = ${APTIX_TEST_DATE}000 &&
	test "$(field HEAD .chain_expires_at_ms)" = $((APTIX_TEST_DATE + 90))000 &&
	test_tick &&
	aptix continue -m "two" >out 2>err &&
	# 60 s later: the chain is alive
	test "$(last_request_body | json_field .previous_response_id)" = "$t1" &&
	t2=$(field HEAD .response_id) &&
	a1=$(field HEAD~1 .answer) &&
	a2=$(field HEAD .answer)
'

test_expect_success 'expiry by time: a turn after the TTL starts a new chain' '
	test_tick &&
	test_tick &&
	n=$(request_count) &&
	aptix continue --dry-run -m "three" >dry &&
	! grep previous_response_id dry &&
	grep "\"content\": \"one\"" dry &&
	test "$(request_count)" = $n &&
	aptix continue -m "three" >out 2>err &&
	# one request: no round trip to learn that the chain is gone
	test "$(request_count)" = $((n + 1)) &&
	last_request_body >body &&
	! grep previous_response_id body &&
	test "$(roles body)" = "user assistant user assistant user" &&
	test "$(content body 0)" = one &&
	test "$(content body 1)" = "$a1" &&
	test "$(content body 2)" = two &&
	test "$(content body 3)" = "$a2" &&
	test "$(content body 4)" = three &&
	grep "(chain depth 1, context chars 11)" out &&
	grep "^warning: the response chain expired.*$t2" err &&
	aptix show --json >show.json &&
	test "$(json_field .chain_restarted <show.json)" = true &&
	json_field .warnings[0] <show.json | grep "expired" &&
	test "$(json_field .usage.model_requests <show.json)" = 1
'

test_expect_success 'expiry by time: the chain is alive again afterwards' '
	t3=$(field HEAD .response_id) &&
	test_tick &&
	aptix continue -m "four" >out 2>err &&
	test "$(last_request_body | json_field .previous_response_id)" = "$t3" &&
	! grep warning err
'

test_expect_success 'setup: a longer conversation for the context limits' '
	aptix config --unset openai.chain-ttl &&
	aptix switch -c >/dev/null &&
	for q in "first of five" "second of five" "third of five" \
		"fourth of five" "fifth of five"
	do
		test_tick &&
		aptix continue -m "$q" >out 2>err || return 1
	done &&
	a5=$(field HEAD .answer)
'

test_expect_success 'context.window-turns 1: the last turn verbatim, older ones summarised' '
	aptix config context.window-turns 1 &&
	test_when_finished "aptix config --unset context.window-turns" &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "sixth of six" >out 2>err &&
	last_request_body >body &&
	! grep previous_response_id body &&
	test "$(roles body)" = "user user assistant user" &&
	content body 0 >summary &&
	grep "^Summary of the earlier turns" summary &&
	for i in 1 2 3 4
	do
		grep "^- Turn $i asked: .* of five$" summary || return 1
	done &&
	test "$(grep -c "^  Answer began: Answer #" summary)" = 4 &&
	! grep "fifth of five" summary &&
	test "$(content body 1)" = "fifth of five" &&
	test "$(content body 2)" = "$a5" &&
	test "$(content body 3)" = "sixth of six" &&
	grep "^warning: .*started a new chain" err
'

test_expect_success 'the summary keeps the oldest turns first' '
	grep -n "Turn [0-9] asked" summary | cut -d: -f1 >lines &&
	sort -n lines >sorted &&
	test_cmp sorted lines
'

test_expect_success 'context.window-chars: at least the last turn, within the limit' '
	aptix config context.window-chars 10 &&
	test_when_finished "aptix config --unset context.window-chars" &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "seventh" >out 2>err &&
	last_request_body >body &&
	test "$(roles body)" = "user user assistant user" &&
	content body 0 >summary &&
	grep "^- Turn 5 asked: fifth of five$" summary &&
	! grep "Turn 6" summary &&
	test "$(content body 1)" = "sixth of six" &&
	test "$(content body 3)" = seventh
'

test_expect_success 'context.summary-chars bounds the summary' '
	aptix config context.summary-chars 120 &&
	aptix config context.window-turns 1 &&
	test_when_finished "aptix config --unset context.summary-chars && aptix config --unset context.window-turns" &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "eighth" >out 2>err &&
	last_request_body >body &&
	test "$(roles body)" = "user user assistant user" &&
	content body 0 >summary &&
	python3 -c "
import sys
text = open(sys.argv[1]).read().rstrip(\"\\n\")
body = text.split(\"\\n\", 1)[1]
sys.exit(0 if len(body) <= 120 else 1)
" summary &&
	# no turn is left out: six turns share the 120 bytes, in one line
	grep "^Summary of the earlier turns of this conversation, turns 1 to 6 " summary &&
	grep "^- Turns 1-6 asked: first of" summary
'

# Regression: the rolling summary is cut at context.summary-chars on a
# UTF-8 boundary, so the restarted request stays valid JSON text.
# "- Turn 1 asked: " is 16 bytes, so 17 would cut the first e-acute.
test_expect_success 'a summary cut inside a UTF-8 character still makes a valid request' '
	aptix switch -c >/dev/null &&
	test_tick &&
	aptix continue -m "ééééé accents first" >out 2>err &&
	test_tick &&
	aptix continue -m "plain second" >out 2>err &&
	aptix config context.window-turns 1 &&
	aptix config context.summary-chars 17 &&
	test_when_finished "aptix config --unset context.summary-chars && aptix config --unset context.window-turns" &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "third after restart" >out 2>err &&
	last_request_body >body &&
	test "$(roles body)" = "user user assistant user" &&
	content body 0 | grep "^Summary of the earlier turns"
'

# Rehydration loses no turn: forty turns, each with its own code word;
# once the chain is gone, every code word is in the window or in the
# summary of the restarted request, and the request stays within
# context.window-chars plus context.summary-chars.
test_expect_success 'a rehydrated chain of 40 turns holds every code word' '
	aptix switch -c >/dev/null &&
	for i in $(test_seq 1 40)
	do
		test_tick &&
		aptix continue -m "turn $i: remember the code word KW$i-$((i * 7919 % 1000))x and keep it in mind for later, it matters" >out 2>err || return 1
	done &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "list every code word" >out 2>err &&
	last_request_body >body &&
	! grep previous_response_id body &&
	for i in $(test_seq 1 40)
	do
		grep -q "KW$i-$((i * 7919 % 1000))x" body || {
			echo "code word of turn $i is missing" >&2
			return 1
		}
	done &&
	content body 0 >summary &&
	grep "^Summary of the earlier turns of this conversation, turns 1 to " summary &&
	python3 -c "
import json, sys
body = json.load(open(sys.argv[1]))
size = sum(len(m[\"content\"].encode()) for m in body[\"input\"])
sys.exit(0 if size <= 24000 + 4000 else 1)
" body
'

test_expect_success 'a small summary budget still names every turn' '
	aptix config context.summary-chars 400 &&
	aptix config context.window-turns 2 &&
	test_when_finished "aptix config --unset context.summary-chars && aptix config --unset context.window-turns" &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue -m "once more" >out 2>err &&
	last_request_body >body &&
	content body 0 >summary &&
	python3 -c "
import re, sys
text = open(sys.argv[1]).read()
body = text.split(\"\\n\", 1)[1]
seen = set()
for m in re.finditer(r\"^- Turns? (\\d+)(?:-(\\d+))? asked\", body, re.M):
    a = int(m.group(1)); b = int(m.group(2) or a)
    seen.update(range(a, b + 1))
# the window holds the last two turns (41 and 40), the summary 1..39
sys.exit(0 if seen == set(range(1, 40)) and len(body) <= 400 else 1)
" summary
'

test_expect_success 'a new chain counts active files against its budget' '
	test_when_finished "rm -f big1.txt big2.txt && aptix config --unset context.window-chars" &&
	aptix config context.window-chars 3000 &&
	printf "%02000d\n" 1 >big1.txt &&
	printf "%02000d\n" 2 >big2.txt &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	test_tick &&
	aptix continue --file big1.txt --file big2.txt -m "with two files" >out 2>err &&
	last_request_body >body &&
	grep "left out: over the new chain.s context budget" err &&
	grep "Active files left out (over the context budget): big2.txt" body
'

test_expect_success 'a chain over context.chain-max-chars starts afresh with the current files' '
	test_when_finished "rm -f notes.txt && aptix config --unset context.chain-max-chars" &&
	aptix switch -c capped &&
	echo "version one of the notes" >notes.txt &&
	aptix continue --file notes.txt -m "capped first" >out 2>err &&
	first=$(field HEAD .response_id) &&
	echo "version two of the notes" >notes.txt &&
	aptix continue --file notes.txt -m "capped second" >out 2>err &&
	# still one chain: the second turn chained on the first
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = "$first" &&
	! grep "chain-max-chars" err &&
	aptix config context.chain-max-chars 500 &&
	echo "version three of the notes" >notes.txt &&
	aptix continue --file notes.txt -m "capped third" >out 2>err &&
	# one line says so, and the turn records it
	test "$(grep -c "over context.chain-max-chars (500)" err)" = 1 &&
	aptix show --json HEAD >show.json &&
	grep "over context.chain-max-chars" show.json &&
	test "$(field HEAD .chain_restarted)" = true &&
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = null &&
	# the current version of the file only, and the earlier turns
	grep "version three" body &&
	! grep "version one" body &&
	! grep "version two" body &&
	grep "capped second" body &&
	# the next turn chains on the new chain (it carries less)
	aptix config context.chain-max-chars 100000 &&
	restarted=$(field HEAD .response_id) &&
	aptix continue -m "capped fourth" >out 2>err &&
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = "$restarted"
'

# summary_of <dry-run output>: the text of the request's first input
summary_of () {
	python3 -c '
import json, sys
t = open(sys.argv[1]).read()
print(json.loads(t[t.index("{"):])["input"][0]["content"])
' "$1"
}

# summary_within <file> <max>: the summary after its header line is at
# most max bytes
summary_within () {
	python3 -c '
import sys
text = open(sys.argv[1], "rb").read().rstrip(b"\n")
body = text.split(b"\n", 1)[1]
if len(body) > int(sys.argv[2]):
    sys.exit("summary of %d bytes over %s" % (len(body), sys.argv[2]))
' "$1" "$2"
}

# A history whose index holds no rolling summary: plumbing numbers a
# fork's turns from 1 again under a parent at turn 3. A restart reads
# the turns themselves then: only as many as its summary can use, into
# context.summary-chars (issue 22: it read the whole history, then freed
# memory, and wrote " / " for every turn past the budget).
test_expect_success 'setup: a history numbered out of order, by plumbing' '
	. "$TEST_DIRECTORY"/lib-objects.sh &&
	s=$(make_session walked "root one") &&
	s=$(make_session walked "root two" $s) &&
	s=$(make_session walked "root three" $s) &&
	for i in $(test_seq 1 40)
	do
		s=$(make_session walked "KW$i: forked turn $i" $s $i) ||
		return 1
	done &&
	aptix update-ref refs/conversations/walked $s
'

# walked_restart <summary-chars>: a dry-run restart of "walked" into
# dry, its summary into summary, within the budget; the window holds
# turns 40 to 35, the summary the 16 turns before them
walked_restart () {
	aptix config context.summary-chars $1 &&
	aptix continue --conversation walked --dry-run --no-files --no-rag \
		-m next >dry &&
	aptix config --unset context.summary-chars &&
	summary_of dry >summary &&
	grep "^Summary of the earlier turns of this conversation, turns 19 to 34 (" summary &&
	summary_within summary $1
}

test_expect_success 'a restart without a rolling summary names the turns it summarises' '
	walked_restart 400 &&
	grep "^- Turns before these: not summarised" summary &&
	grep "KW34" summary &&
	! grep "KW35" summary &&
	grep "KW35: forked turn 35" dry &&
	grep "KW40: forked turn 40" dry
'

test_expect_success 'a restart without a rolling summary stays within a small budget' '
	walked_restart 40
'

# body_size <file>: bytes of a request body
body_size () {
	wc -c <"$1" | tr -d " "
}

# restart_within <instruction>: a turn whose chain the server forgot;
# its request (in body) within window-chars + summary-chars
restart_within () {
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix continue -m "$1" >out 2>err &&
	last_request_body >body &&
	test "$(body_size body)" -le 28000
}

# A restart's window replays the recent turns cut to its budget
# (issue 23): an earlier answer of 100 KB was sent whole, 100,371 bytes
# against window-chars 24,000 + summary-chars 4,000.
test_expect_success 'a restart cuts a long answer to the window' '
	aptix switch -c long >/dev/null &&
	standin_fault "{\"kind\":\"answer\",\"text\":\"START of a long answer. \",\"times\":1}" \
		"{\"kind\":\"answer\",\"text\":\"0123456789abcde \",\"times\":6250}" &&
	aptix continue -m "a short one first" >out 2>err &&
	aptix continue -m "give a long answer" >out 2>err &&
	test $(field HEAD .answer | wc -c) -gt 100000 &&
	restart_within "after the long one" &&
	test "$(roles body)" = "user assistant user assistant user" &&
	test "$(content body 0)" = "a short one first" &&
	test "$(content body 1)" = "START of a long answer. " &&
	content body 3 >answer &&
	grep "^\[\.\.\. [0-9]* bytes not replayed \.\.\.\]$" answer &&
	head -c 20 answer | grep "^0123456789abcde 0123" &&
	test $(wc -c <answer) -le 24000 &&
	test "$(content body 4)" = "after the long one"
'

# An answer quoting three files of 80 KB: their versions of then are
# not replayed (the files were deleted since; a file reaches the model
# as it is now, as an active file).
test_expect_success 'a restart does not replay the files an answer quoted' '
	aptix switch -c quoted >/dev/null &&
	python3 -c "
import json
lines = \"\".join(\"old_line_%05d = 0;\\n\" % i for i in range(4200))
block = \"Here is the file:\\n\`\`\`c\\n\" + lines + \"\`\`\`\\n\"
print(json.dumps({\"kind\": \"answer\", \"text\": block, \"times\": 3}))
" >fault.json &&
	test $(wc -c <fault.json) -gt 80000 &&
	standin_control "{\"faults\":[$(cat fault.json)]}" >/dev/null &&
	aptix continue -m "show me the three files" >out 2>err &&
	test $(field HEAD .answer | wc -c) -gt 240000 &&
	restart_within "and now?" &&
	! grep old_line_ body &&
	content body 1 >answer &&
	test $(grep -c "^\[4200 lines of code not replayed: files are sent in their current version\]$" answer) = 3 &&
	test $(grep -c "^Here is the file:$" answer) = 3
'

# A restart bigger than context.chain-max-chars: the new chain counts
# what it adds after its first request, else it restarted every other
# turn, resending the window each time (issue 23).
test_expect_success 'a restart bigger than the chain cap is not restarted at once' '
	aptix switch -c capwin >/dev/null &&
	for i in 1 2 3 4
	do
		standin_fault "{\"kind\":\"answer\",\"text\":\"answer $i goes on \",\"times\":450}" &&
		aptix continue -m "long answer $i" >out 2>err || return 1
	done &&
	aptix config context.chain-max-chars 20000 2>config.err &&
	test_when_finished "aptix config --unset context.chain-max-chars" &&
	grep "^warning: context.chain-max-chars (20000) is below what a chain restart sends" config.err &&
	aptix continue -m "fifth restarts" >out 2>err &&
	grep "^warning: the response chain added [0-9]* bytes after its first request, over context.chain-max-chars (20000)" err &&
	grep "^warning: the new chain.s first request is [0-9]* bytes, more than the 20000 of context.chain-max-chars" err &&
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = null &&
	test $(body_size body) -gt 20000 &&
	test $(body_size body) -le 28000 &&
	restarted=$(field HEAD .response_id) &&
	aptix continue -m "sixth chains" >out 2>err &&
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = "$restarted" &&
	test $(body_size body) -lt 1000 &&
	! grep warning err &&
	sixth=$(field HEAD .response_id) &&
	aptix continue -m "seventh chains" >out 2>err &&
	last_request_body >body &&
	test "$(json_field .previous_response_id <body)" = "$sixth" &&
	! grep warning err
'

test_expect_success 'config warns only when the cap is below the restart budget' '
	aptix config context.chain-max-chars 30000 2>config.err &&
	test_must_be_empty config.err &&
	aptix config context.window-chars 40000 2>config.err &&
	grep "^warning: context.chain-max-chars (30000) is below" config.err &&
	aptix config --unset context.window-chars &&
	aptix config --unset context.chain-max-chars
'

test_done
