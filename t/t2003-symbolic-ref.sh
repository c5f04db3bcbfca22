#!/bin/sh

test_description='aptix symbolic-ref: read, set and delete symbolic refs'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

test_expect_success '-h prints the usage and exits 129' '
	test_expect_code 129 aptix symbolic-ref -h >out &&
	grep "^usage: aptix symbolic-ref" out &&
	grep -e "--short" out
'

test_expect_success 'setup' '
	aptix init -q &&
	A=$(make_session c1 "first") &&
	aptix update-ref refs/conversations/c1 "$A"
'

test_expect_success 'a new store has HEAD point to an unborn conversation' '
	aptix symbolic-ref HEAD >actual &&
	grep "^refs/conversations/[0-9a-f-]*$" actual &&
	test_expect_code 1 aptix rev-parse -q --verify HEAD
'

test_expect_success 'set HEAD and read it back' '
	aptix symbolic-ref HEAD refs/conversations/c1 &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual &&
	echo "$A" >expect &&
	aptix rev-parse HEAD >actual &&
	test_cmp expect actual
'

test_expect_success '--short drops refs/conversations/' '
	echo c1 >expect &&
	aptix symbolic-ref --short HEAD >actual &&
	test_cmp expect actual
'

test_expect_success '--short keeps other names whole' '
	aptix symbolic-ref HEAD refs/other/thing &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	echo refs/other/thing >expect &&
	aptix symbolic-ref --short HEAD >actual &&
	test_cmp expect actual
'

test_expect_success 'HEAD may point to an unborn ref' '
	aptix symbolic-ref HEAD refs/conversations/later &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	echo refs/conversations/later >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual &&
	test_expect_code 128 aptix rev-parse HEAD 2>err &&
	grep "no snapshot yet" err
'

test_expect_success 'a non-symbolic ref: fatal, or exit 1 with -q' '
	test_expect_code 128 aptix symbolic-ref refs/conversations/c1 >out 2>err &&
	test_must_be_empty out &&
	echo "fatal: ref refs/conversations/c1 is not a symbolic ref" >expect &&
	test_cmp expect err &&
	test_expect_code 1 aptix symbolic-ref -q refs/conversations/c1 >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err
'

test_expect_success 'a detached HEAD is not symbolic' '
	aptix update-ref --no-deref HEAD "$A" &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	test_expect_code 128 aptix symbolic-ref HEAD 2>err &&
	echo "fatal: ref HEAD is not a symbolic ref" >expect &&
	test_cmp expect err &&
	test_expect_code 1 aptix symbolic-ref -q HEAD 2>err &&
	test_must_be_empty err
'

test_expect_success 'a missing ref is fatal even with -q' '
	test_expect_code 128 aptix symbolic-ref refs/conversations/nope 2>err &&
	grep "^fatal: no such ref: refs/conversations/nope" err &&
	test_expect_code 128 aptix symbolic-ref -q refs/conversations/nope
'

test_expect_success 'the target must be under refs/' '
	test_expect_code 128 aptix symbolic-ref HEAD c1 2>err &&
	echo "fatal: refusing to point HEAD outside of refs/" >expect &&
	test_cmp expect err &&
	test_expect_code 128 aptix symbolic-ref HEAD HEAD 2>err &&
	test_cmp expect err &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual
'

test_expect_success 'the target must be a valid ref name' '
	for target in "refs/conversations/a..b" "refs/conversations/a b" \
		"refs/conversations/-x" "refs/conversations/x.lock" \
		"refs/conversations/a@{1}" "refs//x" "refs/conversations/" \
		"refs/conversations/$(printf "a\033b")" "refs/a~1" "refs/a:b"
	do
		test_expect_code 128 aptix symbolic-ref HEAD "$target" 2>err || {
			echo "accepted: $target" && return 1
		}
		grep "^fatal: invalid ref name" err || return 1
	done &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual
'

test_expect_success 'the name must be a valid ref name' '
	test_expect_code 128 aptix symbolic-ref refs/a..b refs/conversations/c1 2>err &&
	grep "^fatal: invalid ref name .refs/a\.\.b." err &&
	test_expect_code 128 aptix symbolic-ref foo refs/conversations/c1 2>err &&
	grep "must be HEAD or start with .refs/." err &&
	test_expect_code 128 aptix symbolic-ref "refs/a b" 2>err &&
	grep "^fatal: invalid ref name" err
'

test_expect_success 'a ref cannot point to itself' '
	test_expect_code 128 aptix symbolic-ref refs/self refs/self 2>err &&
	grep "cannot point to itself" err
'

test_expect_success 'other symbolic refs; reading follows the chain' '
	aptix symbolic-ref refs/alias refs/conversations/c1 &&
	aptix symbolic-ref refs/alias2 refs/alias &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref refs/alias2 >actual &&
	test_cmp expect actual &&
	echo refs/alias >expect &&
	aptix symbolic-ref --no-recurse refs/alias2 >actual &&
	test_cmp expect actual &&
	echo "$A" >expect &&
	aptix rev-parse refs/alias2 >actual &&
	test_cmp expect actual
'

test_expect_success '-d deletes a symbolic ref' '
	aptix symbolic-ref -d refs/alias2 &&
	test_expect_code 128 aptix symbolic-ref refs/alias2 2>err &&
	grep "no such ref" err &&
	aptix symbolic-ref --delete refs/alias &&
	test_expect_code 1 aptix rev-parse -q --verify refs/alias
'

test_expect_success '-d refuses HEAD' '
	test_expect_code 128 aptix symbolic-ref -d HEAD 2>err &&
	echo "fatal: deleting '\''HEAD'\'' is not allowed" >expect &&
	test_cmp expect err &&
	echo refs/conversations/c1 >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual
'

test_expect_success '-d refuses a ref that is not symbolic' '
	test_expect_code 128 aptix symbolic-ref -d refs/conversations/c1 2>err &&
	echo "fatal: cannot delete refs/conversations/c1, not a symbolic ref" >expect &&
	test_cmp expect err &&
	echo "$A" >expect &&
	aptix rev-parse c1 >actual &&
	test_cmp expect actual
'

test_expect_success '-d of a missing ref is fatal' '
	test_expect_code 128 aptix symbolic-ref -d refs/nothing 2>err &&
	grep "no such ref" err
'

test_expect_success 'the reflog of HEAD records changes with -m, and ids' '
	aptix symbolic-ref -m "switch to c2" HEAD refs/conversations/c2 &&
	aptix symbolic-ref HEAD refs/conversations/c1 &&
	aptix reflog show -n 2 HEAD >actual &&
	c1=$(aptix rev-parse --short=7 refs/conversations/c1) &&
	cat >expect <<-EOF &&
	$c1 HEAD@{0}: symbolic-ref: moving from c2 to c1
	0000000 HEAD@{1}: switch to c2: moving from c1 to c2
	EOF
	test_cmp expect actual
'

test_expect_success 'an empty -m is refused' '
	test_expect_code 128 aptix symbolic-ref -m "" HEAD refs/conversations/c1
'

test_expect_success 'wrong number of arguments is a usage error' '
	test_expect_code 129 aptix symbolic-ref 2>err &&
	grep "usage: aptix symbolic-ref" err &&
	test_expect_code 129 aptix symbolic-ref HEAD refs/a refs/b &&
	test_expect_code 129 aptix symbolic-ref -d &&
	test_expect_code 129 aptix symbolic-ref -d HEAD refs/a
'

test_done
