#!/bin/sh

test_description='aptix fsck: objects, links, refs, reachability, index

A good store is clean. Each kind of damage, made behind aptix'"'"'s back
with t/lib-store.py (mdb_dump/mdb_load) on a fresh copy of the good
store, is reported and makes fsck exit 1; dangling objects alone do not.'

. "$(dirname "$0")"/test-lib.sh

test_lazy_prereq STORE_EDIT '
	python3 -c "import sys" &&
	command -v mdb_dump && command -v mdb_load
'
if ! test_have_prereq STORE_EDIT
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='needs python3 and lmdb-utils (mdb_dump, mdb_load)'
	test_done
fi

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# fresh <dir>: a copy of the good store in <dir>, and cd there
fresh () {
	rm -rf "$1" &&
	cp -R good "$1" &&
	cd "$1" || return 1
}

test_expect_success '-h shows the usage' '
	test_expect_code 129 aptix fsck -h >out &&
	grep "^usage: aptix fsck" out &&
	grep -e "--connectivity-only" out
'

test_expect_success 'setup: a good store' '
	aptix init -q good &&
	cd good &&
	big=$(test_seq 1 300 | aptix hash-object -w --stdin) &&
	small=$(echo small | aptix hash-object -w --stdin) &&
	other=$(echo other | aptix hash-object -w --stdin) &&
	store value objects hex:$big | grep "^01" &&
	store value objects hex:$small | grep "^81" &&
	t1=$(aptix write-turn --conversation c1 --seq 1 --instruction $big \
		--created-at 1700000000000) &&
	s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
	cat >turn2.json <<-EOF &&
	{"conversation": "c1", "seq": 2, "status": "completed",
	 "instruction": "$small", "answer": "$other",
	 "created_at": 1700000060000}
	EOF
	t2=$(aptix write-turn -F turn2.json) &&
	rm turn2.json &&
	s2=$(aptix commit-session -p $s1 --created-at 1700000061000 $t2) &&
	store put refs refs/conversations/c1 $s2 &&
	store put refs HEAD "ref: refs/conversations/c1" &&
	aptix reindex &&
	nowhere=$(echo nowhere | aptix hash-object --stdin)
'

test_expect_success 'a good store is clean' '
	cd good &&
	aptix fsck >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err &&
	aptix fsck --full >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err &&
	aptix fsck --connectivity-only --no-dangling >out 2>err &&
	test_must_be_empty out &&
	test_must_be_empty err &&
	aptix fsck --unreachable >out &&
	test_must_be_empty out &&
	rm -f out err
'

test_expect_success '--verbose says what it checks' '
	cd good &&
	aptix fsck --verbose >out 2>err &&
	test_must_be_empty out &&
	grep "^Checking session $s1$" err &&
	grep "^Checking turn $t2$" err &&
	grep "^Checking blob $big$" err &&
	grep "^Checking refs$" err &&
	grep "^Checking connectivity (7 objects)$" err &&
	grep "^Checking index$" err &&
	rm -f out err
'

test_expect_success 'dangling objects are reported, and are not errors' '
	fresh dangling &&
	t3=$(aptix write-turn --conversation c1 --seq 3 \
		--instruction-text "third" --created-at 1700000120000) &&
	failed=$(aptix commit-session -p $s2 --status failed \
		--created-at 1700000121000 $t3) &&
	lone=$(echo lone | aptix hash-object -w --stdin) &&
	u1=$(aptix write-turn --conversation c2 --seq 1 \
		--instruction $small --created-at 1700000200000) &&
	r1=$(aptix commit-session --created-at 1700000201000 $u1) &&
	u2=$(aptix write-turn --conversation c2 --seq 2 \
		--instruction $small --created-at 1700000260000) &&
	r2=$(aptix commit-session -p $r1 --created-at 1700000261000 $u2) &&
	{
		echo "dangling blob $lone" &&
		echo "dangling session $r2"
	} | sort -k3 >expect &&
	aptix fsck >actual 2>err &&
	test_cmp expect actual &&
	test_must_be_empty err &&
	aptix fsck --no-dangling >actual &&
	test_must_be_empty actual
