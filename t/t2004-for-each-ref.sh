#!/bin/sh

test_description='aptix for-each-ref: list refs with a format

Patterns (prefixes by whole components, and globs), the default format
and every atom, %% and %xx escapes, --count, and sorting by name and by
the time a conversation was last updated.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

test_expect_success '-h prints the usage and exits 129' '
	test_expect_code 129 aptix for-each-ref -h >out &&
	grep "^usage: aptix for-each-ref" out &&
	grep -e "--format" out &&
	grep -e "--sort" out
'

test_expect_success 'an empty store lists nothing' '
	aptix init -q &&
	aptix for-each-ref >actual &&
	test_must_be_empty actual
'

test_expect_success 'setup: three conversations updated at different times' '
	test_tick &&
	O1=$(make_session old "The old one") &&
	test_tick &&
	N1=$(make_session new "The new one") &&
	test_tick &&
	M1=$(make_session mid "The middle one") &&
	test_tick &&
	N2=$(make_session new "More on the new one" "$N1") &&
	test_tick &&
	N3=$(make_session new "Even more" "$N2") &&
	aptix update-ref refs/conversations/old "$O1" &&
	aptix update-ref refs/conversations/mid "$M1" &&
	aptix update-ref refs/conversations/new "$N3" &&
	aptix symbolic-ref HEAD refs/conversations/new
'

test_expect_success 'default format: id, type, tab, name; sorted; no HEAD' '
	cat >expect <<-EOF &&
	$M1 session	refs/conversations/mid
	$N3 session	refs/conversations/new
	$O1 session	refs/conversations/old
	EOF
	aptix for-each-ref >actual &&
	test_cmp expect actual
'

test_expect_success 'conversation atoms' '
	cat >expect <<-EOF &&
	mid|The middle one|1|2023-11-14T22:15:20.000Z
	new|The new one|3|2023-11-14T22:17:20.000Z
	old|The old one|1|2023-11-14T22:13:20.000Z
	EOF
	aptix for-each-ref --format="%(conversation)|%(title)|%(turns)|%(updated)" >actual &&
	test_cmp expect actual
'

test_expect_success 'refname, objectname and their :short forms' '
	cat >expect <<-EOF &&
	refs/conversations/mid mid $M1 $(echo "$M1" | cut -c1-7)
	refs/conversations/new new $N3 $(echo "$N3" | cut -c1-7)
	refs/conversations/old old $O1 $(echo "$O1" | cut -c1-7)
	EOF
	aptix for-each-ref --format="%(refname) %(refname:short) %(objectname) %(objectname:short)" >actual &&
	test_cmp expect actual
'

test_expect_success 'objectname:short=N' '
	echo "$N3" | cut -c1-12 >expect &&
	aptix for-each-ref --format="%(objectname:short=12)" refs/conversations/new >actual &&
	test_cmp expect actual &&
	echo "$N3" | cut -c1-4 >expect &&
	aptix for-each-ref --format="%(objectname:short=1)" refs/conversations/new >actual &&
	test_cmp expect actual
'

test_expect_success 'objecttype and symref' '
	cat >expect <<-\EOF &&
	session []
	EOF
	aptix for-each-ref --format="%(objecttype) [%(symref)]" refs/conversations/mid >actual &&
	test_cmp expect actual
'

test_expect_success '%% and hex escapes' '
	printf "100%% mid\0x\nA\tB\n" >expect &&
	aptix for-each-ref --format="100%% %(conversation)%00x%0aA%09B" refs/conversations/mid >actual &&
	test_cmp_bin expect actual
'

test_expect_success 'a lone % is kept' '
	echo "50% %z mid" >expect &&
	aptix for-each-ref --format="50% %z %(conversation)" refs/conversations/mid >actual &&
	test_cmp expect actual
'

test_expect_success 'unknown atoms are fatal' '
	test_expect_code 128 aptix for-each-ref --format="%(bogus)" >out 2>err &&
	test_must_be_empty out &&
	echo "fatal: unknown field name: bogus" >expect &&
	test_cmp expect err &&
	test_expect_code 128 aptix for-each-ref --format="%(refname:bogus)" 2>err &&
	grep "unrecognized %(refname) argument: bogus" err &&
	test_expect_code 128 aptix for-each-ref --format="%(title:short)" 2>err &&
	grep "^fatal: " err &&
	test_expect_code 128 aptix for-each-ref --format="%(refname" 2>err &&
	grep "^fatal: malformed format string" err
'

test_expect_success 'patterns: a prefix must end at a component boundary' '
	aptix for-each-ref --format="%(refname)" refs/conversations >actual &&
	test_line_count = 3 actual &&
	aptix for-each-ref --format="%(refname)" refs/conversations/ >actual &&
	test_line_count = 3 actual &&
	aptix for-each-ref --format="%(refname)" refs/conv >actual &&
	test_must_be_empty actual &&
	aptix for-each-ref --format="%(refname)" refs/conversations/mi >actual &&
	test_must_be_empty actual &&
	echo refs/conversations/mid >expect &&
	aptix for-each-ref --format="%(refname)" refs/conversations/mid >actual &&
	test_cmp expect actual
