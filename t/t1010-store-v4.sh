#!/bin/sh
test_description='a store of format 4 (objects-format.md) opens, reads and grows

t/fixtures/store-v4.tar.gz was written by aptix at 6ed5a83
(t/fixtures/make-store-v4.sh): a conversation of 36 turns, a failed turn
and a fork of the first turn. Format 4 keeps session index records in
the sessions table (one of them, holding a rolling summary base, behind
a pointer into the values table), children keyed by parent and child
ids, and empty timeline values. Format 5 keeps records in the timeline
under their time and children under their parent'"'"'s time. This aptix
reads the old layout, writes new turns in the new one beside it (their
chain and summary read from old records), and reindex moves every
record to the new layout.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

# The fixture's sessions and conversations.
first=f52d6348ca35973e178b4264460ca6575056a8c9ba45c18ea91b3b8c443023e4
head=b8500473abb9f3ec5a80aa431e04ff3a7d83b180cf1586b52e0c85ae9f717b6f
failed=a6f22b93bbd788126fd7bb83ce05037a2662564447f2609ba98d98745927b3ec
fork=e8fa2f4726fab4bdb9c51d2cec7d021da0bd5b892baf76762de2a18847d94b39
main=13484812-3e48-4ea1-be2e-dc7798f8fd1e
forked=9119cde0-d89a-4549-a4ad-f31194475b50

store () {
	_dir=$1
	shift
	python3 "$TEST_DIRECTORY/lib-store.py" "$_dir/.aptix" "$@"
}

# store_format <dir>: the meta "format" of the store of <dir>
store_format () {
	mdb_dump -p -s meta "$1/.aptix" | sed -n '/^ format$/{n;s/^ //;p;}'
}

# layout <dir>: how the index tables of the store of <dir> lay out their
# records (lib-store.py layout)
layout () {
	store "$1" layout
}

test_expect_success 'setup: the format-4 fixture' '
	mkdir old &&
	tar -C old -xzf "$TEST_DIRECTORY/fixtures/store-v4.tar.gz" &&
	test -f old/.aptix/data.mdb &&
	cp -R old reidx
'

test_expect_success MDB_DUMP,PYTHON3 'the fixture is of store format 4, records in the sessions table' '
	test "$(store_format old)" = 4 &&
	layout old >actual &&
	cat >expect <<-\EOF &&
	children key 64 value 0 37
	sessions pointer 1
	sessions record v3 37
	timeline key 40 value 0 38
	EOF
	test_cmp expect actual
'

test_expect_success 'log, sessions, show and fsck read it' '
	aptix -C old log --all --format="%H %S %P %s" >log.before &&
	test_line_count = 38 log.before &&
	grep "^$failed failed " log.before &&
	grep "^$fork committed $first A fork of the first turn$" log.before &&
	test "$(aptix -C old rev-parse refs/conversations/$main)" = $head &&
	aptix -C old sessions >sessions &&
	grep "^  13484812 .* 36 turns  committed  Explain the parser$" sessions &&
	aptix -C old show --json $head >show.json &&
	test "$(json_field .status <show.json)" = committed &&
	aptix -C old log --graph --oneline --all >graph &&
	aptix -C old cat-object --batch-check --batch-all-objects |
		cut -d" " -f1 >ids &&
	aptix -C old cat-object --batch <ids >batch-before &&
	aptix -C old fsck --full >fsck &&
	test_must_be_empty fsck
'

# The stand-in starts from the state it had when the fixture was made,
# and aptix's clock from an hour after the fixture's last turn: the
# chain of the fixture has not expired.
test_expect_success PYTHON3 'a new turn on a format-4 record: chained, no file sent again' '
	cp old/standin-state.json state.json &&
	start_standin --state "$TRASH_DIRECTORY/state.json" &&
	at=$(aptix -C old log -n 1 --format=%at $fork) &&
	(
		cd old &&
		APTIX_TEST_DATE=$((at + 3600)) &&
		export APTIX_TEST_DATE &&
		aptix continue -q --no-stream --conversation $main \
			--file parse.c --file notes.md -m "One more turn" >../out
	) &&
	new=$(aptix -C old rev-parse refs/conversations/$main) &&
	echo $new >new &&
	aptix -C old cat-object session $new >session &&
	test "$(json_field .parent <session)" = $head &&
	aptix -C old cat-object turn $(json_field .turn <session) >turn &&
	# the chain record of the old parent says that both files are held
	python3 -c "import json, sys