'

test_expect_success 'a failed turn hanging off its parent is kept, not dangling' '
	cd dangling &&
	aptix fsck >actual &&
	! grep "$failed" actual &&
	echo "failed session $failed" >expect &&
	aptix fsck --failed --no-dangling >actual &&
	test_cmp expect actual &&
	aptix fsck --unreachable >actual &&
	! grep "$failed" actual &&
	! grep "$t3" actual
'

test_expect_success '--unreachable lists every unreachable object' '
	cd dangling &&
	third=$(printf third | aptix hash-object --stdin) &&
	{
		echo "unreachable blob $lone" &&
		echo "unreachable session $r1" &&
		echo "unreachable session $r2" &&
		echo "unreachable turn $u1" &&
		echo "unreachable turn $u2"
	} | sort -k3 >expect &&
	aptix fsck --unreachable >actual &&
	test_cmp expect actual
'

test_expect_success 'a value that fails its checksum (format 6)' '
	fresh flipped-crc &&
	store corrupt $big flip &&
	first=$((0x$(store pieces objects hex:$big | sed -n 1p))) &&
	{
		echo "corrupt object $big: the value in pieces $first-$first of the values table fails its checksum" &&
		echo "lost session $s1: its instruction $big cannot be read"
	} >expect &&
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual &&
	test_must_fail aptix cat-object -p $big 2>err &&
	grep "fails its checksum" err
'

test_expect_success 'a corrupted compressed object' '
	fresh flipped &&
	# the checksum made again: the decoder finds the damage
	store corrupt $big flip sealed &&
	{
		echo "corrupt blob $big: stored data is damaged or truncated" &&
		echo "lost session $s1: its instruction $big cannot be read"
	} >expect &&
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual &&
	aptix fsck --connectivity-only --no-dangling >actual &&
	test_must_be_empty actual
'

test_expect_success 'a truncated object' '
	fresh truncated &&
	# each value has pieces of its own (format 6): a short piece
	# damages that value alone
	late=$(test_seq 1 400 | aptix hash-object -w --stdin) &&
	store get objects hex:$late | grep "^00" &&
	store get objects hex:$small | grep -v "^00" &&
	test $(store pieces objects hex:$late | wc -l) = 1 &&
	store corrupt $late truncate &&
	store corrupt $small truncate &&
	# $late is in pieces (store format 6): its last piece is short,
	# which the store finds before the value is decoded, so fsck
	# reports it in its first pass, over the headers, with the reason
	# the store gives; the walk of the objects goes on past it
	key=$(store pieces objects hex:$late) &&
	{
		echo "corrupt object $late: piece 1 of 1 of the value (values" \
			"table, key $((0x$key))) is missing or of the wrong size" &&
		echo "corrupt blob $small: stored data is damaged or truncated" &&
		echo "lost session $s2: its instruction $small cannot be read"
	} | sort >expect &&
	test_expect_code 1 aptix fsck >actual &&
	sort actual >actual.sorted &&
	test_cmp expect actual.sorted
'

test_expect_success 'a damaged object header' '
	fresh header &&
	store corrupt $t1 header sealed &&
	{
		echo "corrupt object $t1: stored header is damaged" &&
		echo "lost session $s1: its turn $t1 cannot be read"
	} >expect &&
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^dangling blob $big$" actual
'

# A value shorter than 64 bytes stays in its objects record, without the
# checksum of a value in pieces: every read hashes it again, so plain
# fsck and every command see the damage too, not only fsck --full.
test_expect_success 'content that does not match its id' '
	fresh mismatch &&
	store put objects hex:$small hex:$(store value objects hex:$other) &&
	{
		echo "hash mismatch $small" &&
		echo "lost session $s2: its instruction $small cannot be read"
	} >expect &&
	test_expect_code 1 aptix fsck >actual &&
	test_cmp expect actual &&
	test_expect_code 1 aptix fsck --full >actual &&
	test_cmp expect actual &&
	test_must_fail aptix cat-object -p $small >out 2>err &&
	test_must_be_empty out &&
	grep "hash mismatch for object .$small." err
