#!/bin/sh
test_description='aptix log: the history of conversations'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# shellcheck disable=SC2034 # used in the test bodies
ESC=$(printf '\033')

# short <id>: the 12-digit abbreviation log uses
short () {
	printf '%s\n' "$1" | cut -c1-12
}

# run_tty <command>: run a shell command on a terminal (util-linux
# script), output without carriage returns
run_tty () {
	script -qec "$1" /dev/null </dev/null | tr -d '\r'
}

test_lazy_prereq TTY '
	script -qec "test -t 1" /dev/null </dev/null
'

#   c3:  b1 --- b2                         (c3)
#   c1:  a1 --- a2 --- a3 --- x [failed]   (HEAD -> c1; longconversation
#                 \                          points at a2)
#   c2:            f1 --- f2               (c2, a fork of c1 at a2)
#   c5:  r [failed], the conversation's only turn: it has no head
test_expect_success setup '
	aptix init -q &&
	# names on every output, as on a terminal (the default, auto,
	# names them there only: t3012)
	aptix config log.decorate short &&
	test_tick && a1=$(make_session c1 "first instruction") &&
	test_tick && b1=$(make_session c3 "unrelated start") &&
	test_tick && a2=$(make_session c1 "second instruction" $a1) &&
	test_tick && b2=$(make_session c3 "unrelated end" $b1) &&
	test_tick && a3=$(make_session c1 "third instruction" $a2) &&
	test_tick && f1=$(make_session c2 "fork from the second" $a2) &&
	test_tick && x=$(make_failed c1 "broken instruction" $a3) &&
	test_tick && f2=$(make_session c2 "more fork work" $f1) &&
	test_tick && r=$(make_failed c5 "failed first turn") &&
	aptix update-ref refs/conversations/c1 $a3 &&
	aptix update-ref refs/conversations/c2 $f2 &&
	aptix update-ref refs/conversations/c3 $b2 &&
	aptix update-ref refs/conversations/longconversation $a2 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success 'the history of HEAD starts at HEAD, failed ones marked' '
	aptix log >actual &&
	cat >expect <<-EOF &&
	session $a3 (HEAD -> c1)
	Conversation: c1
	Date:   Tue Nov 14 22:17:20 2023 +0000
	Status: committed

	    third instruction

	session $x [failed]
	Conversation: c1
	Date:   Tue Nov 14 22:19:20 2023 +0000
	Status: failed

	    broken instruction

	session $a2 (longconv)
	Conversation: c1
	Date:   Tue Nov 14 22:15:20 2023 +0000
	Status: committed

	    second instruction

	session $a1
	Conversation: c1
	Date:   Tue Nov 14 22:13:20 2023 +0000
	Status: committed

	    first instruction
	EOF
	test_cmp expect actual
'

test_expect_success 'HEAD, c1 and a session name the same history' '
	aptix log HEAD >actual &&
	test_cmp expect actual &&
	aptix log c1 >actual &&
	test_cmp expect actual &&
	aptix log refs/conversations/c1 >actual &&
	test_cmp expect actual &&
	aptix log $(short $a3) >actual &&
	test_cmp expect actual
'

test_expect_success 'log -n 1 and rev-parse agree on the tip after a failure' '
	aptix rev-parse HEAD >tip &&
	aptix log -n 1 --format=%H >tipact &&
	test_cmp tip tipact &&
	aptix log -n 1 --format=%H c1 >tipact &&
	test_cmp tip tipact &&
	aptix log -n 2 --format=%H >tipact &&
	echo $x >>tip &&
	test_cmp tip tipact
'

test_expect_success '--graph: a root is drawn o, never * under another' '
	aptix log --graph --oneline c3 >tipact &&
	cat >tip <<-EOF &&
	* $(short $b2) (c3) unrelated end
	o $(short $b1) unrelated start
	EOF
	test_cmp tip tipact &&
	aptix log --graph --oneline --all >tipact &&
	grep "^o $(short $a1) first" tipact &&
	grep "o $(short $r) \[failed\]" tipact &&
	! grep "[*] $(short $r)" tipact
'

test_expect_success '--oneline and --no-failed' '
	aptix log --oneline >actual &&
	cat >expect <<-EOF &&
	$(short $a3) (HEAD -> c1) third instruction
	$(short $x) [failed] broken instruction
	$(short $a2) (longconv) second instruction
	$(short $a1) first instruction
	EOF
	test_cmp expect actual &&
	aptix log --oneline --no-failed >actual &&
	sed 2d expect >expect.nofail &&
	test_cmp expect.nofail actual