'

test_expect_success 'patterns: globs, and several patterns' '
	test_write_lines refs/conversations/mid refs/conversations/new >expect &&
	aptix for-each-ref --format="%(refname)" "refs/conversations/[mn]*" >actual &&
	test_cmp expect actual &&
	aptix for-each-ref --format="%(refname)" refs/conversations/new \
		"refs/*/mi?" >actual &&
	test_cmp expect actual &&
	aptix for-each-ref --format="%(refname)" "refs/*" >actual &&
	test_must_be_empty actual &&
	aptix for-each-ref --format="%(refname)" HEAD >actual &&
	test_must_be_empty actual
'

test_expect_success '--count limits the output' '
	echo refs/conversations/mid >expect &&
	aptix for-each-ref --count=1 --format="%(refname)" >actual &&
	test_cmp expect actual &&
	aptix for-each-ref --count=0 --format="%(refname)" >actual &&
	test_line_count = 3 actual &&
	test_expect_code 128 aptix for-each-ref --count=-1 2>err &&
	grep "invalid --count" err
'

test_expect_success '--sort=-refname' '
	test_write_lines old new mid >expect &&
	aptix for-each-ref --sort=-refname --format="%(conversation)" >actual &&
	test_cmp expect actual
'

test_expect_success '--sort=updated and -updated' '
	test_write_lines old mid new >expect &&
	aptix for-each-ref --sort=updated --format="%(conversation)" >actual &&
	test_cmp expect actual &&
	test_write_lines new mid old >expect &&
	aptix for-each-ref --sort=-updated --format="%(conversation)" >actual &&
	test_cmp expect actual
'

test_expect_success '--sort then --count: the newest conversation' '
	echo new >expect &&
	aptix for-each-ref --sort=-updated --count=1 --format="%(conversation)" >actual &&
	test_cmp expect actual
'

test_expect_success 'several sort keys: the last one is the primary' '
	aptix update-ref refs/conversations/mid2 "$M1" &&
	test_when_finished "aptix update-ref -d refs/conversations/mid2" &&
	test_write_lines new old mid mid2 >expect &&
	aptix for-each-ref --sort=-refname --sort=-turns --format="%(conversation)" >actual &&
	test_cmp expect actual
'

test_expect_success 'an unknown sort key is fatal' '
	test_expect_code 128 aptix for-each-ref --sort=bogus 2>err &&
	echo "fatal: unknown field name: bogus" >expect &&
	test_cmp expect err
'

test_expect_success 'refs outside refs/conversations/ have no conversation' '
	aptix update-ref refs/misc/thing "$M1" &&
	test_when_finished "aptix update-ref -d refs/misc/thing" &&
	echo "refs/misc/thing refs/misc/thing [] [] [] []" >expect &&
	aptix for-each-ref --format="%(refname) %(refname:short) [%(conversation)] [%(title)] [%(turns)] [%(updated)]" refs/misc >actual &&
	test_cmp expect actual &&
	test_write_lines mid new old "" >expect &&
	aptix for-each-ref --sort=refname --sort=updated --format="%(conversation)" >actual &&
	sort expect >expect.sorted &&
	sort actual >actual.sorted &&
	test_cmp expect.sorted actual.sorted
'

test_expect_success 'a conversation ref with no sessions indexed' '
	aptix update-ref refs/conversations/bare "$O1" &&
	test_when_finished "aptix update-ref -d refs/conversations/bare" &&
	echo "bare||0|" >expect &&
	aptix for-each-ref --format="%(conversation)|%(title)|%(turns)|%(updated)" refs/conversations/bare >actual &&
	sed -e "s/|1970-01-01T00:00:00.000Z$/|/" actual >actual.clean &&
	test_cmp expect actual.clean
'

test_expect_success 'symbolic refs under refs/ are listed with %(symref)' '
	aptix symbolic-ref refs/alias refs/conversations/mid &&
	test_when_finished "aptix symbolic-ref -d refs/alias" &&
	echo "$M1 refs/alias refs/conversations/mid mid" >expect &&
	aptix for-each-ref --format="%(objectname) %(refname) %(symref) %(symref:short)" refs/alias >actual &&
	test_cmp expect actual
'

test_expect_success 'a broken symbolic ref is skipped with a warning' '
	aptix symbolic-ref refs/dangling refs/conversations/nothing &&
	test_when_finished "aptix symbolic-ref -d refs/dangling" &&
	aptix for-each-ref --format="%(refname)" >actual 2>err &&
	test_line_count = 3 actual &&
	echo "warning: ignoring broken ref refs/dangling" >expect &&
	test_cmp expect err
'

test_expect_success 'titles with %, %( and backslashes are printed as they are' '
	test_tick &&
	S=$(make_session spaced "a title: 100% %(refname) \\n %41") &&
	aptix update-ref refs/conversations/spaced "$S" &&
	printf "%s\n" "a title: 100% %(refname) \\n %41" >expect &&
	aptix for-each-ref --format="%(title)" refs/conversations/spaced >actual &&
	test_cmp expect actual
'

test_done
