#!/bin/sh

test_description='a damaged data.mdb never kills a command by a signal

liblmdb trusts its file: a truncated data.mdb gave SIGBUS in every
command, fsck included; a damaged page SIGSEGV or an assertion abort.
Each fixed damage below is made on a fresh copy of a good store; every
command then ends with an error or an answer, never by a signal (exit
codes above 128). fsck reports damage of the pages ("corrupt store:"),
reindex refuses to write on them, and salvage copies what is readable
into a new store. The corruption campaign (t/perf/corrupt.py) does
the same with random damage, outside make check.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

if ! test_have_prereq PYTHON3
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='python3 is needed to damage the store'
	test_done
fi

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# fresh <dir>: a copy of the good store in <dir>, and cd there
fresh () {
	cd "$TRASH_DIRECTORY" &&
	rm -rf "$1" salvaged &&
	cp -R good "$1" &&
	cd "$1" || return 1
}

# no_signal <command>...: the command may fail, but not by a signal
no_signal () {
	local rc=0
	"$@" >/dev/null 2>signal.err || rc=$?
	if test $rc -gt 128 || grep -q "Sanitizer\|runtime error" signal.err
	then
		echo "'$*' died with exit code $rc:" >&2
		cat signal.err >&2
		return 1
	fi
}

# every_command: the commands of the campaign, none killed by a signal
every_command () {
	no_signal aptix status &&
	no_signal aptix log --all --oneline &&
	no_signal aptix fsck --full &&
	no_signal aptix reindex &&
	no_signal aptix salvage "$TRASH_DIRECTORY/salvaged"
}

test_expect_success 'setup: a good store' '
	aptix init -q good &&
	(
		cd good &&
		prev= &&
		for i in $(test_seq 1 40)
		do
			test_tick &&
			s=$(make_session c1 "instruction number $i ${prev:+after}" \
				$prev) &&
			prev=$s || return 1
		done &&
		aptix update-ref refs/conversations/c1 $prev &&
		aptix symbolic-ref HEAD refs/conversations/c1 &&
		aptix reindex -q --no-compact &&
		aptix fsck >out &&
		! grep -v "^dangling" out &&
		aptix log --oneline >log &&
		test_line_count = 40 log
	) &&
	test_when_finished "rm -rf salvaged" &&
	pages=$(cd good && store pages) &&
	test "$pages" -gt 10
'

test_expect_success 'salvage of a good store copies everything' '
	fresh s0 &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged 120 objects, 2 refs, 2 reflog entries" out &&
	grep "^indexed 40 sessions" out &&
	! grep skipped out &&
	aptix for-each-ref >expect &&
	aptix log --all >expect.log &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	aptix for-each-ref >actual &&
	test_cmp ../s0/expect actual &&
	aptix log --all >actual.log &&
	test_cmp ../s0/expect.log actual.log &&
	aptix fsck --full >out &&
	! grep -v "^dangling" out
'

test_expect_success 'salvage refuses a directory that holds a store' '
	fresh s1 &&
	aptix init -q "$TRASH_DIRECTORY/salvaged" &&
	test_must_fail aptix salvage "$TRASH_DIRECTORY/salvaged" 2>err &&
	grep "holds a store already" err
'

# blocked_on_fifo <pid> <tenths>: wait until the process is blocked
# opening a FIFO (its /proc/<pid>/wchan says so), at most <tenths> / 10 s
blocked_on_fifo () {
	local i=0
	while test "$(cat /proc/$1/wchan 2>/dev/null)" != wait_for_partner
	do
		i=$((i + 1))
		test $i -lt "$2" || return 1
		sleep 0.1
	done
}

test_lazy_prereq FIFO_WCHAN '
	mkfifo wchan.fifo &&
	{ cat wchan.fifo >/dev/null & } &&
	{ blocked_on_fifo $! 50; ok=$?; } &&
	echo >wchan.fifo &&
	test $ok = 0
'