'

test_expect_success '-n, --max-count and -<n> limit the sessions shown' '
	aptix log --oneline -n 2 >actual &&
	head -n 2 expect >expect.2 &&
	test_cmp expect.2 actual &&
	aptix log --oneline --max-count=2 >actual &&
	test_cmp expect.2 actual &&
	aptix log --oneline -2 >actual &&
	test_cmp expect.2 actual &&
	aptix log --oneline -n 0 >actual &&
	test_must_be_empty actual &&
	aptix log -n 1 >actual &&
	test_line_count = 6 actual
'

test_expect_success '--reverse shows the oldest first, after -n' '
	aptix log --oneline --reverse >actual &&
	cat >expect <<-EOF &&
	$(short $a1) first instruction
	$(short $a2) (longconv) second instruction
	$(short $a3) (HEAD -> c1) third instruction
	$(short $x) [failed] broken instruction
	EOF
	test_cmp expect actual &&
	aptix log --oneline --reverse -n 2 >actual &&
	sed -n "3,4p" expect >expect.2 &&
	test_cmp expect.2 actual
'

test_expect_success 'a fork: the history goes on into the parent conversation' '
	aptix log --graph --oneline c2 >actual &&
	cat >expect <<-EOF &&
	* $(short $f2) (c2) more fork work
	* $(short $f1) fork from the second
	* $(short $a2) (longconv) second instruction
	o $(short $a1) first instruction
	EOF
	test_cmp expect actual
'

test_expect_success 'a fork in the graph joins its parent with |/' '
	aptix log --graph --oneline c1 c2 >actual &&
	cat >expect <<-EOF &&
	* $(short $f2) (c2) more fork work
	| * $(short $x) [failed] broken instruction
	* | $(short $f1) fork from the second
	| * $(short $a3) (HEAD -> c1) third instruction
	|/
	* $(short $a2) (longconv) second instruction
	o $(short $a1) first instruction
	EOF
	test_cmp expect actual
'

test_expect_success '--graph with the full format' '
	aptix log --graph c2 $a3 >actual &&
	cat >expect <<-EOF &&
	* session $f2 (c2)
	| Conversation: c2
	| Date:   Tue Nov 14 22:20:20 2023 +0000
	| Status: committed
	|
	|     more fork work
	|
	| * session $x [failed]
	| | Conversation: c1
	| | Date:   Tue Nov 14 22:19:20 2023 +0000
	| | Status: failed
	| |
	| |     broken instruction
	| |
	* | session $f1
	| | Conversation: c2
	| | Date:   Tue Nov 14 22:18:20 2023 +0000
	| | Status: committed
	| |
	| |     fork from the second
	| |
	| * session $a3 (HEAD -> c1)
	|/  Conversation: c1
	|   Date:   Tue Nov 14 22:17:20 2023 +0000
	|   Status: committed
	|
	|       third instruction
	|
	* session $a2 (longconv)
	| Conversation: c1
	| Date:   Tue Nov 14 22:15:20 2023 +0000
	| Status: committed
	|
	|     second instruction
	|
	o session $a1
	  Conversation: c1
	  Date:   Tue Nov 14 22:13:20 2023 +0000
	  Status: committed

	      first instruction
	EOF
	test_cmp expect actual
'

test_expect_success '--all: every conversation, and failed snapshots' '
	aptix log --graph --oneline --all >actual &&
	cat >expect <<-EOF &&
	* $(short $f2) (c2) more fork work
	| o $(short $r) [failed] failed first turn
	| * $(short $x) [failed] broken instruction
	* | $(short $f1) fork from the second
	| * $(short $a3) (HEAD -> c1) third instruction
	|/
	| * $(short $b2) (c3) unrelated end
	* | $(short $a2) (longconv) second instruction
	| o $(short $b1) unrelated start
	o $(short $a1) first instruction
	EOF
	test_cmp expect actual &&
	aptix log --oneline --all >actual &&
	sed -e "/^|\/\$/d" -e "s/^[*o|/ ]*//" expect >expect.flat &&
	test_cmp expect.flat actual &&
	aptix log --oneline --all --no-failed >actual &&
	grep -v failed expect.flat >expect.nofail &&
	test_cmp expect.nofail actual
'

test_expect_success 'a conversation without a head shows its failed turn' '
	aptix log --oneline c5 >actual &&
	echo "$(short $r) [failed] failed first turn" >expect &&
	test_cmp expect actual
