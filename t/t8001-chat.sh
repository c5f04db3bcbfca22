#!/bin/sh
test_description='aptix chat in batch mode, against the OpenAI stand-in

With stdin not a terminal, each input line is one turn (a trailing
backslash joins lines), slash commands included; answers go to stdout,
status lines to stderr, and no picker is ever waited for. Every turn is
an ordinary snapshot that log, show and fork see.'
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

# The trash directory is no git work tree: only --file or /files send files.
chat () {
	aptix chat --no-rag "$@"
}

test_expect_success 'setup: stand-in and store' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	test -n "$conv"
'

test_expect_success 'batch: one turn a line, answers on stdout only' '
	test_write_lines "first question" "second \\" "on two lines" >script &&
	chat <script >out 2>err &&
	cat >expect <<-\EOF &&
	Answer #1 to: first question (chain depth 1, context chars 14)
	Answer #2 to: second 
	on two lines (chain depth 2, context chars 34)
	EOF
	test_cmp expect out &&
	test "$(request_count)" = 2 &&
	test "$(last_request_body | json_field .input[0].content)" = \
		"$(printf "second \non two lines")" &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field HEAD~1 .response_id)"
'

test_expect_success 'batch: status lines on stderr, HEAD continued' '
	grep "^chat: new conversation ${conv%%-*}" err &&
	test "$(grep -c "^\[${conv%%-*} [0-9a-f]*\] .* tokens" err)" = 2 &&
	test "$(aptix symbolic-ref --short HEAD)" = "$conv" &&
	aptix log --format=%s >log &&
	test_write_lines "second " "first question" >expect &&
	test_cmp expect log
'

test_expect_success 'batch: a new run goes on with HEAD'"'"'s conversation' '
	echo third >script &&
	chat <script >out 2>err &&
	grep "chain depth 3" out &&
	test "$(field HEAD .conversation)" = "$conv"
'

test_expect_success '--new starts a new conversation, the old one kept' '
	echo "in a new one" >script &&
	chat --new <script >out 2>err &&
	grep "^chat: new conversation" err &&
	grep "chain depth 1" out &&
	new=$(field HEAD .conversation) &&
	test "$new" != "$conv" &&
	test "$(aptix log --format=%s "$conv" | wc -l)" = 3
'

test_expect_success '--session <conversation> resumes it' '
	echo "back to the first" >script &&
	chat --session "${conv%%-*}" <script >out 2>err &&
	grep "chain depth 4" out &&
	test "$(field HEAD .conversation)" = "$conv" &&
	grep "^chat: conversation ${conv%%-*} \"first question\", 3 turns" err
'

test_expect_success '--session <session> not a head: forks, and says so' '
	old=$(aptix rev-parse "$conv~2") &&
	echo "from the second" >script &&
	chat --session "$old" <script >out 2>err &&
	grep "not the head of its conversation: the next turn forks" err &&
	grep "^chat: now in conversation" err &&
	test "$(field HEAD .parent)" = "$old" &&
	test "$(field HEAD .conversation)" != "$conv" &&
	grep "chain depth 3" out
'

test_expect_success '--session <head session> continues in place' '
	head=$(aptix rev-parse "$conv") &&
	echo "at the head" >script &&
	chat --session "$head" <script >out 2>err &&
	! grep forks err &&
	test "$(field HEAD .conversation)" = "$conv" &&
	test "$(field HEAD .parent)" = "$head"
'

test_expect_success 'bad uses' '
	test_expect_code 128 chat --new --session x </dev/null 2>err &&
	grep "cannot be used together" err &&
	echo hi | test_expect_code 128 chat --session nosuchthing 2>err &&
	grep "^fatal: .nosuchthing. names no conversation or session" err &&
	echo q | test_expect_code 128 chat --session nosuch 2>err &&
	! grep "^error:" err
'