'

test_expect_success 'a flipped bit in a value kept in place is an error, not another object' '
	fresh flipped-in-place &&
	short=$(echo "a short blob, stored raw" | aptix hash-object -w --stdin) &&
	store get objects hex:$short >value &&
	grep "^81" value &&
	# the last byte before the newline: "raw" becomes "rax"
	bad=$(sed "s/770a$/780a/" value) &&
	test "$bad" != "$(cat value)" &&
	store put objects hex:$short hex:$bad &&
	test_must_fail aptix cat-object -p $short >out 2>err &&
	! grep raw out &&
	grep "hash mismatch for object .$short." err &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^hash mismatch $short$" actual
'

test_expect_success 'a turn stored under the id of another' '
	fresh swapped &&
	store put objects hex:$t1 hex:$(store value objects hex:$t2) &&
	echo "hash mismatch $t1" >expect &&
	test_expect_code 1 aptix fsck --full --no-dangling >actual &&
	test_cmp expect actual
'

test_expect_success 'a missing blob' '
	fresh missing-blob &&
	store del objects hex:$small &&
	test_must_fail aptix cat-object -e $small &&
	cat >expect <<-EOF &&
	broken link from    turn $t2
	              to    blob $small
	lost session $s2: its instruction $small cannot be read
	missing blob $small
	EOF
	test_expect_code 1 aptix fsck >actual &&
	test_cmp expect actual
'

test_expect_success 'a missing turn' '
	fresh missing-turn &&
	store del objects hex:$t1 &&
	cat >expect <<-EOF &&
	broken link from session $s1
	              to    turn $t1
	lost session $s1: its turn $t1 cannot be read
	missing turn $t1
	dangling blob $big
	EOF
	test_expect_code 1 aptix fsck >actual &&
	test_cmp expect actual
'

test_expect_success 'a missing parent session' '
	fresh missing-parent &&
	store del objects hex:$s1 &&
	cat >expect <<-EOF &&
	broken link from session $s2
	              to session $s1
	index mismatch $s1: indexed session does not exist
	missing session $s1
	EOF
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual
'

test_expect_success 'a link to an object of the wrong type' '
	fresh wrong-type &&
	aptix cat-object turn $t2 | sed "s/$small/$t1/" >bad-turn &&
	bad=$(aptix hash-object -w -t turn bad-turn) &&
	cat >expect <<-EOF &&
	broken link from    turn $bad
	              to    blob $t1
	wrong type turn $t1: expected blob
	EOF
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual
'

# conn_only DIR [OPTION...]: fsck --connectivity-only in DIR gives expect
# (made there), and exits 1 when it says more than a failed session
conn_only() {
	(
		cd "$1" && shift &&
		if grep -qv "^failed session" expect
		then
			test_expect_code 1 aptix fsck --connectivity-only "$@" >actual
		else
			aptix fsck --connectivity-only "$@" >actual
		fi &&
		test_cmp expect actual
	)
}

test_expect_success '--connectivity-only follows the same links' '
	cat >missing-blob/expect <<-EOF &&
	broken link from    turn $t2
	              to    blob $small
	missing blob $small
	EOF
	conn_only missing-blob &&
	cat >missing-turn/expect <<-EOF &&
	broken link from session $s1
	              to    turn $t1
	missing turn $t1
	dangling blob $big
	EOF
	conn_only missing-turn &&
	cat >missing-parent/expect <<-EOF &&
	broken link from session $s2
	              to session $s1
	missing session $s1
	EOF
	conn_only missing-parent --no-dangling &&
	cat >wrong-type/expect <<-EOF &&
	broken link from    turn $bad
	              to    blob $t1
	wrong type turn $t1: expected blob
	EOF
	conn_only wrong-type --no-dangling &&
	echo "corrupt object $t1: stored header is damaged" >header/expect &&
	conn_only header --no-dangling &&
	echo "failed session $failed" >dangling/expect &&
	conn_only dangling --failed --no-dangling
