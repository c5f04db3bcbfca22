#!/bin/sh
test_description='aptix sessions: the conversations, most recent first'
. "$(dirname "$0")"/test-lib.sh

# titles fill the width: 73 columns leave lines of at most 72
COLUMNS=73
export COLUMNS

# new_session <conv> <instruction> <status> [<parent>] [<metadata>]:
# store a turn (completed, or failed for a failed session) and a session
# made at APTIX_TEST_DATE; print the session's id.
new_session () {
	local conv=$1 status=$3 parent='' meta=${5:-'{"session_type":"agent"}'}
	local ms=${APTIX_TEST_DATE}000 instr turn tstatus=completed errors=
	test -n "${4-}" && parent="\"parent\":\"$4\","
	if test "$status" = failed
	then
		tstatus=failed errors='"errors":["HTTP 500: boom"],'
	fi
	instr=$(printf '%s\n' "$2" | aptix hash-object -w --stdin) &&
	turn=$(printf '{"conversation":"%s","created_at":%s,%s"instruction":"%s","seq":1,"status":"%s","status_at":%s,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}\n' \
		"$conv" "$ms" "$errors" "$instr" "$tstatus" "$ms" |
		aptix hash-object -w -t turn --stdin) &&
	printf '{"conversation":"%s","created_at":%s,"metadata":%s,%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":0,"prompt_tokens":0,"total_tokens":0}},"status":"%s","turn":"%s","v":1}\n' \
		"$conv" "$ms" "$meta" "$parent" "$status" "$turn" |
	aptix hash-object -w -t session --stdin
}

# shellcheck disable=SC2034 # used in the test bodies
long_title="A very long title that goes on and on, well beyond the line"

test_expect_success 'an empty store lists nothing' '
	aptix init -q &&
	aptix sessions >out &&
	test_must_be_empty out &&
	aptix sessions --json >out &&
	echo "[]" >expect &&
	test_cmp expect out
'

test_expect_success setup '
	test_tick &&
	a1=$(new_session alpha "Alpha first" committed "" \
		"{\"session_type\":\"agent\",\"title\":\"Alpha\"}") &&
	aptix update-ref refs/conversations/alpha $a1 &&
	test_tick &&
	b1=$(new_session beta "Beta first" committed "" \
		"{\"session_type\":\"agent\",\"title\":\"Beta work\",\"workspace\":\"ws1\"}") &&
	aptix update-ref refs/conversations/beta $b1 &&
	test_tick &&
	a2=$(new_session alpha "Alpha second" committed $a1) &&
	aptix update-ref refs/conversations/alpha $a2 $a1 &&
	test_tick &&
	g1=$(new_session gamma "Gamma" committed "" \
		"{\"session_type\":\"agent\",\"title\":\"$long_title\",\"workspace\":\"ws2\"}") &&
	aptix update-ref refs/conversations/gamma $g1 &&
	test_tick &&
	b2=$(new_session beta "Beta second" failed $b1) &&
	aptix symbolic-ref HEAD refs/conversations/alpha
'

test_expect_success 'most recently updated first, the current one starred' '
	aptix sessions --all-workspaces >out &&
	cat >expect <<-\EOF &&
	  beta      2023-11-14    1 turn   failed     Beta work
	  gamma     2023-11-14    1 turn   committed  A very long title that ...
	* alpha     2023-11-14    2 turns  committed  Alpha
	EOF
	test_cmp expect out
'

test_expect_success 'lines fit in 72 columns' '
	awk "length > 72 { bad = 1 } END { exit bad }" out
'

test_expect_success 'switching HEAD moves the star' '
	aptix symbolic-ref HEAD refs/conversations/gamma &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/alpha" &&
	aptix sessions --all-workspaces >out &&
	grep "^\* gamma " out &&
	test $(grep -c "^\*" out) = 1
'