test_expect_success '/help lists every command; unknown ones are refused' '
	n=$(request_count) &&
	printf "/help\n/frob\n" | chat >out 2>err &&
	for c in help new clear resume fork rewind rerun log show diff status \
		context workspace files model rename compact edit quit
	do
		grep "^  /$c" out || return 1
	done &&
	grep "unknown command .*/frob" err &&
	test "$(request_count)" = $n
'

test_expect_success '// sends a line starting with /; a path is text' '
	n=$(request_count) &&
	printf "//help me\n/usr/lib holds what\n" | chat >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	test "$(request_body $((n + 1)) | json_field .input[0].content)" = \
		"/help me" &&
	test "$(last_request_body | json_field .input[0].content)" = \
		"/usr/lib holds what"
'

test_expect_success '/log, /show, /show <n>, /diff run the commands' '
	printf "/log\n/show\n/show 1\n/diff\n" | chat >out 2>err &&
	aptix log --graph --oneline "$conv" >expect.log &&
	aptix show "$conv" >expect.show &&
	first=$(aptix log --format=%H --reverse "$conv" | head -n 1) &&
	aptix show "$first" >expect.show1 &&
	aptix diff "$conv~1" "$conv" >expect.diff &&
	cat expect.log expect.show expect.show1 expect.diff >expect &&
	test_cmp expect out &&
	! grep -v "^chat: conversation" err
'

test_expect_success '/show <n> past the end, /diff of a first turn' '
	printf "/show 99\n" | chat >out 2>err &&
	grep "no turn 99: the last one is turn" err &&
	echo one | chat --new >/dev/null 2>&1 &&
	printf "/diff\n" | chat >out 2>err &&
	grep "the first turn: nothing to compare" err &&
	printf "/log\n" | chat --new >out 2>err &&
	grep "no turn yet" err
'

test_expect_success '/status runs aptix status' '
	aptix switch "$conv" >/dev/null &&
	printf "/status\n" | chat >out 2>err &&
	aptix status >expect &&
	test_cmp expect out
'

test_expect_success '/context: the chain and what the next turn sends' '
	echo "some content" >ctx.txt &&
	printf "/files add ctx.txt\n/context\n" | chat >out 2>err &&
	grep "^Conversation ${conv%%-*}, [0-9]* turns, head " out &&
	grep "^Chain: resp_[0-9a-f]*, alive until " out &&
	grep "^The chain holds [0-9]* turns (.* bytes" out &&
	grep "^Next turn: model gpt-" out &&
	grep "^Active files: 1 to send (13 bytes), 0 already in the chain" out &&
	grep "^  send  *13  ctx.txt$" out
'

test_expect_success '/files: add, list, drop, clear; the turn sends them' '
	echo "file A" >a.txt &&
	echo "file B" >b.txt &&
	cat >script <<-\EOF &&
	/files add a.txt b.txt
	/files drop a.txt
	/files
	with b
	/files clear
	/files
	EOF
	chat <script >out 2>err &&
	grep "^b.txt$" out &&
	grep "No file added" out &&
	last_request_body >body &&
	grep "file B" body &&
	! grep "file A" body
'

test_expect_success '/model shows and sets the model of the next turns' '
	printf "/model\n/model gpt-other\n/model\nwith another model\n" |
	chat >out 2>err &&
	test "$(sed -n 2p out)" = gpt-other &&
	test "$(last_request_body | json_field .model)" = gpt-other &&
	test "$(field HEAD .model)" = gpt-other &&
	grep "next turns use model gpt-other" err
'

test_expect_success '/compact: the next turn starts a new chain' '
	printf "/compact\n/context\nafter compact\nand after\n" |
	chat >out 2>err &&
	grep "/compact: the next turn starts a new one" out &&
	n=$(request_count) &&
	request_body $((n - 1)) >body &&
	! grep previous_response_id body &&
	grep "back to the first" body &&
	grep "started a new chain as asked" err &&
	test "$(field HEAD~1 .chain_restarted)" = true &&
	# the one after chains from it again
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field HEAD~1 .response_id)"
'

