#!/bin/sh

test_description='aptix update-ref: compare-and-swap ref updates

Creating, moving and deleting refs with and without an expected old
value, through HEAD and with --no-deref, the ref name rules, the type
check of new values, and the --stdin protocol (with and without -z),
applied atomically.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

Z=0000000000000000000000000000000000000000000000000000000000000000

# show_refs: every ref under refs/ with its id, sorted
show_refs () {
	aptix for-each-ref --format="%(objectname) %(refname)"
}

test_expect_success '-h prints the usage and exits 129' '
	test_expect_code 129 aptix update-ref -h >out &&
	grep "^usage: aptix update-ref" out &&
	grep -e "--stdin" out &&
	grep -e "--no-deref" out
'

test_expect_success 'setup' '
	aptix init -q &&
	test_tick &&
	A=$(make_session c1 "first") &&
	test_tick &&
	B=$(make_session c1 "second" "$A") &&
	test_tick &&
	C=$(make_session c1 "third" "$B") &&
	T=$(session_field "$A" turn) &&
	BLOB=$(make_blob "some text") &&
	R=refs/conversations/c1
'

test_expect_success 'wrong number of arguments is a usage error' '
	test_expect_code 129 aptix update-ref 2>err &&
	grep "usage: aptix update-ref" err &&
	test_expect_code 129 aptix update-ref $R &&
	test_expect_code 129 aptix update-ref $R "$A" "$A" "$A" &&
	test_expect_code 129 aptix update-ref -d &&
	test_expect_code 129 aptix update-ref -d $R "$A" "$A" &&
	test_expect_code 129 aptix update-ref -z $R "$A" &&
	test_expect_code 129 aptix update-ref --stdin $R </dev/null &&
	test_expect_code 129 aptix update-ref --stdin -d </dev/null
'

test_expect_success 'create a ref' '
	aptix update-ref $R "$A" &&
	echo "$A" >expect &&
	aptix rev-parse $R >actual &&
	test_cmp expect actual
'

test_expect_success 'move it without an old value' '
	aptix update-ref $R "$B" &&
	echo "$B $R" >expect &&
	show_refs >actual &&
	test_cmp expect actual
'

test_expect_success 'new values may be abbreviations and other names' '
	aptix update-ref $R "$(echo "$A" | cut -c1-8)" &&
	echo "$A" >expect &&
	aptix rev-parse $R >actual &&
	test_cmp expect actual &&
	aptix update-ref refs/conversations/other c1 &&
	aptix rev-parse refs/conversations/other >actual &&
	test_cmp expect actual &&
	aptix update-ref -d refs/conversations/other
'

test_expect_success 'compare-and-swap succeeds with the right old value' '
	aptix update-ref $R "$B" "$A" &&
	echo "$B $R" >expect &&
	show_refs >actual &&
	test_cmp expect actual
'

test_expect_success 'old values may be abbreviated too' '
	aptix update-ref $R "$C" "$(echo "$B" | cut -c1-7)" &&
	echo "$C $R" >expect &&
	show_refs >actual &&
	test_cmp expect actual
'

test_expect_success 'compare-and-swap mismatch: fatal, store unchanged' '
	show_refs >before &&
	aptix reflog $R >reflog-before &&
	test_expect_code 128 aptix update-ref $R "$A" "$B" 2>err &&
	echo "fatal: ref '\''$R'\'' is at $C but expected $B" >expect &&
	test_cmp expect err &&
	show_refs >after &&
	test_cmp before after &&
	aptix reflog $R >reflog-after &&
	test_cmp reflog-before reflog-after
'

test_expect_success 'create-only (zero old) fails when the ref exists' '
	show_refs >before &&
	test_expect_code 128 aptix update-ref $R "$A" $Z 2>err &&
	grep "^fatal: ref .$R. already exists" err &&
	test_expect_code 128 aptix update-ref $R "$A" "" 2>err &&
	grep "already exists" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'create-only (zero or empty old) works when it does not' '
	aptix update-ref refs/conversations/new1 "$A" $Z &&
	aptix update-ref refs/conversations/new2 "$A" "" &&
	test_write_lines "$A" "$A" >expect &&
	aptix rev-parse refs/conversations/new1 refs/conversations/new2 >actual &&
	test_cmp expect actual
