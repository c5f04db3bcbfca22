#!/bin/sh
test_description='a store of format 1 (objects-format.md) opens, reads and grows

t/fixtures/store-v1.tar.gz was written by aptix at e09efcf
(t/fixtures/make-store-v1.sh): two conversations, a fork, a failed
turn. This aptix reads every object of it, checks it, and commits new
turns into it in format 2 (packed turns, spliced payloads), the old
objects still read as they were.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

test_expect_success 'setup: the format-1 fixture' '
	mkdir old &&
	tar -C old -xzf "$TEST_DIRECTORY/fixtures/store-v1.tar.gz" &&
	test -f old/.aptix/data.mdb
'

test_expect_success MDB_DUMP 'the fixture is of store format 1' '
	mdb_dump -s meta old/.aptix >meta &&
	grep -x " 666f726d6174" meta &&
	grep -x " 31" meta
'

test_expect_success 'log, sessions and show read it' '
	(
		cd old &&
		aptix log --format=%H >../heads &&
		test_line_count = 2 ../heads &&
		aptix sessions >../sessions &&
		grep "A fork of the first turn" ../sessions &&
		grep "Explain the parser" ../sessions &&
		aptix show >../show &&
		grep "A fork of the first turn" ../show &&
		main=$(grep "Explain the parser" ../sessions | awk "{print \$1}") &&
		aptix log $main >../log &&
		grep "Try again: caf" ../log &&
		grep "Make it return 2" ../log
	)
'

test_expect_success 'cat-object reads every object, and fsck --full agrees' '
	(
		cd old &&
		aptix cat-object --batch-check --batch-all-objects >../all &&
		test_line_count = 32 ../all &&
		awk "{print \$1}" ../all >../ids &&
		while read id
		do
			aptix cat-object -e $id || return 1
		done <../ids &&
		aptix cat-object --batch --batch-all-objects >/dev/null &&
		aptix fsck --full
	)
'

test_expect_success 'show --raw gives the raw response and the answer' '
	(
		cd old &&
		aptix show --json --raw >../raw.json
	) &&
	test "$(json_field .answer <raw.json | head -c 1)" != "" &&
	grep "\"response\"" raw.json
'

test_expect_success PYTHON3 'continue writes format 2 next to format 1' '
	start_standin &&
	(
		cd old &&
		before=$(aptix rev-parse HEAD) &&
		aptix continue -q --no-stream -m "A turn of the new format" \
			>../out &&
		after=$(aptix rev-parse HEAD) &&
		test "$before" != "$after" &&
		aptix cat-object session $after >../session &&
		turn=$(json_field .turn <../session) &&
		aptix cat-object turn $turn >../turn &&
		answer=$(json_field .answer <../turn) &&
		response=$(json_field .response <../turn) &&
		aptix cat-object blob $answer >../answer &&
		aptix cat-object blob $response >../response &&
		test "$(aptix cat-object -s $response)" = \
			"$(wc -c <../response | tr -d " ")" &&
		python3 -c "import json, sys
r = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
parts = [c[\"text\"] for o in r[\"output\"] for c in o.get(\"content\", [])]
assert text in parts, (text, parts)" ../response ../answer &&
		aptix fsck --full &&
		aptix log --format=%H >../heads2 &&
		test_line_count = 3 ../heads2 &&
		aptix show $before >../show-old &&
		grep "A fork of the first turn" ../show-old
	)
'

test_expect_success PYTHON3,MDB_DUMP 'the first value of a newer format raised the format' '
	# the new turn is deflated against its parent, a format-1 value
	# (a based value: format 3), and kept in the values table (4); its
	# index record is kept in the timeline (5); its values have
	# pieces of their own with a checksum (6); the reflog entry of HEAD
	# links to the one of its conversation (7); its index record is of
	# version 6, with a compact rolling section (8)
	mdb_dump -s meta old/.aptix >meta &&
	grep -x " 38" meta
'

test_expect_success PYTHON3 'reindex and salvage keep both formats' '
	(
		cd old &&
		aptix sessions >../sessions-before &&
		aptix reindex &&
		aptix sessions >../sessions-after &&
		test_cmp ../sessions-before ../sessions-after &&
		aptix cat-object --batch-check --batch-all-objects >../all2
	) &&
	(cd old && aptix salvage ../saved) >salvage.out 2>&1 &&
	(
		cd saved &&
		aptix cat-object --batch-check --batch-all-objects >../all3
	) &&
	test_cmp all2 all3
'

test_expect_success PYTHON3 'purging the answer takes the response spliced on it' '
	answer=$(json_field .answer <turn) &&
	response=$(json_field .response <turn) &&
	aptix -C old purge --dry-run "$answer" >list &&
	grep "^purge blob $answer$" list &&
	grep "^purge blob $response$" list &&
	aptix -C old purge --force --reason test "$answer" 2>err &&
	test_must_fail aptix -C old cat-object -p "$response" 2>err &&
	grep "was purged" err &&
	aptix -C old fsck --full >fsck &&
	! grep -e "^broken" -e "^missing" -e "^corrupt" fsck
'

test_done