test_expect_success FIFO_WCHAN 'a salvage killed midway leaves no store; a rerun works' '
	fresh s2 &&
	# salvage blocks opening the config (a FIFO), after the objects
	rm -f .aptix/config &&
	mkfifo .aptix/config &&
	{ aptix salvage "$TRASH_DIRECTORY/salvaged" >out 2>err & } &&
	pid=$! &&
	{ blocked_on_fifo $pid 200; blocked=$?; } &&
	kill -9 $pid &&
	{ wait $pid; code=$?; } &&
	test $code = 137 &&
	test $blocked = 0 &&
	! test -e "$TRASH_DIRECTORY/salvaged/.aptix" &&
	rm .aptix/config &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged 120 objects, 2 refs, 2 reflog entries" out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	aptix fsck --full >out &&
	! grep -v "^dangling" out &&
	aptix log --oneline >log &&
	test_line_count = 40 log
'

test_expect_success 'a salvage that fails leaves no store' '
	fresh s3 &&
	rm -f .aptix/config &&
	mkdir .aptix/config &&
	test_must_fail aptix salvage "$TRASH_DIRECTORY/salvaged" 2>err &&
	! test -e "$TRASH_DIRECTORY/salvaged/.aptix" &&
	ls -a "$TRASH_DIRECTORY/salvaged" >left &&
	! grep salvage- left
'