test_expect_success '/fork: the next turn forks, the chat follows it' '
	head=$(aptix rev-parse "$conv") &&
	printf "/fork\nforked\nafter fork\n" | chat >out 2>err &&
	grep "^chat: /fork: the next turn forks" err &&
	fconv=$(field HEAD .conversation) &&
	test "$fconv" != "$conv" &&
	test "$(field HEAD~1 .parent)" = "$head" &&
	test "$(field HEAD~1 .conversation)" = "$fconv" &&
	test "$(aptix rev-parse "$conv")" = "$head"
'

test_expect_success '/fork <session> forks that one' '
	old=$(aptix rev-parse "$conv~3") &&
	printf "/fork $old\nforked from old\n" | chat >out 2>err &&
	test "$(field HEAD .parent)" = "$old"
'

test_expect_success '/rerun runs the last instruction again, as a branch' '
	aptix switch "$conv" >/dev/null &&
	head=$(aptix rev-parse "$conv") &&
	printf "/rerun\n" | chat >out 2>err &&
	test "$(field HEAD .parent)" = "$(aptix rev-parse "$head~1")" &&
	test "$(field HEAD .instruction)" = "$(field "$head" .instruction)" &&
	test "$(field HEAD .conversation)" != "$conv"
'

test_expect_success '/rerun after a failed turn: its instruction, in place' '
	head=$(aptix rev-parse "$conv") &&
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	test_must_fail aptix continue --no-rag --conversation "$conv" \
		-m "failed once" >/dev/null 2>&1 &&
	echo /rerun | chat --session "$conv" >out 2>err &&
	grep "Answer #.* to: failed once" out &&
	test "$(field "$conv" .instruction)" = "failed once" &&
	test "$(field "$conv" .parent)" = "$head" &&
	test "$(field "$conv" .status)" = committed &&
	test "$(aptix symbolic-ref --short HEAD)" = "$conv" &&
	! grep "now in conversation" err
'

test_expect_success 'revisions in chat are of its conversation; /fork <n>' '
	aptix switch "$conv" >/dev/null &&
	printf "elsewhere\n" | chat --new >/dev/null 2>&1 &&
	other=$(aptix symbolic-ref --short HEAD) &&
	test "$other" != "$conv" &&
	printf "/fork HEAD~2\nfrom two back\n" |
	chat --session "$conv" >out 2>err &&
	test "$(field HEAD .parent)" = "$(aptix rev-parse "$conv~2")" &&
	second=$(aptix log --format=%H --reverse "$conv" | sed -n 2p) &&
	aptix switch "$other" >/dev/null &&
	printf "/fork 2\nfrom the second turn\n/show @\n" |
	chat --session "$conv" >out 2>err &&
	! grep "^error" err &&
	test "$(field HEAD .parent)" = "$second" &&
	test "$(field HEAD .instruction)" = "from the second turn" &&
	aptix show HEAD >expect.show &&
	tail -n $(wc -l <expect.show) out >actual.show &&
	test_cmp expect.show actual.show
'

test_expect_success '/rewind lists the turns; /rewind <n> goes back to one' '
	aptix log --format="%H %S %s" --reverse "$conv" >log &&
	sed -n "s/^\([0-9a-f]*\) committed /\1 /p" log >turns &&
	n=$(wc -l <turns) &&
	printf "/rewind\n/rewind $n\n/rewind 2\nfrom turn two\n" |
	chat --session "$conv" >out 2>err &&
	i=0 &&
	while read -r id subject
	do
		i=$((i + 1)) &&
		grep "^ *$i  $(echo "$id" | cut -c1-12)  $subject" out ||
		return 1
	done <turns &&
	grep "^chat: that is the last turn: nothing to go back from" err &&
	grep "^chat: /rewind: the next turn forks" err &&
	second=$(sed -n "2s/ .*//p" turns) &&
	grep "^--- turn 2, $(echo "$second" | cut -c1-12), " out &&
	test "$(field HEAD .parent)" = "$second" &&
	test "$(field HEAD .instruction)" = "from turn two" &&
	test "$(field HEAD .conversation)" != "$conv" &&
	test "$(aptix rev-parse "$conv")" = "$(tail -n 1 turns | cut -d" " -f1)"