'

test_expect_success 'decorations: several conversations at one session' '
	aptix update-ref refs/conversations/c4 $b2 &&
	aptix log --oneline -n 1 c3 >actual &&
	echo "$(short $b2) (c3, c4) unrelated end" >expect &&
	test_cmp expect actual &&
	aptix symbolic-ref HEAD refs/conversations/c4 &&
	aptix log --oneline -n 1 >actual &&
	echo "$(short $b2) (HEAD -> c4, c3) unrelated end" >expect &&
	test_cmp expect actual &&
	aptix symbolic-ref HEAD refs/conversations/c1 &&
	aptix update-ref -d refs/conversations/c4
'

test_expect_success '--format placeholders' '
	aptix log -n 2 --format="%h %H %p%d [%S] %c %ad %g: %s" >actual &&
	cat >expect <<-EOF &&
	$(short $a3) $a3 $(short $a2) (HEAD -> c1) [committed] c1 Tue Nov 14 22:17:20 2023 +0000 3: third instruction
	$(short $x) $x $(short $a3) [failed] c1 Tue Nov 14 22:19:20 2023 +0000 4: broken instruction
	EOF
	test_cmp expect actual &&
	# as git: %ad in --date= form, %ai and %aI in local time
	TZ=JST-9 aptix log -n 1 --format="%ai|%aI" $a3 >actual &&
	echo "2023-11-15 07:17:20 +0900|2023-11-15T07:17:20+09:00" >expect &&
	test_cmp expect actual &&
	aptix log -n 1 --date=short --format=%ad $a3 >actual &&
	echo 2023-11-14 >expect &&
	test_cmp expect actual &&
	aptix log -n 1 --format="%D%n%at%%%x41%q" c3 >actual &&
	printf "c3\n1700000180%%A%%q\n" >expect &&
	test_cmp expect actual &&
	aptix log --oneline --format=oneline -n 1 >actual &&
	aptix log --oneline -n 1 >expect &&
	test_cmp expect actual &&
	test_must_fail aptix log --format=nonsense 2>err &&
	grep "invalid --format" err
'

test_expect_success 'no colors when stdout is not a terminal' '
	aptix log --all >actual &&
	! grep "$ESC" actual &&
	aptix log --graph --oneline --all --color=auto >actual &&
	! grep "$ESC" actual &&
	aptix log --oneline -n 2 --color=always >actual &&
	grep "^${ESC}\[33m$(short $x)${ESC}\[m ${ESC}\[31m\[failed\]${ESC}\[m broken" actual &&
	grep "${ESC}\[1;36mHEAD -> ${ESC}\[m${ESC}\[1;32mc1${ESC}\[m" actual &&
	aptix log --oneline -n 2 --color=always --color=never >actual &&
	! grep "$ESC" actual &&
	test_must_fail aptix log --color=sometimes 2>err &&
	grep "invalid --color" err
'

test_expect_success 'unknown names and bad options are fatal' '
	test_must_fail aptix log nosuchthing 2>err &&
	grep "^fatal: unknown session or conversation .nosuchthing." err &&
	test_must_fail aptix log c1 nosuchthing 2>err &&
	grep "^fatal: unknown session or conversation" err &&
	test_must_fail aptix log --all nosuchthing 2>err &&
	grep "^fatal:" err &&
	test_must_fail aptix log --graph --reverse 2>err &&
	grep "cannot be used together" err &&
	test_must_fail aptix log $(aptix rev-parse "$a1^{turn}") 2>err &&
	grep "is a turn, not a session" err
'

test_expect_success 'an empty conversation is an error' '
	aptix symbolic-ref HEAD refs/conversations/empty &&
	test_must_fail aptix log 2>err &&
	grep "does not have any sessions yet" err &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success TTY 'on a terminal: pager, colors, sanitized summaries' '
	test_tick &&
	csi=$(printf "\302\233") &&
	evil=$(make_session c1 "evil ${csi}2J summary" $a3) &&
	aptix update-ref refs/conversations/c1 $evil &&
	run_tty "TERM=xterm APTIX_PAGER=\"sed s/^/paged:/\" aptix log --oneline -n 1" >actual &&
	grep "^paged:${ESC}\[33m$(short $evil)" actual &&
	grep "evil \\\\u009b2J summary" actual &&
	! grep "$csi" actual &&
	run_tty "TERM=xterm APTIX_PAGER=\"sed s/^/paged:/\" aptix log --no-pager --oneline -n 1" >actual &&
	! grep paged: actual &&
	grep "^${ESC}\[33m$(short $evil)" actual &&
	run_tty "TERM=dumb APTIX_PAGER=cat aptix log --oneline -n 1" >actual &&
	! grep "${ESC}\[33m" actual &&
	run_tty "APTIX_PAGER=no-such-pager-here aptix log --oneline -n 1" >actual &&
	grep "$(short $evil)" actual &&
	aptix update-ref refs/conversations/c1 $a3
