#!/bin/sh
test_description='aptix import: the sessions of Codex, Claude Code and Gemini CLI'
. "$(dirname "$0")"/test-lib.sh

FIX=$TEST_DIRECTORY/fixtures/import
CODEX_PARENT=codex-01a20a30-fe75-78c1-af75-749cedb50f1c
CODEX_FORK=codex-01a20a31-1121-7e41-b774-22bab679bcc6
CODEX_TOOL=codex-01a21d63-49bd-7463-9f9d-2c58154575c0
CLAUDE=claude-b189a95a-9d44-4c3d-b3eb-57c53bbdf17b
CLAUDE_FORK=claude-fb2b60f9-dbe4-4e73-a69d-179fd2594653
CLAUDE_AGENT=claude-agent-a9698ddcef5f9aca0
CLAUDE_PROJ=claude-code-2.1.328/projects/-home-user-proj
GEMINI=gemini-cfc90e17-6560-4101-b81f-b59250e4c50d
PARENT_FILE=rollout-2026-11-23T20-55-12-01a20a30-fe75-78c1-af75-749cedb50f1c.jsonl

. "$TEST_DIRECTORY"/lib-credcorpus.sh

# instore <store> <command>...: run a command on the store in directory <store>
instore () {
	local d=$1
	shift
	APTIX_DIR="$TRASH_DIRECTORY/$d/.aptix" "$@"
}

# tool_result <session>: the first tool result of its turn, pretty-printed
tool_result () {
	local turn res
	turn=$(aptix log --format=%T -n 1 "$1") &&
	res=$(aptix cat-object -p "$turn" | sed -n "s/^tool result  *//p" | head -n 1) &&
	aptix cat-object -p "$res"
}

count_objects () {
	aptix cat-object --batch-check --batch-all-objects | wc -l
}

# json_field <name> <file>: the value of one summary field
json_field () {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"
}

test_expect_success 'setup' '
	aptix init -q &&
	cp -R "$FIX" src
'

test_expect_success 'codex: both rollouts and the tool call are imported' '
	aptix import --json codex src/codex-0.169 src/codex-0.171-toolcall >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field file_count out)" = 3 &&
	test "$(json_field turn_count out)" = 6 &&
	test "$(json_field new_turn_count out)" = 6 &&
	test "$(json_field conversation_count out)" = 3 &&
	test "$(json_field tool_call_count out)" = 1 &&
	aptix log --format=%s $CODEX_PARENT >log &&
	cat >expect <<-\EOT &&
	Now explain exit codes.
	Make it return 1 instead.
	What does main.c return?
	EOT
	test_cmp expect log
'

test_expect_success 'codex: importing again adds no object' '
	count_objects >before &&
	aptix import --json codex src/codex-0.169 src/codex-0.171-toolcall >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	test "$(json_field turn_count out)" = 6 &&
	count_objects >after &&
	test_cmp before after
'

test_expect_success 'codex: the fork shares the parent snapshots up to its fork point' '
	aptix rev-parse $CODEX_PARENT >parent &&
	aptix rev-parse $CODEX_FORK~2 >forkbase &&
	test_cmp parent forkbase &&
	aptix log --format="%S %c" $CODEX_FORK~1 -n 1 >root &&
	echo "committed $CODEX_FORK" >expect &&
	test_cmp expect root
'

test_expect_success 'codex: usage is per turn (the counters are cumulative)' '
	aptix cat-object -p "$(aptix rev-parse $CODEX_TOOL)" >sess &&
	grep "usage *prompt 200, completion 40, total 240, requests 2" sess
'

test_expect_success 'codex: the tool call and its result, with the exit code' '
	tool_result $CODEX_TOOL >res &&
	grep "^call id *call_fake0003\$" res &&
	grep "^status *error\$" res &&
	grep "^exit code *3\$" res &&
	grep "^argv *echo fixture-out; ls; exit 3\$" res &&
	grep "^cwd */home/user/proj\$" res &&
	grep "^source *codex\$" res
'