'

test_expect_success '/new and /clear: new conversations, the old kept' '
	aptix switch "$conv" >/dev/null &&
	before=$(aptix rev-parse "$conv") &&
	printf "/new\nin new\n/clear\nin cleared\n" | chat >out 2>err &&
	test "$(grep -c "^chat: new conversation" err)" = 2 &&
	grep "chain depth 1" out >depths &&
	test_line_count = 2 depths &&
	test "$(aptix rev-parse "$conv")" = "$before"
'

test_expect_success '/resume <conversation>; /resume alone needs a terminal' '
	printf "/resume\n/resume ${conv%%-*}\nresumed\n" | chat --new >out 2>err &&
	grep "/resume needs a conversation when not on a terminal" err &&
	test "$(field HEAD .conversation)" = "$conv"
'

test_expect_success '/workspace: workspace, store, index state' '
	printf "/workspace\n" | chat >out 2>err &&
	grep "^Workspace: " out &&
	grep "^Store:  *$(pwd)/.aptix$" out &&
	grep "^Conversations: [0-9]* here, [0-9]* in all$" out &&
	grep "^RAG index: 0 files, 0 chunks" out
'

test_expect_success '/rename sets the title; the prompt and sessions show it' '
	printf "/rename  The parser work\n" | chat --session "$conv" >out 2>err &&
	grep "^chat: conversation ${conv%%-*} is now \"The parser work\"" err &&
	aptix sessions --json --all-workspaces >list &&
	grep "\"title\": \"The parser work\"" list &&
	printf "/rename\n" | chat >out 2>err &&
	grep "usage: /rename <title>" err &&
	printf "/rename x\n" | chat --new >out 2>err &&
	grep "no turn yet" err
'

test_expect_success '/edit: the instruction from $EDITOR' '
	write_script editor.sh <<-\EOF &&
	printf "a long instruction\nwritten in the editor\n" >"$1"
	EOF
	printf "/edit\n" | EDITOR=./editor.sh chat >out 2>err &&
	test "$(last_request_body | json_field .input[0].content)" = \
		"$(printf "a long instruction\nwritten in the editor")" &&
	printf "/edit\n" | EDITOR=false chat >out 2>err &&
	grep "the editor .false. failed" err
'

test_expect_success '/quit stops reading' '
	n=$(request_count) &&
	printf "/quit\nnever sent\n" | chat >out 2>err &&
	test "$(request_count)" = $n
'

test_expect_success 'a failed turn keeps the instruction; the next chains' '
	aptix switch "$conv" >/dev/null &&
	head=$(aptix rev-parse "$conv") &&
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	printf "will fail\nafter the failure\n" | chat >out 2>err &&
	grep "failed; the instruction is kept" err &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(last_request_body | json_field .previous_response_id)" = \
		"$(field "$head" .response_id)" &&
	aptix log --failed --format="%s %S" "$conv" >log &&
	grep "^will fail failed" log
'

test_expect_success 'a closed stdout never loses the turn' '
	n=$(aptix log --format=%H "$conv" | wc -l) &&
	echo "nobody reads this" | chat | true &&
	test "$(aptix log --format=%H "$conv" | wc -l)" = $((n + 1)) &&
	test "$(field HEAD .instruction)" = "nobody reads this"
'

test_expect_success 'one chat per conversation: a second is refused' '
	mkfifo hold &&
	{ aptix chat --no-rag <hold >held.out 2>held.err & } &&
	pid=$! &&
	exec 6>hold &&
	for i in $(test_seq 100)
	do
		grep -q "^chat: conversation" held.err && break
		sleep 0.1
	done &&
	echo "second" | test_expect_code 128 chat >out 2>err &&
	grep "is open in another chat (pid $pid on .*, since " err &&
	grep "^fatal: .*: use --read-only to view it, or --fork" err
