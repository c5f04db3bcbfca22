#!/bin/sh

test_description='aptix rev-parse: names to ids

Full ids, abbreviations (unique, ambiguous, too short), HEAD (unborn,
symbolic, detached), refs and conversation ids and their prefixes, the
~N, ^ and ^{type} suffixes, --verify/-q, --short, --symbolic-full-name,
--abbrev-ref, --show-toplevel and --aptix-dir.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# Blobs whose ids share their first 4 (resp. 7) hex digits.
AMB4A=07124fe1c08f4a097925e4fe767cd77fdef9e4ba5f6b09d772b83eaaf8da26f4
AMB4B=071217e09b8435d083a1b28901485ebccec3562342f4d03e6a592689d53aa8cd
AMB7A=3b365351b9fef8f0b0424129fafded9609bf2bd1af0ffa282b71253aefa12a03
AMB7B=3b365356c827d5096fc92746c7f0c7748485971904b46cabc242bb05ccea2d2a

test_expect_success '-h prints the usage and exits 129, even outside a store' '
	test_expect_code 129 aptix rev-parse -h >out &&
	grep "^usage: aptix rev-parse" out &&
	grep -e "--verify" out &&
	grep -e "--short" out
'

test_expect_success 'outside a store it fails' '
	test_must_fail aptix rev-parse HEAD 2>err &&
	grep "^fatal: " err
'

test_expect_success 'setup: empty store' '
	aptix init -q
'

test_expect_success 'unborn HEAD: fatal with the library message' '
	test_expect_code 128 aptix rev-parse HEAD >out 2>err &&
	test_must_be_empty out &&
	grep "^fatal: .HEAD. points to .refs/conversations/.*no snapshot yet" err
'

test_expect_success 'unborn HEAD: --verify -q exits 1 silently' '
	test_expect_code 1 aptix rev-parse --verify -q HEAD >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err &&
	test_expect_code 1 aptix rev-parse --quiet --verify HEAD 2>err &&
	test_must_be_empty err
'

test_expect_success 'unborn HEAD: --verify without -q is fatal' '
	test_expect_code 128 aptix rev-parse --verify HEAD 2>err &&
	grep "^fatal: " err
'

test_expect_success 'unborn HEAD: --symbolic-full-name fails too' '
	test_expect_code 128 aptix rev-parse --symbolic-full-name HEAD
'

test_expect_success 'setup: a chain of three sessions' '
	test_tick &&
	s1=$(make_session c1 "first") &&
	test_tick &&
	s2=$(make_session c1 "second" "$s1") &&
	test_tick &&
	s3=$(make_session c1 "third" "$s2") &&
	aptix update-ref refs/conversations/c1 "$s3" &&
	aptix symbolic-ref HEAD refs/conversations/c1 &&
	t3=$(session_field "$s3" turn) &&
	t2=$(session_field "$s2" turn) &&
	blob=$(make_blob hello)
'

test_expect_success 'a full id is printed as is' '
	echo "$s1" >expect &&
	aptix rev-parse "$s1" >actual &&
	test_cmp expect actual
'

test_expect_success 'a full id in upper case is accepted' '
	echo "$s2" >expect &&
	aptix rev-parse "$(echo "$s2" | tr a-f A-F)" >actual &&
	test_cmp expect actual
'

test_expect_success 'HEAD, the ref and the conversation id agree' '
	test_write_lines "$s3" "$s3" "$s3" >expect &&
	aptix rev-parse HEAD refs/conversations/c1 c1 >actual &&
	test_cmp expect actual
'

test_expect_success 'several names: one id per line, in order' '
	test_write_lines "$s1" "$s3" "$s2" >expect &&
	aptix rev-parse "$s1" c1 "$s2" >actual &&
	test_cmp expect actual
'

test_expect_success 'no name: no output' '
	aptix rev-parse >actual &&
	test_must_be_empty actual
'

test_expect_success '~N walks back N parents' '
	test_write_lines "$s3" "$s2" "$s1" "$s2" >expect &&
	aptix rev-parse c1~0 c1~1 HEAD~2 "$s3~" >actual &&
	test_cmp expect actual
'

test_expect_success '^ is the parent, and suffixes combine' '
	test_write_lines "$s2" "$s1" "$s2" "$s3" "$s1" "$s1" >expect &&
	aptix rev-parse c1^ c1^^ HEAD^1 c1^0 c1~1^ "c1^~" >actual &&
	test_cmp expect actual