'

test_expect_success 'a turn or session that does not parse' '
	fresh bad-content &&
	echo "{\"seq\":1}" >not-a-turn &&
	bt=$(store put-object turn not-a-turn) &&
	printf "garbage" >not-a-session &&
	bs=$(store put-object session not-a-session) &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^corrupt turn $bt: turn: field .v. is missing$" actual &&
	grep "^corrupt session $bs: session is not canonical" actual &&
	test_line_count = 2 actual
'

test_expect_success 'a ref to a missing object' '
	fresh bad-ref &&
	store put refs refs/conversations/c9 $nowhere &&
	test_expect_code 1 aptix fsck --no-dangling >out 2>err &&
	echo "error: refs/conversations/c9: invalid target $nowhere" >expect &&
	test_cmp expect err &&
	grep "^index mismatch conversation c9: not in the index" out
'

test_expect_success 'a ref to an object that is not a session' '
	fresh blob-ref &&
	store put refs refs/conversations/c1 $t2 &&
	test_expect_code 1 aptix fsck --no-dangling >out 2>err &&
	echo "error: refs/conversations/c1: $t2 is a turn, not a session" >expect &&
	test_cmp expect err
'

test_expect_success 'a corrupt ref' '
	fresh corrupt-ref &&
	store put refs refs/conversations/c1 garbage &&
	test_expect_code 1 aptix fsck --no-dangling >out 2>err &&
	grep "^error: ref .refs/conversations/c1. is corrupt" err &&
	test_must_be_empty out
'

test_expect_success 'an unborn HEAD is only a notice' '
	fresh unborn &&
	store put refs HEAD "ref: refs/conversations/none" &&
	aptix fsck >out 2>err &&
	echo "notice: HEAD points to an unborn conversation (refs/conversations/none)" >expect &&
	test_cmp expect err &&
	test_must_be_empty out
'

test_expect_success 'sessions reachable only through a deleted ref are dangling' '
	fresh no-ref &&
	store del refs refs/conversations/c1 &&
	aptix reindex -q &&
	echo "dangling session $s2" >expect &&
	aptix fsck >actual 2>err &&
	test_cmp expect actual &&
	grep "^notice: HEAD points to an unborn conversation" err
'

test_expect_success 'what only a reflog reaches is kept, as in git' '
	fresh reflog-only &&
	aptix update-ref -m back refs/conversations/c1 $s1 $s2 &&
	aptix fsck >actual 2>err &&
	test_must_be_empty actual &&
	test_must_be_empty err &&
	aptix fsck --unreachable >actual &&
	test_must_be_empty actual &&
	# the reflog outlives its ref
	aptix update-ref -d refs/conversations/c1 &&
	aptix fsck --unreachable >actual 2>err &&
	test_must_be_empty actual
'

test_expect_success 'a session missing from the index' '
	fresh unindexed &&
	store del-record hex:$s1 &&
	cat >expect <<-EOF &&
	index mismatch $s1: not in the index
	index mismatch conversation c1: record says 2 turns (0 failed), the sessions 1 (0 failed)
	EOF
	test_expect_code 1 aptix fsck >actual &&
	test_cmp expect actual
'