'

test_expect_success 'an old value for a missing ref is a mismatch' '
	test_expect_code 128 aptix update-ref refs/conversations/nope "$A" "$B" 2>err &&
	grep "is at nothing but expected $B" err &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/nope
'

test_expect_success 'new values must be sessions' '
	show_refs >before &&
	test_expect_code 128 aptix update-ref $R "$BLOB" 2>err &&
	echo "fatal: update_ref: '\''$BLOB'\'' is a blob, not a session" >expect &&
	test_cmp expect err &&
	test_expect_code 128 aptix update-ref $R "$T" 2>err &&
	grep "is a turn, not a session" err &&
	test_expect_code 128 aptix update-ref $R "c1^{turn}" 2>err &&
	grep "^fatal: update_ref: .c1^{turn}. is a turn, not a session" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'new values must exist' '
	missing=$(echo "$A" | tr 0-9a-f 1-9a-f0) &&
	test_expect_code 128 aptix update-ref $R "$missing" 2>err &&
	grep "^fatal: update_ref: .*not found" err &&
	test_expect_code 128 aptix update-ref $R "" 2>err &&
	grep "^fatal: unknown name" err &&
	aptix rev-parse --verify $R &&
	test_expect_code 128 aptix update-ref $R nosuchname 2>err &&
	grep "^fatal: unknown name .nosuchname." err &&
	test_expect_code 128 aptix update-ref $R "$A" nosuchname 2>err &&
	grep "^fatal: unknown name .nosuchname." err
'

test_expect_success 'delete with the right old value' '
	aptix update-ref refs/conversations/del "$A" &&
	aptix update-ref -d refs/conversations/del "$A" &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/del
'

test_expect_success 'delete with a wrong old value fails, ref kept' '
	aptix update-ref refs/conversations/del "$A" &&
	show_refs >before &&
	test_expect_code 128 aptix update-ref -d refs/conversations/del "$B" 2>err &&
	grep "is at $A but expected $B" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'delete without an old value' '
	aptix update-ref -d refs/conversations/del &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/del
'

test_expect_success 'delete of a missing ref: no-op, unless an old value is given' '
	aptix update-ref -d refs/conversations/del &&
	test_expect_code 128 aptix update-ref -d refs/conversations/del "$A" 2>err &&
	grep "is at nothing but expected" err
'

test_expect_success 'a zero new value deletes' '
	aptix update-ref refs/conversations/del "$A" &&
	aptix update-ref refs/conversations/del $Z "$A" &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/del
'

test_expect_success 'bad ref names are refused' '
	show_refs >before &&
	for name in "refs/conversations/a..b" "refs/conversations/$(printf "a\001b")" \
		"refs/conversations/-x" "refs/conversations/x.lock" \
		"refs/conversations/a b" "refs/conversations/a@{1}" \
		"refs//x" "refs/conversations/" "conversations/c1" "c1" "" \
		"refs/conversations/.hidden" "refs/conversations/a:b" \
		"refs/conversations/a~1" "refs/conversations/a^" \
		"refs/conversations/a?" "refs/conversations/a*" \
		"refs/conversations/a[" "refs/conversations/a\\b" \
		"refs/conversations/x." "refs/x.lock/y" "refs/-/y"
	do
		test_expect_code 128 aptix update-ref "$name" "$A" 2>err &&
		grep "^fatal: invalid ref name" err || {
			echo "accepted: $name" && return 1
		}
	done &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'each rule has its own message' '
	test_expect_code 128 aptix update-ref "refs/a..b" "$A" 2>err &&
	grep "has .\.\.." err &&
	test_expect_code 128 aptix update-ref "refs/$(printf "a\tb")" "$A" 2>err &&
	grep "control character" err &&
	test_expect_code 128 aptix update-ref "refs/-a" "$A" 2>err &&
	grep "starts with" err &&
	test_expect_code 128 aptix update-ref "refs/a.lock" "$A" 2>err &&
	grep "\.lock" err &&
	test_expect_code 128 aptix update-ref "refs/a b" "$A" 2>err &&
	grep "forbidden character" err &&
	test_expect_code 128 aptix update-ref "refs/a@{b" "$A" 2>err &&
	grep "@{" err &&
	test_expect_code 128 aptix update-ref "refs/a//b" "$A" 2>err &&
	grep "empty component" err &&
	test_expect_code 128 aptix update-ref "heads/main" "$A" 2>err &&
	grep "must be HEAD or start with .refs/." err