files = json.load(open(sys.argv[1]))[\"files\"]
assert [f[\"sent\"] for f in files] == [False, False], files" turn &&
	last_request_body >request.json &&
	json_field .previous_response_id <request.json >prev &&
	aptix -C old cat-object turn $(aptix -C old cat-object session $head |
		json_field .turn) | json_field .response_id >expect &&
	test_cmp expect prev
'

test_expect_success MDB_DUMP,PYTHON3 'the new turn is indexed in format 5 beside the old records' '
	# (its values, in pieces of their own with a checksum, make the
	# store format 6; its session record, of version 6, format 8)
	test "$(store_format old)" = 8 &&
	layout old >actual &&
	cat >expect <<-\EOF &&
	children key 64 value 0 37
	children key 72 value 0 1
	sessions located 1
	sessions pointer 1
	sessions record v3 37
	timeline key 40 value + 1
	timeline key 40 value 0 38
	EOF
	test_cmp expect actual &&
	test "$(store old record hex:$(cat new) | cut -c1-2)" = 06 &&
	# its children key starts with the time of its parent: bytes 68-75
	# of the parent record
	at=$(store old record hex:$head | cut -c137-152) &&
	store old keys children | grep -x "$at$head$(cat new)" &&
	aptix -C old fsck --full >fsck &&
	test_must_be_empty fsck &&
	aptix -C old log --all --format="%H %S %P %s" >log.after &&
	test_line_count = 39 log.after &&
	grep "^$(cat new) committed $head One more turn$" log.after &&
	grep -v "^$(cat new) " log.after >log.old &&
	test_cmp log.before log.old &&
	# the new values filled up the last piece of format 4 (pieces of
	# 2,000 bytes): the old values read as they did
	aptix -C old cat-object --batch <ids >batch-after &&
	test_cmp batch-before batch-after &&
	aptix -C old sessions >sessions &&
	grep "^  13484812 .* 37 turns  committed  Explain the parser$" sessions
'

test_expect_success PYTHON3 'a failed fork of a format-4 session is found as its child' '
	standin_fault "{\"kind\":\"failed\"}" &&
	(
		cd old &&
		APTIX_TEST_DATE=$(($(aptix log -n 1 --format=%at $fork) + 7200)) &&
		export APTIX_TEST_DATE &&
		test_must_fail aptix fork -q --no-stream -m "A failed fork" \
			$first >../out 2>&1
	) &&
	standin_reset &&
	# both failed snapshots hang off history through the children
	# table: one under a key of format 4, one under format 5
	aptix -C old log --all --format="%H %S %P %s" >log.failed &&
	grep "^$failed failed " log.failed &&
	grep " failed $first A failed fork$" log.failed
'

test_expect_success MDB_DUMP,PYTHON3 'reindex moves every record to the format-5 layout' '
	aptix -C old log --all --format="%H %S %P %s" >log.before &&
	aptix -C old log --graph --oneline --all >graph.before &&
	aptix -C old sessions >sessions.before &&
	aptix -C old reindex >out &&
	echo "reindexed 40 sessions" >expect &&
	test_cmp expect out &&
	layout old >actual &&
	cat >expect <<-\EOF &&
	children key 72 value 0 39
	sessions located 40
	timeline key 40 value + 40
	EOF
	test_cmp expect actual &&
	aptix -C old log --all --format="%H %S %P %s" >log.after &&
	test_cmp log.before log.after &&
	aptix -C old log --graph --oneline --all >graph.after &&
	test_cmp graph.before graph.after &&
	aptix -C old sessions >sessions.after &&
	test_cmp sessions.before sessions.after &&
	aptix -C old fsck --full >fsck &&
	! grep -v "^dangling session" fsck
'

test_expect_success MDB_DUMP,PYTHON3 'a reindex alone gives the store format 6; the large record stays behind a pointer' '
	test "$(store_format reidx)" = 4 &&
	store reidx value-layout >before &&
	grep "^objects pointer 4 " before &&
	aptix -C reidx cat-object --batch <ids >batch-before-reidx &&
	aptix -C reidx reindex >/dev/null &&
	test "$(store_format reidx)" = 8 &&
	# every value of format 4 moved into checksummed pieces, the old
	# pieces gone
	store reidx value-layout >actual &&
	cat >expect <<-\EOF &&
	objects in-place 23
	objects pointer 6 219
	sessions in-place 38
	timeline in-place 37
	timeline pointer 6 1
	values unnamed 0
	EOF
	test_cmp expect actual &&
	aptix -C reidx cat-object --batch <ids >batch-after-reidx &&
	test_cmp batch-before-reidx batch-after-reidx &&
	layout reidx >actual &&
	cat >expect <<-\EOF &&
	children key 72 value 0 37
	sessions located 38
	timeline key 40 value + 38
	EOF
	test_cmp expect actual &&
	mdb_dump -s timeline reidx/.aptix >timeline &&
	python3 -c "import sys
vals = [bytes.fromhex(l.strip()) for l in open(sys.argv[1])
        if l.startswith(\" \")][1::2]
assert sum(1 for v in vals if v[:1] == b\"\\x00\") == 1, vals" timeline &&
	aptix -C reidx fsck --full >fsck &&
	test_must_be_empty fsck &&
	aptix -C reidx fsck --failed >fsck &&
	echo "failed session $failed" >expect &&
	test_cmp expect fsck
'

test_expect_success MDB_DUMP,PYTHON3 'a reindex that finds no session raises the format too' '
	aptix init -q empty &&
	store empty put meta format 4 &&
	store empty del meta index-layout &&
	test "$(store_format empty)" = 4 &&
	aptix -C empty reindex >out &&
	echo "reindexed 0 sessions" >expect &&
	test_cmp expect out &&
	test "$(store_format empty)" = 5 &&
	store empty get meta index-layout >layout &&
	echo "timeline" | tr -d "\n" | od -An -tx1 | tr -d " \n" >expect &&
	echo >>expect &&
	test_cmp expect layout
'

test_done