test_expect_success 'a record missing from the timeline, and one the sessions table does not name' '
	fresh layout &&
	loc=$(store get sessions hex:$s1) &&
	case $loc in 04????????????????) ;; *) false ;; esac &&
	store del timeline hex:${loc#04}$s1 &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s1: its record is missing from the timeline$" actual &&
	grep "^index mismatch $s1: index record of $s1 is corrupt" actual &&
	aptix reindex -q &&
	aptix fsck &&
	store del sessions hex:$s1 &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s1: not in the index$" actual &&
	grep "^index mismatch $s1: a timeline record that the sessions table does not name$" actual &&
	aptix reindex -q &&
	aptix fsck &&
	# a record in place, where the store says none is (format 4 kept
	# them there): log --all would not see it
	store put sessions hex:$s1 hex:$(store record hex:$s1) &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s1: a record kept in the sessions table, which the store says holds none$" actual &&
	aptix reindex -q &&
	aptix fsck
'

test_expect_success 'an index record that disagrees with its session' '
	fresh disagree &&
	store put-record hex:$s1 hex:$(store record hex:$s2) &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s1: parent is $s1 in the index, none in the object$" actual &&
	grep "^index mismatch $s1: turn is $t2 in the index, $t1 in the object$" actual &&
	grep "^index mismatch $s1: created_at is 1700000061000 in the index, 1700000001000 in the object$" actual &&
	test_line_count = 3 actual
'

test_expect_success 'a corrupt index record' '
	fresh bad-record &&
	store put-record hex:$s2 hex:01 &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s2: index record of $s2 is corrupt" actual &&
	# a record starting with 0x00 is a pointer into the values table
	store put-record hex:$s2 hex:00 &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s2: store is corrupt: .* malformed pointer" actual
'

test_expect_success 'a conversation record whose counts disagree with the sessions' '
	fresh conv-counts &&
	rec=$(store get conversations c1) &&
	# be32 turns at byte 52: say 3 where the sessions make 2
	bad=$(echo "$rec" | sed "s/^\(.\{104\}\)00000002/\100000003/") &&
	test "$bad" != "$rec" &&
	store put conversations c1 hex:$(store seal-conv hex:$bad) &&
	test_expect_code 1 aptix fsck >actual &&
	echo "index mismatch conversation c1: record says 3 turns (0 failed), the sessions 2 (0 failed)" >expect &&
	test_cmp expect actual &&
	aptix reindex -q &&
	aptix fsck
'

test_expect_success 'fsck --full checks each session'"'"'s chain record' '
	fresh chain-record &&
	rec=$(store record hex:$s2) &&
	case $rec in 06*) ;; *) false ;; esac &&
	# the chain section ends with be32 nchunks (then its first request
	# and the checksum): claim one chunk, in a record that reads
	bad=$(echo "$rec" | sed "s/00000000\(.\{24\}\)\$/00000001\1/") &&
	test "$bad" != "$rec" &&
	store put-record hex:$s2 hex:$(store seal hex:$bad) &&
	aptix fsck &&
	test_expect_code 1 aptix fsck --full >actual &&
	echo "index mismatch $s2: its chain record disagrees with its turn and parent" >expect &&
	test_cmp expect actual &&
	aptix reindex -q &&
	aptix fsck --full
'

test_expect_success 'fsck --full checks each session'"'"'s rolling summary record' '
	fresh summary-record &&
	rec=$(store record hex:$s2) &&
	# the summary line holds the start of the answer, "other"
	bad=$(echo "$rec" | sed "s/6f74686572/6f74686573/") &&
	test "$bad" != "$rec" &&
	store put-record hex:$s2 hex:$(store seal hex:$bad) &&
	aptix fsck &&
	test_expect_code 1 aptix fsck --full >actual &&
	echo "index mismatch $s2: its summary record disagrees with its turn and parent" >expect &&
	test_cmp expect actual &&
	aptix reindex -q &&
	aptix fsck --full
'

