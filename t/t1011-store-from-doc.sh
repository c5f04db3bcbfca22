#!/bin/sh
test_description='a store written from objects-format.md alone

t/lib-mkstore.py writes a store without aptix, from the layouts of
objects-format.md ("The store, table by table"): objects (those of 64
bytes or more in checksummed pieces of their own, format 6), the
session records with their rolling summary (folded into a base at turn
33) and chain sections, locators, children keys, conversation records,
refs and the reflog. aptix must find it sound (fsck --full recomputes
every index record), read it, remake the very same index records when
it reindexes, and grow it. A second store of long lines exercises the
cut lines and the compaction of rolling summary bases.'
. "$(dirname "$0")"/test-lib.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to write the store'
	test_done
fi

uuid=6ba7b810-9dad-41d1-80b4-00c04fd430c8

# The index tables, with each record as its value (resolved when it is
# kept in the values table: where a record lives is aptix'"'"'s choice).
dump_index () {
	python3 - "$TEST_DIRECTORY" <<-\EOF
	import importlib.util, sys
	spec = importlib.util.spec_from_file_location(
	    "store", sys.argv[1] + "/lib-store.py")
	ls = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(ls)
	for t in ("timeline", "sessions", "children", "conversations"):
	    for k, v in ls.table_records(".aptix", t)[1]:
	        if t == "timeline":
	            v = ls.resolve(".aptix", v)
	        print(t, k.hex(), v.hex())
	EOF
}

test_expect_success 'setup: the store is written from the document' '
	python3 "$TEST_DIRECTORY/lib-mkstore.py" . 40 >sessions &&
	test_line_count = 40 sessions &&
	first=$(sed -n 1p sessions) &&
	head=$(sed -n 40p sessions)
'

test_expect_success 'the larger values are in pieces of format 6' '
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix value-layout >layout &&
	grep "^objects pointer 6 " layout &&
	! grep "pointer [45]" layout &&
	grep -x "values unnamed 0" layout
'

test_expect_success 'fsck --full finds nothing wrong' '
	aptix fsck --full --no-dangling >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err
'

test_expect_success 'log reads the session records' '
	aptix log --oneline --decorate >log &&
	test_line_count = 40 log &&
	head -n 1 log >actual &&
	echo "$(printf %.12s $head) (HEAD -> c1) Question 40 about the parser" >expect &&
	test_cmp expect actual &&
	aptix log --all --oneline >all &&
	grep "\[failed\] Fail$" all
'

test_expect_success 'the tool call of turn 3 and its result in turn 4' '
	aptix cat-object -p $(sed -n 3p sessions) >s3 &&
	grep "^status  *awaiting_tool_results$" s3 &&
	turn=$(sed -n "s/^turn  *//p" s3) &&
	aptix cat-object -p $turn >t3 &&
	grep "^format  *2$" t3 &&
	call=$(sed -n "s/^tool call  *//p" t3) &&
	aptix cat-object -t $call >type &&
	echo tool-call >expect &&
	test_cmp expect type &&
	aptix cat-object -p $(sed -n 4p sessions) >s4 &&
	aptix cat-object -p $(sed -n "s/^turn  *//p" s4) >t4 &&
	aptix cat-object -p $(sed -n "s/^tool result  *//p" t4) >r4 &&
	grep "^call  *$call$" r4 &&
	grep "^exit code  *0$" r4 &&
	aptix fsck --full >out &&
	! grep -v "^dangling blob" out
'

test_expect_success 'show reads the objects' '
	aptix show $first >show &&
	grep "Question 1 about the parser" show &&
	grep "Answer 1: it reads tokens." show &&
	grep "main.c" show
'

test_expect_success 'sessions reads the conversation records' '
	aptix sessions >list &&
	grep "^\* c1  .* 40 turns  committed  The parser$" list &&
	grep "^  6ba7b810  .*  failed  *Fail$" list &&
	aptix sessions --json >json &&
	grep "\"conversation\": \"$uuid\"" json
'

