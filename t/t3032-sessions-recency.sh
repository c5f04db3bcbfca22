#!/bin/sh
test_description='the recency index: conversations by last update

sessions, the page'"'"'s list and app-server'"'"'s list read the
conversations newest first from the recency index (objects-format.md,
"The recency index"), kept in the write of each conversation record: a
page reads the records it shows, not every one. A store without it is
listed by reading every record, as before; reindex builds it and fsck
checks it.'
. "$(dirname "$0")"/test-lib.sh

test_lazy_prereq STORE_EDIT '
	python3 -c "import sys" &&
	command -v mdb_dump && command -v mdb_load
'

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# turn <conv> <ms> [<parent>]: a committed session of conv made at ms,
# its conversation ref moved to it; its id in $last
turn () {
	local t
	t=$(aptix write-turn --conversation "$1" --seq 1 \
		--instruction-text "in $1 at $2" --created-at "$2") &&
	last=$(aptix commit-session ${3:+-p "$3"} --created-at "$2" "$t") &&
	aptix update-ref "refs/conversations/$1" "$last"
}

listings () {
	aptix sessions --all-workspaces --include-archived >"$1.text" &&
	aptix sessions --all-workspaces --include-archived --json >"$1.json" &&
	aptix sessions --all-workspaces -n 2 >"$1.n2" &&
	aptix sessions --all-workspaces --status committed -n 3 >"$1.st"
}

test_expect_success 'a new store keeps the index from its first conversation' '
	aptix init -q &&
	turn c1 1000 &&
	store get recency s >state &&
	echo 01 >expect &&
	test_cmp expect state &&
	store keys recency >keys &&
	# the time, as 2^64 - 1 - ms, then the id
	echo fffffffffffffc176331 >expect.key &&
	grep -v "^73$" keys >key &&
	test_cmp expect.key key
'

test_expect_success 'setup: conversations updated in another order than made' '
	turn c2 2000 &&
	turn c3 3000 &&
	c3=$last &&
	turn c4 4000 &&
	turn c1 5000 &&
	turn c2 2500 &&
	aptix update-ref refs/conversations/fork-of-c3 $c3 &&
	aptix conversation archive c4 &&
	aptix conversation rename c3 "Third" &&
	turn c5 3000
'

test_expect_success 'an update moves the key, a deletion takes it away' '
	store keys recency >keys &&
	test_line_count = 7 keys &&
	aptix conversation delete -D c5 >/dev/null &&
	store keys recency >keys &&
	test_line_count = 6 keys &&
	aptix fsck >out 2>err &&
	test_must_be_empty out
'

test_expect_success STORE_EDIT 'the listings are those of the scan of every record' '
	listings indexed &&
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	for k in $(store keys recency)
	do
		store del recency hex:$k || return 1
	done &&
	listings scanned &&
	for f in text json n2 st
	do
		test_cmp scanned.$f indexed.$f || return 1
	done &&
	# the fork with no turn of its own is dated by its ref (now)
	awk "{ print \$1 }" indexed.text >ids &&
	printf "%s\n" fork-of- c1 c4 c3 c2 >expect &&
	test_cmp expect ids
'

test_expect_success STORE_EDIT 'a page reads only the records it shows' '
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	store put conversations c2 hex:ff &&
	aptix sessions --all-workspaces -n 2 >out &&
	grep " c1 " out &&
	test_must_fail aptix sessions --all-workspaces >out 2>err &&
	grep "index record of .* is corrupt" err
'

test_expect_success STORE_EDIT 'a store without the index is scanned; reindex builds it' '
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	for k in $(store keys recency)
	do
		store del recency hex:$k || return 1
	done &&
	store put conversations c2 hex:ff &&
	# no index: every record is read, the damaged one too
	test_must_fail aptix sessions --all-workspaces -n 1 2>err &&
	grep "index record of .* is corrupt" err &&
	aptix reindex -q &&
	store get recency s &&
	aptix sessions --all-workspaces --include-archived >after &&
	test_cmp indexed.text after &&
	aptix fsck >out 2>err &&
	test_must_be_empty out
'

test_expect_success STORE_EDIT 'fsck names a missing key and a stale one; listings skip the stale one' '
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	key=$(store keys recency | grep "6332$") &&
	store del recency hex:$key &&
	store put recency hex:fffffffffffffc1763 hex: &&
	test_expect_code 1 aptix fsck >out 2>&1 &&
	grep "conversation .c2. (updated 2500) is missing from the recency index" out &&
	grep "the recency index lists conversation .c. at 1000" out &&
	aptix sessions --all-workspaces --include-archived >out &&
	! grep " c2 " out &&
	! grep " c  " out &&
	aptix reindex -q &&
	aptix sessions --all-workspaces --include-archived >out &&
	test_cmp indexed.text out
'

test_done
