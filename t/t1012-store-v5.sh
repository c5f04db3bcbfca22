#!/bin/sh
test_description='a store of format 5 (objects-format.md) reads, grows and
is moved to format 6 by reindex

t/fixtures/store-v5.tar.gz was written by aptix at 0bf430c
(t/fixtures/make-store-v5.sh): 20 turns whose values share pieces of
1,002 bytes, one answer purged (its bytes zeroed where it shared a
piece). This aptix reads it as it is, writes new values in pieces of
their own with a checksum (format 6) beside the old ones, and reindex
writes every old value again in format 6 and drops the shared pieces,
their zeroed bytes with them.'
. "$(dirname "$0")"/test-lib.sh

test_lazy_prereq MDB_DUMP 'mdb_dump -V'
if ! test_have_prereq PYTHON3,MDB_DUMP
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='python3 and mdb_dump are needed to read the store'
	test_done
fi

store () {
	_dir=$1
	shift
	python3 "$TEST_DIRECTORY/lib-store.py" "$_dir/.aptix" "$@"
}

# store_format <dir>: the meta "format" of the store of <dir>
store_format () {
	mdb_dump -p -s meta "$1/.aptix" | sed -n '/^ format$/{n;s/^ //;p;}'
}

# value_bytes <dir>: the bytes of the values table's pieces
value_bytes () {
	mdb_dump -s values "$1/.aptix" |
		awk '/^ / && ++n % 2 == 0 { b += (length($0) - 1) / 2 }
			END { print b + 0 }'
}

test_expect_success 'setup: the format-5 fixture' '
	mkdir old &&
	tar -C old -xzf "$TEST_DIRECTORY/fixtures/store-v5.tar.gz" &&
	test -f old/.aptix/data.mdb &&
	cp -R old grown
'

test_expect_success 'the fixture is of format 5, its values in shared pieces' '
	test "$(store_format old)" = 5 &&
	store old value-layout >layout &&
	grep "^objects pointer 5 " layout &&
	! grep "pointer [46]" layout
'

test_expect_success 'log, show, cat-object and fsck read it' '
	aptix -C old log --all --format=%H >sessions &&
	test_line_count = 20 sessions &&
	while read -r s
	do
		aptix -C old show "$s" >>shown || return 1
	done <sessions &&
	grep "purged on" shown &&
	aptix -C old cat-object --batch-check --batch-all-objects |
		cut -d" " -f1 >ids &&
	aptix -C old cat-object --batch <ids >batch-before &&
	aptix -C old fsck --full >fsck-before &&
	! grep -v -e "^purged " -e "^dangling " fsck-before
'

test_expect_success 'a new value goes in pieces of its own beside the old ones' '
	test_seq 1 500 >big &&
	id=$(aptix -C grown hash-object -w --stdin <big) &&
	test "$(store_format grown)" = 6 &&
	store grown value-layout >layout &&
	grep "^objects pointer 5 " layout &&
	grep -x "objects pointer 6 1" layout &&
	aptix -C grown cat-object blob $id >actual &&
	test_cmp big actual &&
	aptix -C grown cat-object --batch <ids >batch-grown &&
	test_cmp batch-before batch-grown
'

test_expect_success 'reindex moves every value to format 6' '
	before=$(value_bytes old) &&
	aptix -C old reindex >out &&
	echo "reindexed 20 sessions" >expect &&
	test_cmp expect out &&
	test "$(store_format old)" = 8 &&
	store old value-layout >layout &&
	! grep "pointer [45]" layout &&
	grep "^objects pointer 6 " layout &&
	grep -x "values unnamed 0" layout &&
	aptix -C old cat-object --batch <ids >batch-after &&
	test_cmp batch-before batch-after &&
	aptix -C old fsck --full >fsck-after &&
	test_cmp fsck-before fsck-after &&
	after=$(value_bytes old) &&
	# the zeroed bytes of the purged answer went with the shared pieces
	test "$after" -lt "$before" &&
	aptix -C old log --all --format=%H >sessions-after &&
	test_cmp sessions sessions-after
'

test_expect_success 'a second reindex writes no value again' '
	store old keys values >keys-before &&
	aptix -C old reindex -q &&
	store old keys values >keys-after &&
	test_cmp keys-before keys-after
'

test_expect_success 'reindex moves a grown store too' '
	aptix -C grown reindex -q &&
	store grown value-layout >layout &&
	! grep "pointer [45]" layout &&
	grep -x "values unnamed 0" layout &&
	aptix -C grown cat-object --batch <ids >batch-grown &&
	test_cmp batch-before batch-grown
'

test_done
