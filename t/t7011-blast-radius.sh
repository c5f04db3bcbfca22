#!/bin/sh

test_description='one lost page loses what it holds, no more

Store format 6 keeps each value in pieces of its own, with a checksum
(objects-format.md, "Checksummed values of their own"). A 30-turn store
loses one leaf page of its values table: aptix fsck names exactly the
objects lost (those with a piece on the page, and those based or spliced
on them, as t/lib-store.py computes from the intact store) and exactly
the sessions lost (those whose session, turn, instruction or answer is
among them), and every other session is still shown.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='python3 is needed to run the stand-in and damage the store'
	test_done
fi

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" "$@"
}

test_expect_success 'setup: 30 turns with files' '
	start_standin &&
	aptix init -q &&
	test_seq 1 120 | sed "s/^/int line_/; s/$/(void);/" >parse.c &&
	for i in $(test_seq 1 30)
	do
		if test $((i % 5)) = 0
		then
			echo "int edit_$i(void);" >>parse.c
		fi &&
		msg="turn $i: $(test_seq $i $((i + 60)) | tr "\n" " ")" &&
		test_tick &&
		aptix continue -q --no-stream --file parse.c -m "$msg" \
			>/dev/null || return 1
	done &&
	aptix log --all --format=%H >sessions &&
	test_line_count = 30 sessions &&
	aptix fsck >out &&
	test_must_be_empty out &&
	mkdir good &&
	cp -R .aptix good/.aptix
'

test_expect_success 'the values are in checksummed pieces of their own' '
	store .aptix value-layout >layout &&
	grep "^objects pointer 6 " layout &&
	! grep "pointer [45]" layout &&
	grep -x "values unnamed 0" layout
'

test_expect_success 'what a page of the values table holds' '
	store .aptix leaves values >leaves &&
	test_line_count -gt 3 leaves &&
	# a page in the middle: objects of turns in mid-chain
	page=$(sed -n "$(( ($(wc -l <leaves) + 1) / 2 ))p" leaves |
		cut -d" " -f1) &&
	echo "$page" >page &&
	store good/.aptix lost-with "$page" >lost-objects &&
	test_line_count -gt 0 lost-objects &&
	# the sessions lost: session, turn, instruction or answer lost
	: >lost-sessions &&
	while read -r s
	do
		t=$(aptix cat-object session "$s" | json_field .turn) &&
		aptix cat-object turn "$t" >turn.json &&
		for id in $s $t $(json_field .instruction <turn.json) \
			$(json_field .answer <turn.json)
		do
			if grep -qx "$id" lost-objects
			then
				echo "$s" >>lost-sessions &&
				break
			fi
		done || return 1
	done <sessions &&
	sort -o lost-sessions lost-sessions &&
	test_line_count -gt 0 lost-sessions &&
	test_line_count -lt 30 lost-sessions
'

test_expect_success 'fsck names exactly the objects and sessions lost' '
	store .aptix page "$(cat page)" zero &&
	test_expect_code 1 aptix fsck --no-dangling >fsck.out &&
	grep "^corrupt store: values: page $(cat page) " fsck.out &&
	sed -n "s/^corrupt [a-z]* \([0-9a-f]\{64\}\): .*/\1/p" fsck.out |
		sort >actual &&
	test_cmp lost-objects actual &&
	sed -n "s/^lost session \([0-9a-f]\{64\}\): .*/\1/p" fsck.out |
		sort >actual &&
	test_cmp lost-sessions actual &&
	! grep -v -e "^corrupt " -e "^lost session " -e "^broken link " \
		-e "^ *to " -e "^missing " fsck.out
'

test_expect_success 'every other session is shown; the lost ones are not' '
	while read -r s
	do
		if grep -qx "$s" lost-sessions
		then
			test_must_fail aptix show "$s" >/dev/null 2>err &&
			grep "corrupt" err
		else
			aptix show "$s" >/dev/null
		fi || return 1
	done <sessions &&
	aptix log --all --oneline >log &&
	test_line_count = 30 log
'

test_expect_success 'salvage copies every object not lost' '
	aptix salvage salvaged >out 2>&1 &&
	aptix -C salvaged cat-object --batch-check --batch-all-objects |
		cut -d" " -f1 | sort >kept &&
	aptix -C good cat-object --batch-check --batch-all-objects |
		cut -d" " -f1 | sort >all &&
	comm -23 all kept >gone &&
	test_cmp lost-objects gone
'

test_done