test_expect_success 'codex: the source records are kept as written' '
	turn=$(aptix log --format=%T -n 1 $CODEX_TOOL) &&
	resp=$(aptix cat-object -p "$turn" | sed -n "s/^response  *\([0-9a-f]\{64\}\)$/\1/p") &&
	aptix cat-object blob "$resp" >records &&
	test_cmp src/codex-0.171-toolcall/rollout-*.jsonl records
'

test_expect_success 'codex: a grown rollout imports only its new turns' '
	aptix init -q grown &&
	mkdir -p grown &&
	head -n 24 src/codex-0.169/$PARENT_FILE >grown/$PARENT_FILE &&
	instore grown aptix import --json codex grown >out &&
	test "$(json_field new_turn_count out)" = 2 &&
	cp src/codex-0.169/$PARENT_FILE grown/ &&
	instore grown aptix import --json codex grown >out &&
	test "$(json_field new_turn_count out)" = 1 &&
	test "$(instore grown aptix rev-parse $CODEX_PARENT)" = \
		"$(aptix rev-parse $CODEX_PARENT)"
'

test_expect_success 'codex: a turn changed since it was imported is recorded beside it' '
	sed "s/Now explain exit codes./Now explain exit codes, please./" \
		src/codex-0.169/$PARENT_FILE >grown/$PARENT_FILE &&
	head=$(instore grown aptix rev-parse $CODEX_PARENT) &&
	instore grown aptix import --json codex grown >out 2>err &&
	test "$(json_field new_turn_count out)" = 1 &&
	grep "^warning: grown/$PARENT_FILE:34: conversation .$CODEX_PARENT. has moved on" err &&
	test "$(instore grown aptix rev-parse $CODEX_PARENT)" = "$head" &&
	instore grown aptix log --all --format=%s >log &&
	grep "^Now explain exit codes, please.\$" log
'

test_expect_success 'codex: a turn not over yet is left for later' '
	rm -rf part && mkdir part &&
	head -n 30 src/codex-0.169/$PARENT_FILE >part/$PARENT_FILE &&
	aptix import --json --dry-run codex part >out &&
	test "$(json_field pending_count out)" = 1 &&
	test "$(json_field turn_count out)" = 2
'

test_expect_success 'codex: a damaged copy imports what is readable' '
	rm -rf bad && mkdir bad &&
	f=bad/$PARENT_FILE &&
	sed -n 1,19p src/codex-0.169/$PARENT_FILE >$f &&
	echo "{\"timestamp\": \"2026-11-23T20:55:14Z\", \"type\": " >>$f &&
	sed -n 20,33p src/codex-0.169/$PARENT_FILE >>$f &&
	sed -n 34p src/codex-0.169/$PARENT_FILE | head -c 40 >>$f &&
	aptix init -q bad &&
	test_expect_code 1 instore bad \
		aptix import --json codex bad >out 2>err &&
	grep "^warning: $f:20: malformed line" err &&
	grep "^warning: $f:35: truncated last line" err &&
	test "$(json_field skipped_count out)" = 2 &&
	test "$(json_field new_turn_count out)" = 2
'

test_expect_success 'codex: a compaction starts a conversation linked to the leaf it summarised' '
	rm -rf cx && mkdir cx &&
	sed -n 1,24p src/codex-0.169/$PARENT_FILE >cx/$PARENT_FILE &&
	echo "{\"timestamp\":\"2026-11-23T20:55:15.000Z\",\"type\":\"compacted\",\"payload\":{\"message\":\"summary\"}}" >>cx/$PARENT_FILE &&
	sed -n 25,34p src/codex-0.169/$PARENT_FILE >>cx/$PARENT_FILE &&
	aptix init -q cxs &&
	instore cxs aptix import --json codex cx >out &&
	test "$(json_field new_turn_count out)" = 3 &&
	test "$(instore cxs aptix rev-parse $CODEX_PARENT.c1~1)" = \
		"$(instore cxs aptix rev-parse $CODEX_PARENT)" &&
	instore cxs aptix log --format=%s -n 1 $CODEX_PARENT.c1 >log &&
	echo "Now explain exit codes." >expect &&
	test_cmp expect log