'

test_expect_success 'names that only look odd are fine' '
	aptix update-ref refs/conversations/a.b-c_d "$A" &&
	aptix update-ref refs/x/y/z "$A" &&
	aptix update-ref refs/conversations/x/y "$A" &&
	aptix update-ref -d refs/conversations/a.b-c_d &&
	aptix update-ref -d refs/x/y/z &&
	aptix update-ref -d refs/conversations/x/y
'

test_expect_success 'a ref that is not a conversation id does not make one' '
	long=$(printf "x%.0s" $(test_seq 70)) &&
	aptix update-ref refs/conversations/$long "$A" &&
	aptix update-ref refs/conversations/p/q "$A" &&
	test_expect_code 128 aptix rev-parse xxxx 2>err &&
	grep "unknown name .xxxx." err &&
	aptix update-ref -d refs/conversations/$long &&
	aptix update-ref -d refs/conversations/p/q
'

test_expect_success 'HEAD: an update goes to the ref HEAD points to' '
	aptix symbolic-ref HEAD $R &&
	aptix update-ref HEAD "$B" "$C" &&
	echo "ref: $R" >expect &&
	echo "ref: $(aptix symbolic-ref HEAD)" >actual &&
	test_cmp expect actual &&
	echo "$B" >expect &&
	aptix rev-parse $R >actual &&
	test_cmp expect actual
'

test_expect_success 'HEAD: the old value is checked against the target' '
	test_expect_code 128 aptix update-ref HEAD "$C" "$C" 2>err &&
	grep "ref .$R. is at $B but expected $C" err
'

test_expect_success 'HEAD -d deletes the target, HEAD stays symbolic' '
	aptix update-ref -d HEAD "$B" &&
	test_expect_code 1 aptix rev-parse -q --verify $R &&
	aptix symbolic-ref HEAD >actual &&
	echo $R >expect &&
	test_cmp expect actual &&
	aptix update-ref HEAD "$C" &&
	echo "$C" >expect &&
	aptix rev-parse $R >actual &&
	test_cmp expect actual
'

test_expect_success 'an unborn HEAD: the update creates its target' '
	aptix symbolic-ref HEAD refs/conversations/fresh &&
	aptix update-ref HEAD "$A" $Z &&
	echo "$A" >expect &&
	aptix rev-parse refs/conversations/fresh >actual &&
	test_cmp expect actual &&
	aptix symbolic-ref HEAD $R
'

test_expect_success '--no-deref detaches HEAD' '
	aptix update-ref --no-deref HEAD "$A" &&
	test_expect_code 1 aptix symbolic-ref -q HEAD &&
	test_write_lines "$A" "$C" >expect &&
	aptix rev-parse HEAD $R >actual &&
	test_cmp expect actual &&
	aptix symbolic-ref HEAD $R
'

test_expect_success '--no-deref with an old value sees the symbolic ref' '
	test_expect_code 128 aptix update-ref --no-deref HEAD "$A" "$C" 2>err &&
	grep "ref .HEAD. is at $R but expected $C" err
'

test_expect_success 'the reflog records the reason: -m or update-ref' '
	aptix update-ref refs/conversations/log "$A" &&
	aptix update-ref -m "my reason" refs/conversations/log "$B" &&
	cat >expect <<-EOF &&
	$(echo "$B" | cut -c1-7) log@{0}: my reason
	$(echo "$A" | cut -c1-7) log@{1}: update-ref
	EOF
	aptix reflog show log >actual &&
	test_cmp expect actual
'

test_expect_success 'an empty -m is refused' '
	test_expect_code 128 aptix update-ref -m "" refs/conversations/log "$A"
