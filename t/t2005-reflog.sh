#!/bin/sh

test_description='aptix reflog: the history of a ref

Entries newest first as "<short-id> <ref>@{<i>}: <message>", -n, the
names a ref may be given by, HEAD (its own reflog, else its target'\''s),
deleted refs, and reflog exists.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# short <id>: the 7-digit abbreviation
short () {
	echo "$1" | cut -c1-7
}

test_expect_success '-h prints the usage and exits 129' '
	test_expect_code 129 aptix reflog -h >out &&
	grep "^usage: aptix reflog" out &&
	grep "reflog exists" out &&
	grep -e "--max-count" out &&
	test_expect_code 129 aptix reflog show -h >out &&
	grep "^usage: aptix reflog \[show\]" out &&
	test_expect_code 129 aptix reflog exists -h >out &&
	grep "^usage: aptix reflog exists" out
'

test_expect_success 'setup' '
	aptix init -q &&
	test_tick &&
	A=$(make_session c1 "first") &&
	test_tick &&
	B=$(make_session c1 "second" "$A") &&
	test_tick &&
	C=$(make_session c1 "third" "$B") &&
	R=refs/conversations/c1
'

test_expect_success 'a fresh store: HEAD has no reflog, nothing shown' '
	aptix reflog >actual &&
	test_must_be_empty actual &&
	test_expect_code 1 aptix reflog exists HEAD
'

test_expect_success 'an update through a symbolic HEAD is logged in both reflogs' '
	aptix update-ref -m "on head" HEAD "$A" &&
	echo "$(short "$A") HEAD@{0}: on head" >expect &&
	aptix reflog >actual &&
	test_cmp expect actual &&
	aptix reflog show HEAD >actual &&
	test_cmp expect actual &&
	target=$(aptix symbolic-ref HEAD) &&
	echo "$(short "$A") $target@{0}: on head" >expect &&
	aptix reflog show "$target" >actual &&
	test_cmp expect actual &&
	aptix reflog exists HEAD &&
	aptix reflog exists "$target"
'

test_expect_success 'entries are listed newest first' '
	aptix update-ref -m "start" $R "$A" &&
	aptix update-ref -m "continue" $R "$B" &&
	aptix update-ref $R "$C" &&
	cat >expect <<-EOF &&
	$(short "$C") $R@{0}: update-ref
	$(short "$B") $R@{1}: continue
	$(short "$A") $R@{2}: start
	EOF
	aptix reflog show $R >actual &&
	test_cmp expect actual
'

test_expect_success '"show" is the default subcommand' '
	aptix reflog $R >actual &&
	test_cmp expect actual
'

test_expect_success 'the ref is named as it was given' '
	sed -e "s|$R@|c1@|" expect >expect.c1 &&
	aptix reflog c1 >actual &&
	test_cmp expect.c1 actual
'

test_expect_success 'a unique conversation prefix works too' '
	D=$(make_session conversation-long "x") &&
	aptix update-ref refs/conversations/conversation-long "$D" &&
	echo "$(short "$D") conv@{0}: update-ref" >expect.prefix &&
	aptix reflog conv >actual &&
	test_cmp expect.prefix actual
'

test_expect_success '-n limits the number of entries' '
	head -n 2 expect >expect.2 &&
	aptix reflog show -n 2 $R >actual &&
	test_cmp expect.2 actual &&
	aptix reflog --max-count=1 $R >actual &&
	head -n 1 expect >expect.1 &&
	test_cmp expect.1 actual &&
	aptix reflog -n 0 $R >actual &&
	test_must_be_empty actual
'

test_expect_success 'a symbolic ref moved to another target is logged' '
	old=$(aptix symbolic-ref --short HEAD) &&
	aptix symbolic-ref -m "to c1" HEAD $R &&
	echo "$(short "$C") HEAD@{0}: to c1: moving from $old to c1" \
		>expect.head &&
	aptix reflog -n 1 >actual &&
	test_cmp expect.head actual &&
	aptix reflog show -n 1 HEAD >actual &&
	test_cmp expect.head actual &&
	aptix symbolic-ref -m "again" HEAD $R &&
	aptix reflog -n 1 >actual &&
	test_cmp expect.head actual
'

test_expect_success 'updates of the ref HEAD is on go to both reflogs, as in git' '
	aptix update-ref -m "via head" HEAD "$B" &&
	echo "$(short "$B") $R@{0}: via head" >expect &&
	aptix reflog -n 1 $R >actual &&
	test_cmp expect actual &&
	echo "$(short "$B") HEAD@{0}: via head" >expect &&
	aptix reflog -n 1 >actual &&
	test_cmp expect actual &&
	aptix update-ref -m "direct" $R "$C" &&
	echo "$(short "$C") HEAD@{0}: direct" >expect &&
	aptix reflog -n 1 >actual &&
	test_cmp expect actual &&
	test "$(aptix rev-parse HEAD@{1})" = "$B"
'