'

test_expect_success 'a credential in a record is stored redacted, with a warning' '
	rm -rf cred && mkdir cred &&
	key=gh"p_$(crand 36)" &&
	sed "s/What does main.c return?/What does main.c return? token $key/" \
		src/codex-0.169/$PARENT_FILE >cred/$PARENT_FILE &&
	aptix init -q cred &&
	instore cred aptix import codex cred >out 2>err &&
	grep "^warning: cred/$PARENT_FILE:8: a credential (rule github-token)" err &&
	instore cred aptix cat-object --batch --batch-all-objects >all &&
	! grep "$key" all &&
	grep "<redacted:github-token>" all
'

test_expect_success '--dry-run writes nothing' '
	aptix init -q dry &&
	instore dry aptix import --dry-run --json codex src/codex-0.169 >out &&
	test "$(json_field new_turn_count out)" = 5 &&
	test "$(instore dry aptix cat-object --batch-check --batch-all-objects | wc -l)" = 0
'

test_expect_success 'no path: where each tool keeps them, or where its variable says' '
	aptix init -q dflt &&
	mkdir -p h/.codex/sessions/2026/11/23 cx/sessions/2026 \
		h/.local/share/opencode xdg/opencode &&
	cp src/codex-0.169/rollout-*01a20a30*.jsonl h/.codex/sessions/2026/11/23/ &&
	cp src/codex-0.169/rollout-*.jsonl cx/sessions/2026/ &&
	cp src/opencode-1.18.33/opencode.db xdg/opencode/ &&
	(
		unset CODEX_HOME XDG_DATA_HOME CLAUDE_CONFIG_DIR &&
		HOME=$PWD/h instore dflt aptix import --dry-run --json codex >out1 &&
		HOME=$PWD/h CODEX_HOME=$PWD/cx \
			instore dflt aptix import --dry-run --json codex >out2 &&
		HOME=$PWD/h instore dflt aptix import --dry-run --json opencode \
			>out3 2>err3 &&
		HOME=$PWD/h XDG_DATA_HOME=$PWD/xdg \
			instore dflt aptix import --dry-run --json opencode >out4
	) &&
	test "$(json_field file_count out1)" = 1 &&
	test "$(json_field file_count out2)" = 2 &&
	test "$(json_field file_count out3)" = 0 &&
	test "$(json_field file_count out4)" = 1 &&
	test "$(json_field new_turn_count out4)" -gt 0
'

test_expect_success 'claude: sessions, the subagent and the fork are imported' '
	aptix import --json claude src/claude-code-2.1.328 >out &&
	test "$(json_field file_count out)" = 3 &&
	test "$(json_field turn_count out)" = 5 &&
	test "$(json_field new_turn_count out)" = 5 &&
	test "$(json_field conversation_count out)" = 3 &&
	test "$(json_field tool_call_count out)" = 2 &&
	aptix log --format=%s $CLAUDE >log &&
	cat >expect <<-\EOT &&
	AGENT: count the files
	RUN: echo ok-out; echo err-out >&2
	EOT
	test_cmp expect log
'

test_expect_success 'claude: importing again adds no object' '
	count_objects >before &&
	aptix import --json claude src/claude-code-2.1.328 >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	count_objects >after &&
	test_cmp before after
'

test_expect_success 'claude: a message split over records is one answer, its usage counted once' '
	aptix cat-object -p "$(aptix rev-parse $CLAUDE~1)" >sess &&
	grep "usage *prompt 200, completion 40, total 240, requests 2" sess &&
	aptix log --format=%T -n 1 $CLAUDE~1 >turn &&
	ans=$(aptix cat-object -p "$(cat turn)" | sed -n "s/^answer  *//p") &&
	aptix cat-object blob "$ans" >answer &&
	printf "I will run it.\n\nThe command finished; I saw its output." >expect &&
	test_cmp expect answer