'

# --- --stdin -----------------------------------------------------------

test_expect_success 'stdin: setup' '
	for r in s1 s2 s3 s4
	do
		aptix update-ref -d refs/conversations/$r || return 1
	done &&
	aptix update-ref refs/conversations/s1 "$A" &&
	aptix update-ref refs/conversations/s2 "$B"
'

test_expect_success 'stdin: update, create, delete and verify in one batch' '
	cat >in <<-EOF &&
	update refs/conversations/s1 $B $A
	create refs/conversations/s3 $C
	delete refs/conversations/s2 $B
	verify $R $C
	verify refs/conversations/s4
	EOF
	aptix update-ref --stdin <in &&
	aptix for-each-ref --format="%(objectname) %(refname)" \
		refs/conversations/s1 refs/conversations/s2 \
		refs/conversations/s3 >actual &&
	cat >expect <<-EOF &&
	$B refs/conversations/s1
	$C refs/conversations/s3
	EOF
	test_cmp expect actual
'

test_expect_success 'stdin: abbreviations and names work' '
	echo "update refs/conversations/s1 $(echo "$C" | cut -c1-9) s1" >in &&
	aptix update-ref --stdin <in &&
	echo "$C" >expect &&
	aptix rev-parse s1 >actual &&
	test_cmp expect actual
'

test_expect_success 'stdin: one failing compare-and-swap applies nothing' '
	show_refs >before &&
	cat >in <<-EOF &&
	update refs/conversations/s1 $A $C
	create refs/conversations/s4 $A
	update refs/conversations/s3 $A $A
	EOF
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "ref .refs/conversations/s3. is at $C but expected $A" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'stdin: create of an existing ref applies nothing' '
	show_refs >before &&
	cat >in <<-EOF &&
	update refs/conversations/s1 $A
	create refs/conversations/s3 $A
	EOF
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "already exists" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'stdin: a failed verify applies nothing' '
	show_refs >before &&
	cat >in <<-EOF &&
	update refs/conversations/s1 $A
	verify refs/conversations/s3 $A
	EOF
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "ref .refs/conversations/s3. is at $C but expected $A" err &&
	echo "verify refs/conversations/s3" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "already exists" err &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'stdin: a bad line anywhere applies nothing' '
	show_refs >before &&
	for bad in "frobnicate refs/conversations/s1" \
		"update refs/conversations/s1" \
		"update refs/conversations/s1 nosuchname" \
		"update refs/conversations/s1 $BLOB" \
		"update refs/conversations/s1 $A $B extra" \
		"update refs/conversations/a..b $A" \
		"update  $A" \
		"create refs/conversations/s9 $Z" \
		"delete refs/conversations/s1 $Z" \
		"option frobnicate" \
		"update refs/conversations/s1 $B" \
		""
	do
		{
			echo "update refs/conversations/s1 $A" &&
			echo "$bad" &&
			echo "create refs/conversations/s5 $B"
		} >in &&
		test_expect_code 128 aptix update-ref --stdin <in 2>err || {
			echo "accepted: $bad" && return 1
		}
		grep "^fatal: " err || return 1
	done &&
	show_refs >after &&
	test_cmp before after
'

test_expect_success 'stdin: the messages are git'\''s' '
	echo "update refs/conversations/s1" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	echo "fatal: update refs/conversations/s1: missing <new-oid>" >expect &&
	test_cmp expect err &&
	echo "bogus" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	echo "fatal: unknown command: bogus" >expect &&
	test_cmp expect err &&
	echo >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	echo "fatal: empty command in input" >expect &&
	test_cmp expect err &&
	echo "create refs/conversations/s9 nope" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	echo "fatal: create refs/conversations/s9: invalid <new-oid>: nope" >expect &&
	test_cmp expect err
'

test_expect_success 'stdin: two updates of one ref are refused' '
	cat >in <<-EOF &&
	update refs/conversations/s1 $A
	update refs/conversations/s1 $B
	EOF
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "multiple updates for ref .refs/conversations/s1. not allowed" err &&
	cat >in <<-EOF &&
	update HEAD $A
	verify $R
	EOF
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "multiple updates for .HEAD. (including one via its referent .$R.)" err
'