test_expect_success 'reflog reads the log' '
	aptix reflog refs/conversations/c1 >reflog &&
	test_line_count = 40 reflog &&
	grep "vector: turn 40" reflog
'

test_expect_success 'reindex remakes the same index records' '
	dump_index >before &&
	aptix reindex &&
	dump_index >after &&
	test_cmp before after
'

test_expect_success 'long lines: cut, folded by size, compacted' '
	mkdir long &&
	python3 "$TEST_DIRECTORY/lib-mkstore.py" long 90 long >long.ids &&
	(
		cd long &&
		aptix fsck --full --no-dangling >out &&
		test_must_be_empty out &&
		dump_index >before &&
		aptix reindex &&
		dump_index >after &&
		test_cmp before after
	)
'

# grow41 <head>: commit turn 41 of c1 on <head>; prints the session
grow41 () {
	turn=$(aptix write-turn --conversation c1 --seq 41 \
		--instruction-text "Question 41" --answer-text "Answer 41" \
		--response-id resp_41 --previous-response-id resp_40 \
		--created-at 1700003000000) &&
	s=$(aptix commit-session -p $1 --created-at 1700003001000 $turn) &&
	aptix update-ref refs/conversations/c1 $s $1 &&
	echo $s
}

# views <dir>: what the readers show of the store in <dir>
views () {
	(
		cd "$1" &&
		aptix log --all --format="%H %s" &&
		aptix log -S "Question" --oneline &&
		aptix show --json "$(sed -n 40p "$TRASH_DIRECTORY/sessions")" &&
		aptix sessions --json &&
		aptix usage --all-workspaces --json --turns &&
		aptix config context.chain-max-chars 100 &&
		aptix config context.summary-chars 600 &&
		aptix continue --dry-run --no-files --no-rag -m next 2>/dev/null &&
		aptix config --unset context.chain-max-chars &&
		aptix config --unset context.summary-chars
	)
}

test_expect_success 'records of version 5 (store format 7) read as version 6' '
	mkdir v5 &&
	python3 "$TEST_DIRECTORY/lib-mkstore.py" v5 40 v5 >v5.ids &&
	test_cmp sessions v5.ids &&
	test "$(python3 "$TEST_DIRECTORY/lib-store.py" v5/.aptix get meta format)" = 37 &&
	(
		cd v5 &&
		aptix fsck --full --no-dangling >out &&
		test_must_be_empty out &&
		dump_index >../v5.index
	) &&
	# the rolling section of turn 40: a head of be32s naming its holder
	# (turn 33) in version 5, of varints naming none in version 6
	grep "^timeline .* 05" v5.index >/dev/null &&
	! grep "^timeline .* 06" v5.index &&
	views . >v6.views &&
	views v5 >v5.views &&
	grep "\"Summary of the earlier turns of this conversation, turns 1 to 34" v6.views &&
	test_cmp v6.views v5.views
'

test_expect_success 'aptix grows a store of version 5 records, reindex upgrades it' '
	(
		cd v5 &&
		s=$(grow41 "$(sed -n 40p ../v5.ids)") &&
		test "$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix get meta format)" = 38 &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix record hex:$s >rec &&
		grep "^06" rec &&
		aptix fsck --full --no-dangling >out &&
		test_must_be_empty out &&
		aptix reindex -q &&
		aptix fsck --full --no-dangling >out &&
		test_must_be_empty out &&
		dump_index >after &&
		! grep "^timeline [0-9a-f]* 05" after
	) &&
	# the upgraded records are the document'"'"'s version 6, byte for byte
	dump_index | grep "^timeline" | sort >want &&
	grep "^timeline" v5/after | sort >have &&
	comm -23 want have >missing &&
	test_must_be_empty missing
'

test_expect_success 'aptix grows the store' '
	grow41 $head >/dev/null &&
	aptix fsck --full --no-dangling >out &&
	test_must_be_empty out &&
	aptix log --oneline -n 1 >log &&
	grep "Question 41" log
'

test_done