'

test_expect_success 'the second may view it read-only' '
	head=$(aptix rev-parse "$conv") &&
	printf "/log\nnot run\n/rerun\n" | chat --read-only >out 2>err &&
	grep "^chat: conversation .*(read-only)" err &&
	grep "open read-only: /fork to continue in a new one" err &&
	grep "/rerun: this conversation is open read-only" err &&
	grep "^\* $(echo "$head" | cut -c1-12) " out &&
	test "$(aptix rev-parse "$conv")" = "$head" &&
	printf "/new\nin a fresh one\n" | chat --read-only >out 2>err &&
	grep "^chat: new conversation" err &&
	grep "chain depth 1" out
'

test_expect_success '... or fork it' '
	echo "in a fork" | chat --session "$conv" --fork >out 2>err &&
	grep "is open in another chat" err &&
	test "$(field HEAD .parent)" = "$head" &&
	test "$(field HEAD .conversation)" != "$conv" &&
	test "$(aptix rev-parse "$conv")" = "$head"
'

test_expect_success 'the first chat still works, and leaves at end of input' '
	test_when_finished "exec 6>&-; kill_children $pid" &&
	echo "from the holder" >&6 &&
	exec 6>&- &&
	wait_for_exit $pid &&
	grep "from the holder" held.out &&
	echo "now free" | chat --session "$conv" >out 2>err &&
	test "$(field HEAD .conversation)" = "$conv"
'

test_expect_success 'two chats on different conversations both work' '
	rm -f hold && mkfifo hold &&
	{ aptix chat --no-rag --session "$conv" <hold >held.out \
		2>held.err & } &&
	pid=$! &&
	test_when_finished "exec 6>&-; kill_children $pid" &&
	exec 6>hold &&
	echo "elsewhere" | chat --new >out 2>err &&
	grep "chain depth 1" out &&
	echo "still here" >&6 &&
	exec 6>&- &&
	wait_for_exit $pid &&
	grep "Answer #.* to: still here" held.out
'

test_expect_success 'a turn in flight makes the conversation busy' '
	standin_fault "{\"kind\":\"slow\",\"delay\":3}" &&
	{ aptix continue --no-rag -m "slow one" >cont.out 2>cont.err & } &&
	cpid=$! &&
	test_when_finished "kill_children $cpid" &&
	for i in $(test_seq 100)
	do
		aptix status --json >st.json &&
		grep -q "\"pid\": $cpid" st.json && break
		sleep 0.1
	done &&
	echo "not now" | test_expect_code 128 chat >out 2>err &&
	grep "is busy: a turn is running (pid $cpid, since " err &&
	printf "/compact\n/context\n" | chat --read-only >out 2>err &&
	grep "/compact is refused while a turn of this conversation runs" err &&
	grep "^Chain: " out &&
	wait_for_exit $cpid 20
'

test_expect_success 'resume after the chain expired: rehydrated, with notice' '
	aptix config openai.chain-ttl 90s &&
	test_tick &&
	printf "alpha\nbeta\n" | chat --new >out 2>err &&
	econv=$(field HEAD .conversation) &&
	a1=$(field HEAD~1 .answer) &&
	test_tick &&
	test_tick &&
	echo gamma | chat --session "$econv" >out 2>err &&
	grep "^chat: the response chain expired on .*: the next turn starts a new one" err &&
	grep "^warning: the response chain expired" err &&
	last_request_body >body &&
	! grep previous_response_id body &&
	test "$(json_field .input[0].content <body)" = alpha &&
	test "$(json_field .input[1].content <body)" = "$a1" &&
	test "$(json_field .input[4].content <body)" = gamma &&
	test "$(field HEAD .chain_restarted)" = true
'

test_expect_success 'everything chat did is in the store, which is sound' '
	aptix fsck >out 2>err &&
	aptix log --all --graph --format=%s >graph &&
	grep "from the holder" graph &&
	grep "in a fork" graph
'

test_done