'

test_expect_success 'walking past the root is fatal' '
	test_expect_code 128 aptix rev-parse c1~3 2>err &&
	grep "has no parent" err &&
	test_expect_code 128 aptix rev-parse "$s1^" 2>err &&
	grep "has no parent" err
'

test_expect_success '^2: a session has one parent' '
	test_expect_code 128 aptix rev-parse c1^2 2>err &&
	grep "only one parent" err
'

test_expect_success '^{turn} peels a session to its turn' '
	test_write_lines "$t3" "$t2" "$t3" >expect &&
	aptix rev-parse "c1^{turn}" "c1~1^{turn}" "$t3^{turn}" >actual &&
	test_cmp expect actual
'

test_expect_success '^{session} checks the type' '
	echo "$s3" >expect &&
	aptix rev-parse "HEAD^{session}" >actual &&
	test_cmp expect actual &&
	test_expect_code 128 aptix rev-parse "$blob^{session}" 2>err &&
	grep "is a blob, not a session" err &&
	test_expect_code 128 aptix rev-parse "$blob^{turn}" 2>err &&
	grep "is a blob, not a turn" err
'

test_expect_success '~ on a turn is fatal' '
	test_expect_code 128 aptix rev-parse "c1^{turn}~1" 2>err &&
	grep "is a turn, not a session" err
'

test_expect_success 'malformed suffixes are fatal' '
	for n in "c1^{turn" "c1^{bogus}" "c1~x" "c1^0x" "c1^{session}x" \
		 "c1~1x"
	do
		test_expect_code 128 aptix rev-parse "$n" 2>err || return 1
		grep "^fatal: " err || return 1
	done
'

test_expect_success 'a unique abbreviation resolves' '
	echo "$s3" >expect &&
	aptix rev-parse "$(echo "$s3" | cut -c1-7)" >actual &&
	test_cmp expect actual &&
	aptix rev-parse "$(echo "$s3" | cut -c1-4)" >actual &&
	test_cmp expect actual
'

test_expect_success 'setup: blobs with a common prefix' '
	test "$(printf "collide 272\n" | aptix hash-object -w --stdin)" = $AMB4A &&
	test "$(printf "collide 321\n" | aptix hash-object -w --stdin)" = $AMB4B &&
	test "$(printf "collide 28427\n" | aptix hash-object -w --stdin)" = $AMB7A &&
	test "$(printf "collide 36605\n" | aptix hash-object -w --stdin)" = $AMB7B
'

test_expect_success 'an ambiguous abbreviation is fatal' '
	test_expect_code 128 aptix rev-parse 0712 >out 2>err &&
	test_must_be_empty out &&
	grep "^fatal: short object id .0712. is ambiguous" err &&
	test_expect_code 128 aptix rev-parse 3b36535 2>err &&
	grep "ambiguous" err
'

test_expect_success 'one more digit disambiguates' '
	test_write_lines $AMB4A $AMB4B $AMB7A $AMB7B >expect &&
	aptix rev-parse 07124 07121 3b365351 3b365356 >actual &&
	test_cmp expect actual
'

test_expect_success 'ambiguous with --verify -q: exit 1, silent' '
	test_expect_code 1 aptix rev-parse --verify -q 0712 >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err
'

test_expect_success 'fewer than 4 hex digits are not an abbreviation' '
	test_expect_code 128 aptix rev-parse "$(echo "$s3" | cut -c1-3)" 2>err &&
	grep "unknown name" err
'

test_expect_success 'an unknown name is fatal with the library message' '
	test_expect_code 128 aptix rev-parse nosuchthing >out 2>err &&
	test_must_be_empty out &&
	echo "fatal: unknown name '\''nosuchthing'\'': not an object, ref or conversation" >expect &&
	test_cmp expect err
'

test_expect_success 'an unknown ref is fatal' '
	test_expect_code 128 aptix rev-parse refs/conversations/nope 2>err &&
	grep "not found" err
'

test_expect_success 'conversation prefixes: unique resolves, ambiguous fails' '
	test_tick &&
	a1=$(make_session alpha-one "a one") &&
	a2=$(make_session alpha-two "a two") &&
	aptix update-ref refs/conversations/alpha-one "$a1" &&
	aptix update-ref refs/conversations/alpha-two "$a2" &&
	echo "$a1" >expect &&
	aptix rev-parse alpha-o >actual &&
	test_cmp expect actual &&
	test_expect_code 128 aptix rev-parse alpha 2>err &&
	grep "ambiguous" err