'

test_expect_success 'without a terminal no pager runs' '
	APTIX_PAGER="sed s/^/paged:/" aptix log --oneline -n 1 >actual &&
	! grep paged: actual
'

test_expect_success '--all -n starts from the timeline and shows the newest' '
	aptix log --oneline --all >full &&
	aptix log --oneline --all -n 3 >three &&
	head -n 3 full >expect &&
	test_cmp expect three &&
	aptix log --graph --oneline --all -n 2 >g2 &&
	test_line_count -ge 2 g2
'

test_expect_success 'the timeline comes back with reindex' '
	aptix reindex -q &&
	aptix log --oneline --all -n 3 >again &&
	test_cmp three again
'

test_expect_success 'log --all hides archived conversations unless asked' '
	aptix conversation archive c3 &&
	test_when_finished "aptix conversation unarchive c3" &&
	aptix log --oneline --all >actual &&
	! grep "unrelated" actual &&
	grep "first instruction" actual &&
	aptix log --oneline --all -n 3 >actual &&
	! grep "unrelated" actual &&
	aptix log --oneline --all --include-archived >actual &&
	grep "unrelated start" actual &&
	aptix log --oneline c3 >actual &&
	grep "unrelated end" actual
'

test_expect_success 'log and show: local time (TZ), and --date as in git' '
	TZ=JST-9 aptix log -n 1 $a3 >out &&
	grep "^Date:   Wed Nov 15 07:17:20 2023 +0900$" out &&
	TZ=JST-9 aptix show $a3 >out &&
	grep "^Created: *Wed Nov 15 07:17:20 2023 +0900$" out &&
	for mode in "local Tue Nov 14 22:17:20 2023" \
		"iso 2023-11-14 22:17:20 +0000" \
		"iso-strict 2023-11-14T22:17:20Z" "unix 1700000240" \
		"short 2023-11-14"
	do
		aptix log -n 1 --date=${mode%% *} $a3 >out &&
		grep "^Date:   ${mode#* }$" out || return 1
	done &&
	TZ=EST5 aptix log -n 1 --date=iso-strict $a3 >out &&
	grep "^Date:   2023-11-14T17:17:20-05:00$" out &&
	APTIX_TEST_DATE=1700000300 aptix show --date=relative $a3 >out &&
	grep "^Created: *60 seconds ago$" out &&
	test_expect_code 129 aptix log --date=bogus 2>err &&
	grep "unknown date format" err
'

test_expect_success 'a cycle of parents in a damaged index ends the walk' '
	aptix init -q cycle &&
	(
		cd cycle &&
		blob=$(echo q | aptix hash-object -w --stdin) &&
		t1=$(aptix write-turn --conversation c1 --seq 1 \
			--instruction $blob --created-at 1700000000000) &&
		s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
		t2=$(aptix write-turn --conversation c1 --seq 2 \
			--instruction $blob --created-at 1700000060000) &&
		s2=$(aptix commit-session -p $s1 --created-at 1700000061000 \
			$t2) &&
		aptix update-ref refs/conversations/c1 $s2 &&
		aptix symbolic-ref HEAD refs/conversations/c1 &&
		# s1, a root, now says that its parent is s2
		rec=$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix \
			record hex:$s1) &&
		flags=$(printf "%02x" $((0x$(echo "$rec" | cut -c7-8) | 1))) &&
		bad=$(echo "$rec" | cut -c1-6)$flags$s2$(echo "$rec" | cut -c73-) &&
		bad=$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix seal \
			hex:$bad) &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix put-record \
			hex:$s1 hex:$bad &&
		aptix log --format=%H >out &&
		printf "%s\n" $s2 $s1 >expect &&
		test_cmp expect out &&
		test_must_fail aptix log --all --format=%H >out 2>err &&
		grep "^fatal: the parents of session .* form a cycle" err
	)
'

test_done