test_expect_success 'stdin: an empty old value means "must not exist"' '
	printf "update refs/conversations/s6 %s \"\"\n" "$A" >in &&
	aptix update-ref --stdin <in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "already exists" err
'

test_expect_success 'stdin: quoted arguments' '
	printf "update \"refs/conversations/s7\" \"%s\"\n" "$B" >in &&
	aptix update-ref --stdin <in &&
	echo "$B" >expect &&
	aptix rev-parse s7 >actual &&
	test_cmp expect actual &&
	printf "update \"refs/conversations/s7\"x %s\n" "$B" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "unexpected character after quoted argument" err &&
	printf "update \"refs/conversations/s7 %s\n" "$B" >in &&
	test_expect_code 128 aptix update-ref --stdin <in 2>err &&
	grep "badly quoted argument" err
'

test_expect_success 'stdin: delete without old and of a missing ref' '
	cat >in <<-EOF &&
	delete refs/conversations/s6
	delete refs/conversations/never-was
	EOF
	aptix update-ref --stdin <in &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/s6
'

test_expect_success 'stdin: HEAD is dereferenced unless option no-deref' '
	echo "update HEAD $B" >in &&
	aptix update-ref --stdin <in &&
	echo $R >expect &&
	aptix symbolic-ref HEAD >actual &&
	test_cmp expect actual &&
	echo "$B" >expect &&
	aptix rev-parse $R >actual &&
	test_cmp expect actual &&
	printf "option no-deref\nupdate HEAD %s\n" "$C" >in &&
	aptix update-ref --stdin <in &&
	test_expect_code 1 aptix symbolic-ref -q HEAD &&
	test_write_lines "$C" "$B" >expect &&
	aptix rev-parse HEAD $R >actual &&
	test_cmp expect actual &&
	aptix symbolic-ref HEAD $R
'

test_expect_success 'stdin -z: NUL-terminated fields' '
	printf "create refs/conversations/z1\0%s\0update refs/conversations/z2\0%s\0\0verify refs/conversations/z1\0\0" \
		"$A" "$B" >in &&
	test_expect_code 128 aptix update-ref --stdin -z <in 2>err &&
	grep "multiple updates for ref .refs/conversations/z1. not allowed" err &&
	test_expect_code 1 aptix rev-parse -q --verify refs/conversations/z1 &&
	printf "create refs/conversations/z1\0%s\0update refs/conversations/z2\0%s\0\0verify refs/conversations/z9\0\0" \
		"$A" "$B" >in &&
	aptix update-ref --stdin -z <in &&
	test_write_lines "$A" "$B" >expect &&
	aptix rev-parse z1 z2 >actual &&
	test_cmp expect actual
'

test_expect_success 'stdin -z: compare-and-swap and truncated input' '
	printf "update refs/conversations/z1\0%s\0%s\0" "$C" "$A" >in &&
	aptix update-ref --stdin -z <in &&
	printf "update refs/conversations/z1\0%s\0" "$A" >in &&
	test_expect_code 128 aptix update-ref --stdin -z <in 2>err &&
	grep "unexpected end of input when reading <old-oid>" err &&
	echo "$C" >expect &&
	aptix rev-parse z1 >actual &&
	test_cmp expect actual
'

test_expect_success 'stdin: -m sets the reason of every update' '
	printf "update refs/conversations/z1 %s\nupdate refs/conversations/z2 %s\n" "$A" "$A" >in &&
	aptix update-ref -m batch --stdin <in &&
	aptix reflog -n 1 z1 >actual &&
	aptix reflog -n 1 z2 >>actual &&
	cat >expect <<-EOF &&
	$(echo "$A" | cut -c1-7) z1@{0}: batch
	$(echo "$A" | cut -c1-7) z2@{0}: batch
	EOF
	test_cmp expect actual
'

test_expect_success 'stdin: empty input changes nothing' '
	show_refs >before &&
	aptix update-ref --stdin </dev/null &&
	show_refs >after &&
	test_cmp before after
'

test_done
