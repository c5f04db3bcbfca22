#!/bin/sh

test_description='a damaged conversation record is an error, never another answer

A conversation record (title, counts, newest snapshot, usage sums) is
read by every listing of conversations without the objects: before
version 3 a flipped bit in it was another title or other counts, which
fsck --full did not see. A record of version 3 ends with the CRC-32 of
its bytes (objects-format.md, "conversations"): each flipped bit is an
error ("run aptix reindex") for sessions and fsck alike, and reindex
makes the record again.'

. "$(dirname "$0")"/test-lib.sh

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# key of the conversation c1 in the conversations table
c1=hex:6331

test_expect_success PYTHON3 'setup: two sessions in conversation c1' '
	aptix init -q &&
	instr=$(echo "Explain the parser" | aptix hash-object -w --stdin) &&
	t1=$(aptix write-turn --conversation c1 --seq 1 \
		--instruction $instr --created-at 1700000000000) &&
	s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
	aptix update-ref refs/conversations/c1 $s1 &&
	t2=$(aptix write-turn --conversation c1 --seq 2 \
		--instruction $instr --created-at 1700000060000) &&
	s2=$(aptix commit-session -p $s1 --created-at 1700000061000 $t2) &&
	aptix update-ref refs/conversations/c1 $s2 $s1 &&
	aptix sessions --json >good.json &&
	grep "Explain the parser" good.json &&
	store get conversations $c1 >rec &&
	grep "^03" rec
'

test_expect_success PYTHON3 'the record ends with the CRC-32 of its bytes' '
	python3 -c "
import sys, zlib
rec = bytes.fromhex(open(\"rec\").read().strip())
assert zlib.crc32(rec[:-4]) == int.from_bytes(rec[-4:], \"big\"), rec.hex()
"
'

test_expect_success PYTHON3 'a flipped bit in the title is an error, not another title' '
	rec=$(cat rec) &&
	# "parser" becomes "parsex"
	bad=$(echo "$rec" | sed "s/706172736572/706172736578/") &&
	test "$bad" != "$rec" &&
	store put conversations $c1 hex:$bad &&
	test_must_fail aptix sessions >out 2>err &&
	! grep parsex out &&
	grep "index record of c1 is corrupt: run .aptix reindex." err &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch: index record of c1 is corrupt" actual &&
	aptix reindex -q &&
	aptix sessions --json >out &&
	test_cmp good.json out &&
	aptix fsck
'

test_expect_success PYTHON3 'every bit of the record: each flip is an error, none another answer' '
	python3 -c "
import sys
rec = bytes.fromhex(open(\"rec\").read().strip())
for i in range(0, len(rec) * 8, 11):
    b = bytearray(rec)
    b[i // 8] ^= 1 << (i % 8)
    print(b.hex())
" >flips &&
	test $(wc -l <flips) -gt 50 &&
	while read bad
	do
		store put conversations $c1 hex:$bad &&
		if aptix sessions --json >out 2>err
		then
			test_cmp good.json out || return 1
		else
			grep "corrupt" err || return 1
		fi
	done <flips &&
	aptix reindex -q &&
	aptix sessions --json >out &&
	test_cmp good.json out
'

test_done
