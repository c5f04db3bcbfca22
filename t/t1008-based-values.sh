#!/bin/sh
test_description='based values: objects stored deflated against a base

A turn, its session, its raw request and response and each new version
of an active file are stored deflated against their counterpart in the
parent turn (objects-format.md, "Based values", store format 3). They
read back byte for byte; a purge of a base rewrites what was based on
it; salvage copies them; fsck --full checks them.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# based_on <store>: "<id> <base>" for each based value of the store
based_on () {
	python3 "$TEST_DIRECTORY/lib-objects.py" "$1" | python3 -c '
import sys
for line in sys.stdin:
    k, v = line.split()
    v = bytes.fromhex(v)
    if v[0] & 0x20:
        i = 1
        while v[i] & 0x80:
            i += 1
        print(k, v[i + 1:i + 33].hex())
'
}

test_expect_success 'setup: four turns, each editing one line of a file' '
	start_standin &&
	mkdir ws &&
	(
		cd ws &&
		aptix init -q &&
		for n in 1 2 3 4
		do
			python3 -c "import sys
n = int(sys.argv[1])
for i in range(80):
    print(\"int parse_%d(void) { return %d; }\" % (i, n if i == 40 else i))
" $n >src.c &&
			cp src.c ../src.c.$n &&
			aptix continue -q --no-stream --file src.c \
				-m "turn $n: change line 40" >/dev/null || return 1
		done &&
		aptix log --format=%H >../heads &&
		test_line_count = 4 ../heads
	)
'

# file_blob <n>: the id of the content of src.c kept by turn n (1: oldest)
file_blob () {
	s=$(sed -n "$((5 - $1))p" heads) &&
	t=$(aptix -C ws cat-object session $s | json_field .turn) &&
	aptix -C ws cat-object turn $t | json_field ".files[0].content"
}

test_expect_success MDB_DUMP 'later turns are stored against the first' '
	store=$(aptix -C ws rev-parse --aptix-dir) &&
	based_on "$store" >based &&
	v1=$(file_blob 1) && v3=$(file_blob 3) &&
	grep "^$v3 $v1\$" based &&
	# turns 2-4 each: turn, session, file, request, response at least
	test $(wc -l <based) -ge 12 &&
	mdb_dump -s meta "$store" >meta &&
	grep -x " 3[3-9]" meta
'

test_expect_success 'they read back byte for byte; fsck --full agrees' '
	for n in 1 2 3 4
	do
		aptix -C ws cat-object blob $(file_blob $n) >got.$n &&
		test_cmp src.c.$n got.$n || return 1
	done &&
	aptix -C ws cat-object --batch-check --batch-all-objects >all &&
	aptix -C ws cat-object --batch --batch-all-objects >/dev/null &&
	aptix -C ws fsck --full
'

test_expect_success MDB_DUMP 'a purged base: what was based on it is rewritten' '
	v1=$(file_blob 1) &&
	aptix -C ws purge --force --reason "test" $v1 >out 2>err &&
	test_must_fail aptix -C ws cat-object -e $v1 &&
	store=$(aptix -C ws rev-parse --aptix-dir) &&
	based_on "$store" >based &&
	! grep " $v1\$" based &&
	for n in 2 3 4
	do
		aptix -C ws cat-object blob $(file_blob $n) >got.$n &&
		test_cmp src.c.$n got.$n || return 1
	done &&
	aptix -C ws fsck --full
'

test_expect_success 'salvage copies based values and what was purged' '
	aptix -C ws cat-object --batch-check --batch-all-objects >before &&
	aptix -C ws salvage ../saved >out 2>&1 &&
	aptix -C saved cat-object --batch-check --batch-all-objects >after &&
	test_cmp before after &&
	aptix -C saved fsck --full
'

test_done
