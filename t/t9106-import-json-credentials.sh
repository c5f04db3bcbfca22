#!/bin/sh
test_description='aptix import json runs the credential detector, as every import does'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh
. "$TEST_DIRECTORY"/lib-credcorpus.sh
. "$TEST_DIRECTORY"/lib-import.sh

# The key is made here, at run time; plumbing (hash-object) stores it
# as given, so the export carries it as a store of an older aptix, or a
# hand-made file, could.
test_expect_success PYTHON3 'setup: an export whose second turn holds a key' '
	aptix init -q &&
	key=gh"p_$(crand 36)" &&
	echo "$key" >key &&
	test_tick &&
	s1=$(make_session c1 "What does main.c return?") &&
	test_tick &&
	s2=$(make_session c1 "Use the token $key to push" "$s1") &&
	test_tick &&
	s3=$(make_session c1 "And then?" "$s2") &&
	aptix update-ref refs/conversations/c1 "$s3" &&
	echo "$s1" >first &&
	aptix export --format=json c1 >c1.json &&
	grep -c "$key" c1.json
'

test_expect_success PYTHON3 'the snapshot with the key is refused, with file, line and rule' '
	mkdir fresh &&
	(cd fresh && aptix init -q) &&
	test_expect_code 1 instore fresh aptix import --json json c1.json >out 2>err &&
	grep "^warning: c1.json:3: a credential (rule github-token) in the instruction: not imported$" err &&
	test "$(json_field flagged_count out)" = 1 &&
	test "$(json_field new_turn_count out)" = 1 &&
	instore fresh aptix cat-object --batch --batch-all-objects >all &&
	! grep "$(cat key)" all &&
	instore fresh aptix cat-object -t "$(cat first)"
'

test_expect_success PYTHON3 'what is built on it is not imported either, and says so' '
	grep "c1.json:4: snapshot .* cannot be recorded" err &&
	grep "refs/conversations/c1 names a session that was not imported" err &&
	test_must_fail instore fresh aptix rev-parse c1
'

test_expect_success PYTHON3 '--dry-run says the same, writes nothing' '
	mkdir dry &&
	(cd dry && aptix init -q) &&
	test_expect_code 1 instore dry aptix import --dry-run --json json c1.json >out 2>err &&
	grep "a credential (rule github-token) in the instruction" err &&
	test "$(json_field flagged_count out)" = 1
'

test_done