test_expect_success 'a truncated data.mdb: errors, no SIGBUS; salvage works' '
	fresh trunc &&
	# cut in the middle of a page, past the first leaf of objects (keys
	# of 32 bytes) and at least half the file, so that salvage has
	# something to find whatever the pages are laid out
	size=$(python3 -c "import struct, sys
d = open(sys.argv[1], \"rb\").read()
for n in range(2, len(d) // 4096):
	flags, lower = struct.unpack(\"<HH\", d[n * 4096 + 10:n * 4096 + 14])
	if flags != 2 or lower <= 16:
		continue
	off = n * 4096 + struct.unpack(\"<H\", d[n * 4096 + 16:n * 4096 + 18])[0]
	if struct.unpack(\"<H\", d[off + 6:off + 8])[0] == 32:
		print(max(n * 4096 + 6144, len(d) // 2))
		break" .aptix/data.mdb) &&
	test -n "$size" &&
	truncate -s $size .aptix/data.mdb &&
	cp .aptix/data.mdb before &&
	for cmd in status "log --all" "fsck --full" reindex
	do
		test_expect_code 128 aptix $cmd >out 2>err &&
		grep "store is corrupt: .*it was truncated" err || return 1
	done &&
	cmp before .aptix/data.mdb &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged [1-9][0-9]* objects" out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	no_signal aptix fsck --full
'

test_expect_success 'a meta page with a damaged page size: errors, no SIGBUS' '
	# LMDB takes the newer meta page and maps the file with its page
	# size unchecked: meta 1 made newer, its page size 1052672
	fresh metapsize &&
	python3 -c "
import struct
with open(\".aptix/data.mdb\", \"r+b\") as f:
    f.seek(4096 + 16 + 24)
    f.write(struct.pack(\"<I\", 1052672))
    f.seek(4096 + 16 + 24 + 2 * 48 + 8)
    f.write(struct.pack(\"<Q\", 1 << 40))
" &&
	cp .aptix/data.mdb before &&
	for cmd in status "log --all" "fsck --full" reindex
	do
		test_expect_code 128 aptix $cmd >out 2>err &&
		grep "store is corrupt: meta page 1 .* page size of 1052672" \
			err || return 1
	done &&
	cmp before .aptix/data.mdb &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged [1-9][0-9]* objects" out
'

test_expect_success 'an empty data.mdb is corrupt, and is left empty' '
	fresh empty &&
	: >.aptix/data.mdb &&
	test_expect_code 128 aptix status 2>err &&
	grep "data.mdb is empty" err &&
	test_must_be_empty .aptix/data.mdb
'

test_expect_success 'pages zeroed in turn: no command dies by a signal' '
	fresh z &&
	pages=$(store pages) &&
	# every fourth page: all kinds of pages, in a few seconds
	for p in $(test_seq 2 $((pages - 1)) | awk "NR % 4 == 1")
	do
		fresh z &&
		store page $p zero &&
		every_command || { echo "page $p" >&2; return 1; }
	done
'

test_expect_success 'noise on the root of each table: no signal' '
	for t in objects refs reflog sessions children timeline conversations \
		values
	do
		fresh noise &&
		root=$(store root $t) &&
		store page $root noise &&
		every_command || { echo "table $t, page $root" >&2; return 1; }
	done
'

test_expect_success 'fsck reports a damaged page; reindex leaves it alone' '
	fresh hdr &&
	root=$(store root objects) &&
	store page $root header &&
	cp .aptix/data.mdb before &&
	test_expect_code 1 aptix fsck >out &&
	grep "^corrupt store: objects: page $root says it is page" out &&
	test_must_fail aptix reindex 2>err &&
	grep "store is corrupt: objects: page $root" err &&
	grep "it is not rewritten" err &&
	cmp before .aptix/data.mdb
'

test_expect_success 'salvage of a store with a damaged sessions page' '
	fresh lost &&
	root=$(store root sessions) &&
	store page $root zero &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged 120 objects" out &&
	grep "^indexed 40 sessions" out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	aptix log --oneline >log &&
	test_line_count = 40 log &&
	aptix fsck --full >out &&
	! grep -v "^dangling" out
'

# Store format 4: the records of the objects table of 64 bytes or more
# point into the table values, where the value is in pieces.
test_expect_success 'salvage of a store with a damaged objects page' '
	fresh lost-objects &&
	store get objects hex:$(aptix rev-parse HEAD) | grep "^00" &&
	# the root, a branch page: the leaves are found as orphans, and
	# their pointers are resolved through the values table
	root=$(store root objects) &&
	store page $root zero &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged 120 objects" out &&
	grep "^skipped 1 damaged page, 0 damaged records" out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	aptix log --oneline >log &&
	test_line_count = 40 log &&
	aptix fsck --full >out &&
	! grep -v "^dangling" out
'

test_expect_success 'salvage puts values together from pieces on orphan pages' '
	fresh lost-values &&
	# the roots (branch pages) of the values table from both meta
	# pages: no tree reaches a piece
	root=$(store root values) &&
	older=$(store root values older) &&
	store page $root zero &&
	store page $older zero &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	grep "^salvaged 120 objects" out &&
	grep "^indexed 40 sessions" out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	aptix fsck --full >out &&
	! grep -v "^dangling" out
'

test_expect_success 'salvage skips the objects whose piece was lost' '
	fresh lost-piece &&
	turn=$(session_field HEAD turn) &&
	store pieces objects hex:$turn >pieces &&
	test_line_count = 1 pieces &&
	# the values of a write share pieces (format 5): every object with
	# bytes in the lost piece is lost with it
	store sharing hex:$(cat pieces) >sharing &&
	grep -x $turn sharing &&
	lost=$(wc -l <sharing) &&
	aptix rev-parse HEAD >head &&
	store del values hex:$(cat pieces) &&
	aptix salvage "$TRASH_DIRECTORY/salvaged" >out &&
	cp out out.salvage &&
	grep "^salvaged $((120 - lost)) objects" out &&
	grep "^skipped 0 damaged pages, $lost damaged records\{0,1\}, " out &&
	cd "$TRASH_DIRECTORY/salvaged" &&
	while read id
	do
		test_must_fail aptix cat-object -e $id || return 1
	done <"$TRASH_DIRECTORY/lost-piece/sharing" &&
	if grep -x "$(cat "$TRASH_DIRECTORY/lost-piece/head")" \
		"$TRASH_DIRECTORY/lost-piece/sharing"
	then
		# the head session went too: so did its ref
		grep "1 ref whose target was lost" \
			"$TRASH_DIRECTORY/lost-piece/out.salvage" &&
		aptix fsck
	else
		test_expect_code 1 aptix fsck >out &&
		grep "^missing turn $turn$" out
	fi
'

test_done