test_expect_success 'a detached HEAD logs the new id' '
	aptix update-ref -m detach --no-deref HEAD "$A" &&
	aptix update-ref -m "not HEAD now" $R "$B" &&
	aptix symbolic-ref -m back HEAD $R &&
	cat >expect <<-EOF &&
	$(short "$B") HEAD@{0}: back
	$(short "$A") HEAD@{1}: detach
	$(short "$C") HEAD@{2}: direct
	EOF
	aptix reflog -n 3 >actual &&
	test_cmp expect actual
'

test_expect_success 'deleting a ref logs a zero id and keeps its reflog' '
	aptix update-ref refs/conversations/gone "$A" &&
	aptix update-ref -m "bye" -d refs/conversations/gone &&
	cat >expect <<-EOF &&
	0000000 refs/conversations/gone@{0}: bye
	$(short "$A") refs/conversations/gone@{1}: update-ref
	EOF
	aptix reflog refs/conversations/gone >actual &&
	test_cmp expect actual &&
	aptix reflog exists refs/conversations/gone
'

test_expect_success 'abbreviations grow when 7 digits are ambiguous' '
	# a session and a blob whose ids share their first 7 digits
	S=$(APTIX_TEST_DATE=1700018176 make_session amb ambiguous) &&
	test $S = b34768008640ed0df49644f6b472d6637b6356b070ba58c2ab83ecd6eb4ccdbc &&
	printf "collide 16799\n" | aptix hash-object -w --stdin &&
	aptix update-ref refs/conversations/amb $S &&
	echo "b3476800 amb@{0}: update-ref" >expect &&
	aptix reflog amb >actual &&
	test_cmp expect actual
'

test_expect_success 'reflog exists' '
	aptix reflog exists $R &&
	aptix reflog exists c1 &&
	test_expect_code 1 aptix reflog exists refs/conversations/never &&
	test_expect_code 1 aptix reflog exists never
'

test_expect_success 'reflog exists: bad names are fatal, usage is checked' '
	test_expect_code 128 aptix reflog exists "refs/a..b" 2>err &&
	grep "^fatal: invalid ref name" err &&
	test_expect_code 129 aptix reflog exists 2>err &&
	grep "usage: aptix reflog exists" err &&
	test_expect_code 129 aptix reflog exists a b
'

test_expect_success 'an unknown ref is fatal' '
	test_expect_code 128 aptix reflog refs/conversations/never 2>err &&
	grep "^fatal: ref .refs/conversations/never. not found" err &&
	test_expect_code 128 aptix reflog "a b" 2>err &&
	grep "^fatal: invalid ref name" err
'

test_expect_success 'HEAD entries record the ids HEAD moved to' '
	aptix update-ref refs/conversations/c2 "$A" &&
	aptix switch c2 &&
	aptix switch c1 &&
	tip=$(aptix rev-parse c1) &&
	aptix reflog -n 2 >actual &&
	cat >expect <<-EOF &&
	$(short "$tip") HEAD@{0}: switch: moving from c2 to c1
	$(short "$A") HEAD@{1}: switch: moving from c1 to c2
	EOF
	test_cmp expect actual &&
	! grep 0000000 actual
'

test_expect_success 'rev-parse reads what reflog prints: X@{n}, @{n}, @' '
	test "$(aptix rev-parse "HEAD@{1}")" = "$A" &&
	test "$(aptix rev-parse "@{1}")" = "$A" &&
	test "$(aptix rev-parse "HEAD@{0}")" = "$tip" &&
	test "$(aptix rev-parse @)" = "$tip" &&
	aptix reflog c1 >log &&
	n=$(grep -c . log) &&
	i=0 &&
	while test $i -lt "$n"
	do
		want=$(sed -n "$((i + 1))p" log | cut -d" " -f1) &&
		got=$(aptix rev-parse --short=7 "c1@{$i}") &&
		test "$want" = "$got" || return 1
		i=$((i + 1))
	done &&
	test "$(aptix rev-parse "$R@{1}")" = "$(aptix rev-parse "c1@{1}")" &&
	test "$(aptix rev-parse "c1@{1}~1")" = "$B" &&
	test_must_fail aptix rev-parse "c1@{99}" 2>err &&
	grep "has no entry 99" err &&
	test_must_fail aptix rev-parse "c1@{x}" 2>err &&
	grep "malformed" err
'

test_expect_success '@{-1} and switch - go back to the previous conversation' '
	test "$(aptix rev-parse "@{-1}")" = "$A" &&
	aptix switch - >out &&
	grep "Switched to conversation .c2." out &&
	aptix switch - >out &&
	grep "Switched to conversation .c1." out &&
	test "$(aptix rev-parse "@{-2}")" = "$tip" &&
	test_must_fail aptix rev-parse "@{-99}" 2>err &&
	grep "has not switched" err
'

test_expect_success 'more than one ref is a usage error' '
	test_expect_code 129 aptix reflog show c1 c1 2>err &&
	grep "usage: aptix reflog" err
'

test_done