'

test_expect_success '--verify with one good name prints its id' '
	echo "$s2" >expect &&
	aptix rev-parse --verify c1~1 >actual &&
	test_cmp expect actual
'

test_expect_success '--verify needs exactly one name' '
	test_expect_code 128 aptix rev-parse --verify c1 c1~1 >out 2>err &&
	test_must_be_empty out &&
	echo "fatal: needed a single revision" >expect &&
	test_cmp expect err &&
	test_expect_code 128 aptix rev-parse --verify 2>err &&
	test_cmp expect err &&
	test_expect_code 1 aptix rev-parse --verify -q c1 c1 2>err &&
	test_must_be_empty err
'

test_expect_success '--verify of an unknown name' '
	test_expect_code 128 aptix rev-parse --verify nope 2>err &&
	grep "^fatal: unknown name .nope." err &&
	test_expect_code 1 aptix rev-parse -q --verify nope >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err
'

test_expect_success '--short prints 7 digits by default' '
	echo "$s3" | cut -c1-7 >expect &&
	aptix rev-parse --short HEAD >actual &&
	test_cmp expect actual
'

test_expect_success '--short=N prints N digits, at least 4' '
	echo "$s3" | cut -c1-10 >expect &&
	aptix rev-parse --short=10 c1 >actual &&
	test_cmp expect actual &&
	echo "$s3" | cut -c1-4 >expect &&
	aptix rev-parse --short=2 c1 >actual &&
	test_cmp expect actual &&
	echo "$s3" >expect &&
	aptix rev-parse --short=99 c1 >actual &&
	test_cmp expect actual
'

test_expect_success '--short grows until the abbreviation is unique' '
	echo 07124 >expect &&
	aptix rev-parse --short=4 $AMB4A >actual &&
	test_cmp expect actual &&
	echo 3b365356 >expect &&
	aptix rev-parse --short $AMB7B >actual &&
	test_cmp expect actual
'

test_expect_success '--short implies --verify' '
	test_expect_code 128 aptix rev-parse --short c1 c1~1 2>err &&
	grep "needed a single revision" err
'

test_expect_success '--symbolic-full-name: refs in full, others not at all' '
	test_write_lines refs/conversations/c1 refs/conversations/c1 \
		refs/conversations/c1 refs/conversations/alpha-one >expect &&
	aptix rev-parse --symbolic-full-name HEAD c1 refs/conversations/c1 \
		"$s1" c1~1 alpha-o >actual &&
	test_cmp expect actual
'

test_expect_success '--symbolic-full-name still fails on unknown names' '
	test_expect_code 128 aptix rev-parse --symbolic-full-name nope
'

test_expect_success '--abbrev-ref prints the conversation id' '
	test_write_lines c1 c1 alpha-two >expect &&
	aptix rev-parse --abbrev-ref HEAD refs/conversations/c1 alpha-two \
		"$s2" >actual &&
	test_cmp expect actual
'

test_expect_success 'a detached HEAD is its own full name' '
	aptix update-ref --no-deref HEAD "$s2" &&
	test_when_finished "aptix symbolic-ref HEAD refs/conversations/c1" &&
	test_write_lines HEAD HEAD "$s2" >expect &&
	aptix rev-parse --symbolic-full-name HEAD >actual &&
	aptix rev-parse --abbrev-ref HEAD >>actual &&
	aptix rev-parse HEAD >>actual &&
	test_cmp expect actual
'

test_expect_success '--show-toplevel and --aptix-dir' '
	top=$(pwd) &&
	mkdir -p sub/dir &&
	test_write_lines "$top" "$top/.aptix" >expect &&
	(cd sub/dir && aptix rev-parse --show-toplevel --aptix-dir) >actual &&
	test_cmp expect actual
'

test_expect_success '--show-toplevel with names' '
	test_write_lines "$(pwd)" "$s3" >expect &&
	aptix rev-parse --show-toplevel HEAD >actual &&
	test_cmp expect actual
'

test_expect_success 'unknown options are usage errors' '
	test_expect_code 129 aptix rev-parse --no-such-option 2>err &&
	grep "usage: aptix rev-parse" err
'

test_done