# A bit flipped in a record (issue 22): the summary that log shows,
# "small", would read "smell" while fsck --full said clean. The record's
# checksum makes it an error for both.
test_expect_success 'a flipped bit in an index record is an error, not another answer' '
	fresh flipped &&
	rec=$(store record hex:$s2) &&
	bad=$(echo "$rec" | sed "s/736d616c6c/736d656c6c/") &&
	test "$bad" != "$rec" &&
	store put-record hex:$s2 hex:$bad &&
	test_must_fail aptix log >out 2>err &&
	grep "index record of $s2 is corrupt: run .aptix reindex." err &&
	! grep smell out &&
	test_must_fail aptix show --format=%s $s2 >out 2>err &&
	! grep smell out &&
	test_expect_code 1 aptix fsck >actual &&
	grep "^index mismatch $s2: index record of $s2 is corrupt" actual &&
	test_expect_code 1 aptix fsck --full >actual &&
	grep "^index mismatch $s2: index record of $s2 is corrupt" actual &&
	aptix reindex -q &&
	aptix log >out &&
	grep small out &&
	aptix fsck --full
'

test_expect_success 'every bit of a record: each flip is an error, none another answer' '
	fresh flips &&
	rec=$(store record hex:$s2) &&
	aptix log --format="%H %s" >good.log &&
	python3 -c "
import sys
rec = bytes.fromhex(sys.argv[1])
for i in range(0, len(rec) * 8, 37):
    b = bytearray(rec)
    b[i // 8] ^= 1 << (i % 8)
    print(b.hex())
" "$rec" >flips &&
	while read bad
	do
		store put-record hex:$s2 hex:$bad &&
		if aptix log --format="%H %s" >out 2>err
		then
			test_cmp good.log out || return 1
		else
			grep "corrupt" err || return 1
		fi
	done <flips
'

# fsck --full compares the fields that log reads with the objects: a
# record made with another summary (its checksum right) is reported.
test_expect_success 'fsck --full checks the summary of each record against its instruction' '
	fresh summary-field &&
	rec=$(store record hex:$s2) &&
	bad=$(echo "$rec" | sed "s/736d616c6c/736d656c6c/") &&
	store put-record hex:$s2 hex:$(store seal hex:$bad) &&
	aptix log >out &&
	grep smell out &&
	test_expect_code 1 aptix fsck --full >actual &&
	echo "index mismatch $s2: summary is '"'"'smell'"'"' in the index record of $s2, '"'"'small'"'"' from its instruction" >expect &&
	test_cmp expect actual &&
	aptix reindex -q &&
	aptix fsck --full
'

test_expect_success 'a version 1 conversation record is read, and reindex rewrites it' '
	fresh conv-v1 &&
	rec=$(store get conversations c1) &&
	case $rec in 03*) ;; *) false ;; esac &&
	# version 1: no committed/failed counts, newest ids, failure time,
	# usage or checksum
	v1=$(store conv-v1 hex:$rec) &&
	store put conversations c1 hex:$v1 &&
	aptix sessions --all-workspaces --json >out &&
	grep "\"turn_count\": 2," out &&
	grep "\"last_turn_status\": \"completed\"" out &&
	aptix fsck &&
	aptix reindex -q &&
	store get conversations c1 >rec &&
	grep "^03" rec &&
	aptix fsck
'

test_expect_success 'an index record without a session' '
	fresh extra-record &&
	store put-record hex:$nowhere hex:$(store record hex:$s1) &&
	cat >expect <<-EOF &&
	index mismatch $nowhere: indexed session does not exist
	index mismatch conversation c1: record says 2 turns (0 failed), the sessions 3 (0 failed)
	EOF
	test_expect_code 1 aptix fsck >actual &&
	test_cmp expect actual
'

test_expect_success 'a conversation head that disagrees with its ref' '
	fresh head &&
	store put refs refs/conversations/c1 $s1 &&
	echo "index mismatch conversation c1: head is $s2, refs/conversations/c1 is $s1" >expect &&
	test_expect_code 1 aptix fsck --no-dangling >actual &&
	test_cmp expect actual
'

# LMDB's free list is keyed by transaction ids, compared as native
# integers: from txn 256 on, a key's bytes no longer sort as its value
# (0xff 0x00 ... after 0x00 0x01 ...), and a healthy store must still
# be clean, and reindex must still run, at every step across it.
txnid () {
	mdb_stat -e .aptix | sed -n "s/^ *Last transaction ID: //p"
}