'

test_expect_success 'claude: a Bash call that did not fail exited 0; one that failed says its code' '
	tool_result $CLAUDE~1 >res &&
	grep "^status *ok\$" res &&
	grep "^exit code *0\$" res &&
	grep "^stdout *14 bytes" res &&
	rm -rf cfail && mkdir cfail &&
	sed -e "25s/\"content\":\"ok-out\\\\nerr-out\",\"is_error\":false/\"content\":\"Exit code 2\\\\nerr-out\",\"is_error\":true/" \
		src/$CLAUDE_PROJ/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl \
		>cfail/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl &&
	grep -c "Exit code 2" cfail/*.jsonl &&
	aptix init -q cfs &&
	instore cfs aptix import claude cfail &&
	instore cfs tool_result $CLAUDE~1 >res &&
	grep "^status *error\$" res &&
	grep "^exit code *2\$" res
'

test_expect_success 'claude: the subagent is a child conversation of the turn that spawned it' '
	aptix cat-object -p "$(aptix rev-parse $CLAUDE_AGENT)" >sess &&
	grep "^parent *$(aptix rev-parse $CLAUDE)\$" sess &&
	grep "^session type *async_subagent\$" sess &&
	grep "^forked from *$CLAUDE\$" sess
'

test_expect_success 'claude: a fork shares its parent snapshots by uuid' '
	rm -rf cfork && mkdir cfork &&
	parent=d483c847-b747-45a9-b7f9-9365b1916fee &&
	sed -n 1,16p src/$CLAUDE_PROJ/fb2b60f9-dbe4-4e73-a69d-179fd2594653.jsonl |
	sed -e "s/fb2b60f9-dbe4-4e73-a69d-179fd2594653/$parent/" \
	    -e "s/\"requestSessionId\":\"$parent\",//" >cfork/$parent.jsonl &&
	cp src/$CLAUDE_PROJ/fb2b60f9-dbe4-4e73-a69d-179fd2594653.jsonl cfork/ &&
	aptix init -q cf &&
	instore cf aptix import --json claude cfork >out &&
	test "$(json_field new_turn_count out)" = 2 &&
	test "$(instore cf aptix rev-parse $CLAUDE_FORK~1)" = \
		"$(instore cf aptix rev-parse claude-$parent)" &&
	instore cf aptix log --format=%c $CLAUDE_FORK >convs &&
	printf "%s\n" $CLAUDE_FORK claude-$parent >expect &&
	test_cmp expect convs
'

test_expect_success 'claude: a bad line in the middle is skipped, the rest imported' '
	rm -rf cbad && mkdir cbad &&
	f=cbad/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl &&
	sed "30s/.*/{not json/" src/$CLAUDE_PROJ/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl >$f &&
	aptix init -q cb &&
	test_expect_code 1 instore cb aptix import --json claude cbad >out 2>err &&
	grep "^warning: $f:30: malformed line" err &&
	test "$(json_field skipped_count out)" = 1 &&
	test "$(json_field turn_count out)" = 2
'

test_expect_success 'claude: a truncated last line is warned about, the turns before it kept' '
	rm -rf ctrunc && mkdir ctrunc &&
	f=ctrunc/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl &&
	src=src/$CLAUDE_PROJ/b189a95a-9d44-4c3d-b3eb-57c53bbdf17b.jsonl &&
	n=$(wc -l <$src) &&
	head -n $((n - 1)) $src >$f &&
	tail -n 1 $src | head -c 50 >>$f &&
	aptix init -q ct &&
	test_expect_code 1 instore ct aptix import --json claude ctrunc >out 2>err &&
	grep "^warning: $f:$n: truncated last line: not imported\$" err &&
	test "$(json_field skipped_count out)" = 1 &&
	test "$(json_field new_turn_count out)" = 2
'

test_expect_success 'claude: a compaction starts a conversation linked to the leaf it summarised' '
	mkdir -p cc &&
	sid=0c0c0c0c-1111-4222-8333-444444444444 &&
	r () { printf "{\"type\":\"%s\",\"uuid\":\"%s\",\"timestamp\":\"2026-11-27T10:0%s:00Z\",\"sessionId\":\"$sid\",%s}\n" "$@"; } &&
	{
		r user u1 1 "\"message\":{\"role\":\"user\",\"content\":\"first\"}" &&
		r assistant a1 2 "\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"model\":\"x\",\"stop_reason\":\"end_turn\",\"content\":[{\"type\":\"text\",\"text\":\"one\"}]}" &&
		r system s1 3 "\"subtype\":\"compact_boundary\",\"logicalParentUuid\":\"a1\"" &&
		r user u2 4 "\"isCompactSummary\":true,\"message\":{\"role\":\"user\",\"content\":\"summary\"}" &&
		r user u3 5 "\"message\":{\"role\":\"user\",\"content\":\"after\"}" &&
		r assistant a3 6 "\"message\":{\"id\":\"m3\",\"role\":\"assistant\",\"model\":\"x\",\"stop_reason\":\"end_turn\",\"content\":[{\"type\":\"text\",\"text\":\"two\"}]}"
	} >cc/$sid.jsonl &&
	aptix init -q ccs &&
	instore ccs aptix import --json claude cc >out &&
	test "$(json_field new_turn_count out)" = 2 &&
	test "$(instore ccs aptix rev-parse claude-$sid.c1~1)" = \
		"$(instore ccs aptix rev-parse claude-$sid)" &&
	instore ccs aptix log --format=%s -n 1 claude-$sid.c1 >log &&
	echo after >expect &&
	test_cmp expect log
'

test_expect_success 'gemini: resumes merge into one conversation' '
	aptix import --json gemini src/gemini-cli-0.61.0 >out &&
	test "$(json_field file_count out)" = 3 &&
	test "$(json_field turn_count out)" = 4 &&
	test "$(json_field conversation_count out)" = 1 &&
	test "$(json_field tool_call_count out)" = 1 &&
	aptix log --format="%S %s" $GEMINI >log &&
	cat >expect <<-\EOT &&
	committed third prompt
	failed third prompt
	committed RUN: echo fixture-out; ls; exit 3
	committed Say hi to the fixture
	EOT
	test_cmp expect log
'

test_expect_success 'gemini: the killed run is a failed attempt beside the chain' '
	aptix log --format=%h -n 1 $GEMINI~1 >parent &&
	aptix log --format="%S %p" $GEMINI >log &&
	grep "^failed $(cat parent)\$" log &&
	aptix cat-object -p "$(aptix rev-parse $GEMINI)" >sess &&
	grep "^workspace *proj$" sess
'

test_expect_success 'gemini: the exit code is read from the output text' '
	tool_result $GEMINI~1 >res &&
	grep "^exit code *3\$" res &&
	grep "^source *gemini\$" res
'

test_expect_success 'gemini: importing again adds no object' '
	count_objects >before &&
	aptix import --json gemini src/gemini-cli-0.61.0 >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	count_objects >after &&
	test_cmp before after
'

test_expect_success 'gemini: a damaged copy imports what is readable' '
	rm -rf gbad && cp -R src/gemini-cli-0.61.0 gbad &&
	c=gbad/tmp/proj/chats &&
	f=$c/session-2026-11-27T14-20-cfc90e17.jsonl &&
	sed "12s/.*/{not json/" src/gemini-cli-0.61.0/tmp/proj/chats/${f##*/} >$f &&
	g=$c/session-2026-11-27T14-32-cfc90e17.jsonl &&
	sed -n 1p src/gemini-cli-0.61.0/tmp/proj/chats/${g##*/} >$g &&
	sed -n 2p src/gemini-cli-0.61.0/tmp/proj/chats/${g##*/} | head -c 60 >>$g &&
	aptix init -q gb &&
	test_expect_code 1 instore gb aptix import --json gemini gbad >out 2>err &&
	grep "^warning: $f:12: malformed line: not imported" err &&
	grep "^warning: $g:2: truncated last line: not imported\$" err &&
	test "$(json_field skipped_count out)" = 2 &&
	instore gb aptix log --format="%S %s" $GEMINI >log &&
	aptix log --format="%S %s" $GEMINI >expect &&
	test_cmp expect log
'

test_expect_success 'gemini: a rewind is a branch, not a deletion' '
	mkdir -p rw/tmp/p/chats &&
	sid=0e0e0e0e-1111-4222-8333-444444444444 &&
	m () { printf "{\"id\":\"%s\",\"timestamp\":\"2026-11-27T10:0%s:00Z\",\"type\":\"%s\",\"content\":\"%s\"}\n" "$@"; } &&
	{
		printf "{\"sessionId\":\"%s\",\"startTime\":\"2026-11-27T10:00:00Z\"}\n" $sid &&
		m a 1 user first && m b 2 gemini reply-1 &&
		m c 3 user second && m d 4 gemini reply-2 &&
		echo "{\"\$rewindTo\":\"c\"}" &&
		m e 5 user "second again" && m f 6 gemini reply-3
	} >rw/tmp/p/chats/session-2026-11-27T10-00-0e0e0e0e.jsonl &&
	aptix init -q rws &&
	instore rws aptix import --json gemini rw >out &&
	test "$(json_field new_turn_count out)" = 3 &&
	instore rws aptix log --format=%s gemini-$sid >log &&
	printf "second\nfirst\n" >expect &&
	test_cmp expect log &&
	instore rws aptix log --format=%s gemini-$sid.r1 >log &&
	printf "second again\nfirst\n" >expect &&
	test_cmp expect log &&
	test "$(instore rws aptix rev-parse gemini-$sid.r1~1)" = \
		"$(instore rws aptix rev-parse gemini-$sid~1)" &&
	instore rws aptix import --json gemini rw >out &&
	test "$(json_field new_turn_count out)" = 0
'

test_lazy_prereq ZSTD 'command -v zstd'

test_expect_success ZSTD 'codex: a .jsonl.zst rollout imports as the plain one' '
	mkdir -p zst/sessions &&
	# two frames, as a file compressed while it grew
	head -n 24 src/codex-0.169/$PARENT_FILE | zstd -q >zst/one &&
	tail -n +25 src/codex-0.169/$PARENT_FILE | zstd -q >zst/two &&
	cat zst/one zst/two >zst/sessions/$PARENT_FILE.zst &&
	aptix init -q zs &&
	instore zs aptix import --json codex zst/sessions >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 3 &&
	aptix rev-parse $CODEX_PARENT >expect &&
	instore zs aptix rev-parse $CODEX_PARENT >actual &&
	test_cmp expect actual
'

test_expect_success ZSTD 'codex: a truncated or damaged .zst: a warning, what was whole kept' '
	f=zst/sessions/$PARENT_FILE.zst &&
	size=$(wc -c <$f) &&
	mkdir -p zcut/sessions zbad/sessions &&
	# the second frame cut short: the turns of the first are read
	head -c $((size - 40)) $f >zcut/sessions/$PARENT_FILE.zst &&
	aptix init -q zc &&
	test_expect_code 1 instore zc aptix import codex zcut >/dev/null 2>err &&
	grep "zcut/sessions/$PARENT_FILE.zst:24: read error: truncated zstd stream" err &&
	instore zc aptix log --format=%s $CODEX_PARENT >log &&
	test -s log &&
	{ printf "\050\265\057\375" && head -c 200 /dev/zero; } >zbad/sessions/$PARENT_FILE.zst &&
	test_expect_code 1 instore zc aptix import codex zbad >/dev/null 2>err &&
	grep "zbad/sessions/$PARENT_FILE.zst: read error: " err &&
	instore zc aptix log --all --format=%s >after &&
	test_cmp log after
'

test_expect_success 'an unknown tool is refused' '
	test_must_fail aptix import vim src 2>err &&
	grep "unknown tool" err
'

test_done