test_expect_success '-n limits the list' '
	aptix sessions --all-workspaces -n 2 >out &&
	test_line_count = 2 out &&
	grep "^  beta " out &&
	grep "^  gamma " out &&
	aptix sessions --all-workspaces -n 0 >out &&
	test_must_be_empty out &&
	test_expect_code 129 aptix sessions -n x 2>err
'

test_expect_success 'titles are cut at character boundaries' '
	test_tick &&
	t=$(printf "%0.sé" $(test_seq 40)) &&
	u1=$(new_session utf "Unicode" committed "" \
		"{\"session_type\":\"agent\",\"title\":\"$t\"}") &&
	aptix update-ref refs/conversations/utf $u1 &&
	aptix sessions --all-workspaces -n 1 >out &&
	printf "  utf       2023-11-14    1 turn   committed  %s...\n" \
		"$(printf "%0.sé" $(test_seq 23))" >expect &&
	test_cmp expect out
'

test_expect_success JQ '--json prints an array of objects' '
	aptix sessions --all-workspaces --json >out &&
	jq -r ".[] | [.conversation, .title, .status, .last_turn_status,
		.last_turn_at, .created_at, .updated_at, .turn_count, .head, .current,
		.workspace] | map(tostring) | join(\"|\")" out >actual &&
	cat >expect <<-EOF &&
	utf|$t|committed|completed|2023-11-14T22:18:20.000Z|2023-11-14T22:18:20.000Z|2023-11-14T22:18:20.000Z|1|$u1|false|null
	beta|Beta work|failed|failed|2023-11-14T22:17:20.000Z|2023-11-14T22:14:20.000Z|2023-11-14T22:17:20.000Z|1|$b1|false|ws1
	gamma|$long_title|committed|completed|2023-11-14T22:16:20.000Z|2023-11-14T22:16:20.000Z|2023-11-14T22:16:20.000Z|1|$g1|false|ws2
	alpha|Alpha|committed|completed|2023-11-14T22:15:20.000Z|2023-11-14T22:13:20.000Z|2023-11-14T22:15:20.000Z|2|$a2|true|null
	EOF
	test_cmp expect actual &&
	aptix sessions --json -n 1 | jq length >actual &&
	echo 1 >expect &&
	test_cmp expect actual
'

test_expect_success 'APTIX_WORKSPACE keeps the conversations of a workspace' '
	APTIX_WORKSPACE=ws1 aptix sessions >out &&
	cat >expect <<-\EOF &&
	  beta      2023-11-14    1 turn   failed     Beta work
	EOF
	test_cmp expect out &&
	APTIX_WORKSPACE=ws1 aptix sessions --all-workspaces >out &&
	test_line_count = 4 out
'

test_expect_success 'so does workspace.id' '
	aptix config workspace.id ws2 &&
	test_when_finished "aptix config --unset workspace.id" &&
	aptix sessions >out &&
	grep "^  gamma " out &&
	test_line_count = 1 out &&
	aptix sessions --all-workspaces >out &&
	test_line_count = 4 out &&
	APTIX_WORKSPACE=ws1 aptix sessions >out &&
	grep "^  beta " out &&
	test_line_count = 1 out
'

test_expect_success 'an unknown workspace lists nothing, with a hint' '
	APTIX_WORKSPACE=nowhere aptix sessions >out 2>err &&
	test_must_be_empty out &&
	grep "No conversation in workspace .nowhere." err &&
	grep -- "--all-workspaces" err &&
	APTIX_WORKSPACE=nowhere aptix sessions --json >out &&
	echo "[]" >expect &&
	test_cmp expect out
'

test_expect_success 'titles from the store go raw to a pipe' '
	test_tick &&
	e1=$(new_session esc "Escape" committed "" \
		"{\"session_type\":\"agent\",\"title\":\"bad \\u001b[2J title\"}") &&
	aptix update-ref refs/conversations/esc $e1 &&
	aptix sessions -n 1 >out &&
	grep "bad $(printf "\033")\[2J title" out
'

test_lazy_prereq SCRIPT '
	script -qc true /dev/null </dev/null >/dev/null 2>&1
'

test_expect_success SCRIPT '... and harmless to a terminal' '
	script -qc "aptix sessions -n 1" /dev/null </dev/null >tty &&
	grep "bad ^\[\[2J title" tty &&
	! grep "$(printf "\033")" tty
'

test_expect_success 'usage' '
	test_expect_code 129 aptix sessions -h >out &&
	grep "^usage: aptix sessions" out &&
	test_expect_code 129 aptix sessions extra 2>err
'

test_expect_success 'by default: the derived workspace, plus conversations without one' '
	aptix sessions >out &&
	grep "^\* alpha " out &&
	! grep " beta " out &&
	! grep " gamma " out &&
	aptix sessions --all-workspaces >all &&
	grep " beta " all
'

test_expect_success 'update-ref -d takes a conversation out, reindex too' '
	test_tick &&
	d1=$(new_session doomed "Doomed" committed) &&
	aptix update-ref refs/conversations/doomed $d1 &&
	aptix sessions --all-workspaces >out &&
	grep " doomed " out &&
	aptix update-ref -d refs/conversations/doomed &&
	aptix sessions --all-workspaces >out &&
	! grep " doomed " out &&
	aptix reindex -q &&
	aptix sessions --all-workspaces >out &&
	! grep " doomed " out &&
	grep " beta " out &&
	aptix fsck &&
	aptix cat-object -t $d1 &&
	aptix update-ref refs/conversations/doomed $d1 &&
	aptix reindex -q &&
	aptix sessions --all-workspaces >out &&
	grep " doomed " out
'

test_expect_success 'the HEAD conversation too' '
	aptix switch doomed &&
	aptix update-ref -d refs/conversations/doomed &&
	aptix sessions --all-workspaces >out &&
	! grep "doomed" out &&
	aptix reindex -q &&
	aptix sessions --all-workspaces >out &&
	! grep "doomed" out &&
	aptix switch alpha
'

test_expect_success 'turns counts the committed ones, not failed attempts' '
	aptix sessions --all-workspaces >out &&
	grep "^  beta .*  1 turn   failed" out &&
	aptix sessions --all-workspaces --json >out &&
	grep "\"failed_count\": 1" out
'

test_expect_success 'conversation rename, archive, unarchive' '
	aptix conversation rename gamma "Gamma renamed" >out &&
	grep "Renamed conversation .gamma." out &&
	aptix sessions --all-workspaces >out &&
	grep " gamma .* Gamma renamed$" out &&
	aptix conversation rename "The current one" &&
	aptix sessions --all-workspaces >out &&
	grep "^\* alpha .* The current one$" out &&
	aptix conversation archive gamma >out &&
	grep "Archived conversation .gamma." out &&
	aptix sessions --all-workspaces >out &&
	! grep " gamma " out &&
	aptix conversation list --all-workspaces >out2 &&
	test_cmp out out2 &&
	aptix sessions --all-workspaces --archived >out &&
	grep " gamma " out &&
	test_line_count = 1 out &&
	aptix sessions --all-workspaces --include-archived >out &&
	grep " gamma " out &&
	grep " beta " out &&
	aptix reindex -q &&
	aptix sessions --all-workspaces --archived >out &&
	grep " gamma .* Gamma renamed$" out &&
	aptix conversation unarchive gamma &&
	aptix sessions --all-workspaces >out &&
	grep " gamma " out
'

test_expect_success 'the listing filters by status, text and workspace' '
	aptix conversation list --all-workspaces --status failed >out &&
	grep " beta " out &&
	test_line_count = 1 out &&
	aptix conversation list --all-workspaces --grep RENAMED >out &&
	grep " gamma " out &&
	test_line_count = 1 out &&
	aptix conversation list --workspace ws1 >out &&
	grep " beta " out &&
	test_line_count = 1 out &&
	test_must_fail aptix sessions --status nope 2>err &&
	grep "invalid --status" err
'

test_expect_success 'conversation delete: the ref goes, the sessions stay' '
	head=$(aptix rev-parse gamma) &&
	test_must_fail aptix conversation delete alpha 2>err &&
	grep "cannot delete the current conversation" err &&
	aptix update-ref refs/conversations/gamma-fork $head &&
	aptix conversation delete gamma >out &&
	grep "Deleted conversation .gamma." out &&
	test_must_fail aptix rev-parse --verify -q refs/conversations/gamma &&
	aptix sessions --all-workspaces --include-archived >out &&
	! grep " gamma " out &&
	aptix cat-object -t $head &&
	aptix reflog refs/conversations/gamma | grep "conversation: delete" &&
	test_must_fail aptix conversation delete nosuch 2>err &&
	grep "not found" err &&
	test_expect_code 129 aptix conversation frobnicate 2>err &&
	grep "unknown subcommand" err
'

test_expect_success 'conversation delete: one no other ref reaches needs -D, as git branch -d' '
	head=$(aptix rev-parse gamma-fork) &&
	test_expect_code 1 aptix conversation delete gamma-fork 2>err &&
	grep "^error: conversation .gamma-fork. is not reached by another conversation" err &&
	grep "^hint: .*run .aptix conversation delete -D gamma-fork." err &&
	test "$(aptix rev-parse gamma-fork)" = "$head" &&
	aptix conversation delete -D gamma-fork >out &&
	grep "Deleted conversation .gamma-fork." out &&
	test_must_fail aptix rev-parse --verify -q refs/conversations/gamma-fork &&
	aptix update-ref refs/conversations/gamma-fork $head &&
	aptix conversation delete --force gamma-fork &&
	test_must_fail aptix rev-parse --verify -q refs/conversations/gamma-fork
'

test_expect_success 'dates are local (TZ) unless --date says otherwise' '
	aptix sessions --workspace ws1 >out &&
	grep "^  beta      2023-11-14    1 turn" out &&
	TZ=JST-9 aptix sessions --workspace ws1 >out &&
	grep "^  beta      2023-11-15    1 turn" out &&
	TZ=JST-9 aptix sessions --workspace ws1 --date=iso >out &&
	grep "^  beta      2023-11-15 07:17:20 +0900    1 turn" out &&
	aptix sessions --workspace ws1 --date=iso-strict >out &&
	grep "^  beta      2023-11-14T22:17:20Z    1 turn" out &&
	aptix sessions --workspace ws1 --date=unix >out &&
	grep "^  beta      1700000240    1 turn" out &&
	APTIX_TEST_DATE=1700007440 aptix sessions --workspace ws1 \
		--date=relative >out &&
	grep "^  beta      2 hours ago    1 turn" out &&
	test_expect_code 129 aptix sessions --date=nonsense 2>err &&
	grep "unknown date format .nonsense." err
'

test_expect_success 'an empty fork dates from the fork, in line with the rest' '
	test_tick &&
	aptix fork alpha >out &&
	fork=$(aptix symbolic-ref --short HEAD) &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/alpha" &&
	short=$(printf %.8s "$fork") &&
	aptix sessions --date=iso >out &&
	head -n 1 out >first &&
	echo "* $short  2023-11-14 22:$(date -u -d @$APTIX_TEST_DATE +%M:%S) +0000    0 turns  new        (no title)" >expect &&
	test_cmp expect first &&
	aptix sessions >out &&
	grep "^\* $short  2023-11-14    0 turns  new " out
'

# (conversation rename refuses a title over 120 bytes)
test_expect_success 'a long title is cut where no character is split' '
	a119=$(printf "%0119d" 0 | tr 0 a) &&
	t=$(aptix write-turn --conversation longtitle --seq 1 \
		--instruction-text x --created-at 1700000900000) &&
	aptix commit-session --title "${a119}éé" $t >/dev/null &&
	aptix sessions --json >out &&
	grep "\"title\": \"$a119\"," out
'

test_done