test_expect_success 'the free list past 256 transactions is in order' '
	fresh many-txns &&
	i=0 &&
	while test "$(txnid)" -le 272
	do
		i=$((i + 1)) &&
		aptix update-ref refs/conversations/n$i $s2 || return 1
		test "$(txnid)" -lt 248 && continue
		aptix fsck --no-dangling >out 2>err &&
		test_must_be_empty out &&
		test_must_be_empty err &&
		aptix reindex -q --no-compact || return 1
	done
'

# fsck keeps 8 bytes of each id (plumbing/fsck-table.c): the knobs make
# keys of 1 or 2 bytes, which many objects share, and a walk out of order
test_expect_success 'the same reports when ids share their first bytes, or come out of order' '
	rm -rf shared &&
	cp -R dangling shared &&
	cd shared &&
	store del objects hex:$small &&
	store corrupt $big flip sealed &&
	for opts in "" "--unreachable --failed" "--connectivity-only" \
		"--full --unreachable" "--connectivity-only --unreachable"
	do
		test_expect_code 1 aptix fsck $opts >expect 2>expect.err &&
		grep "^broken link" expect &&
		for knobs in "APTIX_TEST_FSCK_KEY_BYTES=1" \
			"APTIX_TEST_FSCK_KEY_BYTES=2" "APTIX_TEST_FSCK_UNSORTED=1" \
			"APTIX_TEST_FSCK_UNSORTED=1 APTIX_TEST_FSCK_KEY_BYTES=1"
		do
			test_expect_code 1 env $knobs aptix fsck $opts \
				>actual 2>actual.err &&
			test_cmp expect actual &&
			test_cmp expect.err actual.err || return 1
		done
	done &&
	test_expect_code 1 aptix fsck --unreachable --failed >actual &&
	grep "^corrupt blob $big" actual &&
	grep "^unreachable session $r2" actual &&
	grep "^unreachable blob $lone" actual &&
	grep "^failed session $failed" actual
'

# --connectivity-only reads the store in its own order (the values in
# the order they were written, aptix_odb_foreach_all()) and checks alone
# what needs a report; APTIX_TEST_FSCK_ID_ORDER makes it walk in id
# order as --full does: every damaged store above reports the same
test_expect_success '--connectivity-only reports the same in the store'"'"'s order' '
	fresh pieces &&
	awk "BEGIN { srand(7); for (i = 0; i < 9000; i++) printf \"%c\", 65 + int(rand() * 26) }" >noise &&
	many=$(aptix hash-object -w noise) &&
	test $(store pieces objects hex:$many | wc -l) -gt 2 &&
	cd .. && cp -R pieces pieces-short && cp -R pieces pieces-flipped &&
	(cd pieces-short && store corrupt $many truncate) &&
	(cd pieces-flipped && store corrupt $many flip) &&
	for d in good pieces pieces-short pieces-flipped flipped-crc flipped \
		truncated header missing-blob missing-turn missing-parent \
		wrong-type dangling bad-content shared
	do
		for opts in "" "--unreachable --failed"
		do
			(
				cd $d &&
				{ aptix fsck --connectivity-only $opts \
					>expect 2>expect.err; echo $? >>expect; } &&
				{ APTIX_TEST_FSCK_ID_ORDER=1 aptix fsck \
					--connectivity-only $opts >actual \
					2>actual.err; echo $? >>actual; } &&
				test_cmp expect actual &&
				test_cmp expect.err actual.err
			) || return 1
		done
	done &&
	grep "^unreachable blob $many" pieces/expect &&
	grep "^corrupt object $many" pieces-short/expect &&
	grep "^corrupt object $many" pieces-flipped/expect
'

test_expect_success 'usage errors' '
	cd good &&
	test_expect_code 129 aptix fsck extra &&
	test_expect_code 129 aptix fsck --no-such-option
'

test_done
