#!/bin/sh

test_description='aptix reindex: rebuild the session index

The index is damaged behind aptix'"'"'s back (t/lib-store.py); fsck sees
it, reindex repairs it and fsck is clean again.'

. "$(dirname "$0")"/test-lib.sh

test_lazy_prereq STORE_EDIT '
	python3 -c "import sys" &&
	command -v mdb_dump && command -v mdb_load
'

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# fsck_clean: fsck finds nothing at all
fsck_clean () {
	aptix fsck >fsck.out 2>fsck.err &&
	test_must_be_empty fsck.out &&
	test_must_be_empty fsck.err
}

test_expect_success '-h shows the usage' '
	test_expect_code 129 aptix reindex -h >out &&
	grep "^usage: aptix reindex" out
'

test_expect_success 'an empty store' '
	aptix init -q empty &&
	echo "reindexed 0 sessions" >expect &&
	aptix -C empty reindex >actual &&
	test_cmp expect actual
'

test_expect_success 'setup' '
	aptix init -q &&
	t1=$(aptix write-turn --conversation c1 --seq 1 \
		--instruction-text "first" --created-at 1700000000000) &&
	s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
	t2=$(aptix write-turn --conversation c1 --seq 2 \
		--instruction-text "second" --created-at 1700000060000) &&
	s2=$(aptix commit-session -p $s1 --created-at 1700000061000 $t2) &&
	t3=$(aptix write-turn --conversation c2 --seq 1 \
		--instruction-text "other" --created-at 1700000120000) &&
	s3=$(aptix commit-session --title "Other" --created-at 1700000121000 $t3)
'

test_expect_success 'reindex counts the sessions; -q is quiet' '
	echo "reindexed 3 sessions" >expect &&
	aptix reindex >actual &&
	test_cmp expect actual &&
	aptix reindex -q >actual &&
	test_must_be_empty actual &&
	aptix reindex --quiet >actual &&
	test_must_be_empty actual
'

test_expect_success STORE_EDIT 'refs set behind the index: reindex follows them' '
	store put refs refs/conversations/c1 $s2 &&
	store put refs refs/conversations/c2 $s3 &&
	store put refs HEAD "ref: refs/conversations/c1" &&
	test_expect_code 1 aptix fsck >out &&
	grep "^index mismatch conversation c1: no head" out &&
	grep "^index mismatch conversation c2: no head" out &&
	aptix reindex -q &&
	fsck_clean
'

test_expect_success STORE_EDIT 'a deleted session record' '
	store del-record hex:$s1 &&
	test_expect_code 1 aptix fsck >out &&
	cat >expect <<-EOF &&
	index mismatch $s1: not in the index
	index mismatch conversation c1: record says 2 turns (0 failed), the sessions 1 (0 failed)
	EOF
	test_cmp expect out &&
	echo "reindexed 3 sessions" >expect &&
	aptix reindex >actual &&
	test_cmp expect actual &&
	fsck_clean
'

test_expect_success STORE_EDIT 'a corrupt session record' '
	store put-record hex:$s2 hex:0102 &&
	test_expect_code 1 aptix fsck >out &&
	grep "^index mismatch $s2: index record of $s2 is corrupt" out &&
	aptix reindex -q &&
	fsck_clean
'

test_expect_success STORE_EDIT 'a record that disagrees with its session' '
	store put-record hex:$s3 hex:$(store record hex:$s2) &&
	test_expect_code 1 aptix fsck >out &&
	grep "^index mismatch $s3: turn is $t2 in the index, $t3 in the object$" out &&
	grep "^index mismatch $s3: conversation is c1 in the index, c2 in the object$" out &&
	aptix reindex -q &&
	fsck_clean
'

test_expect_success STORE_EDIT 'a record of a session that does not exist' '
	nowhere=$(echo nowhere | aptix hash-object --stdin) &&
	store put-record hex:$nowhere hex:$(store record hex:$s1) &&
	test_expect_code 1 aptix fsck >out &&
	cat >expect <<-EOF &&
	index mismatch $nowhere: indexed session does not exist
	index mismatch conversation c1: record says 2 turns (0 failed), the sessions 3 (0 failed)
	EOF
	test_cmp expect out &&
	aptix reindex -q &&
	fsck_clean
'

test_expect_success STORE_EDIT 'damaged conversation and children records' '
	store del conversations c2 &&
	store put conversations c1 garbage &&
	store put children hex:$s3$s1 "" &&
	test_expect_code 1 aptix fsck >out &&
	aptix reindex -q &&
	fsck_clean &&
	store keys children >actual &&
	# format 5: the time of the parent, the parent, the child
	loc=$(store get sessions hex:$s1) &&
	echo ${loc#04}$s1$s2 >expect &&
	test_cmp expect actual
'

test_expect_success STORE_EDIT 'the whole index lost' '
	for k in $(store keys sessions)
	do
		store del-record hex:$k || return 1
	done &&
	store del conversations c1 &&
	store del conversations c2 &&
	for k in $(store keys recency)
	do
		store del recency hex:$k || return 1
	done &&
	store keys sessions >keys &&
	store keys timeline >>keys &&
	store keys recency >>keys &&
	test_must_be_empty keys &&
	test_expect_code 1 aptix fsck >out &&
	test_line_count = 5 out &&
	echo "reindexed 3 sessions" >expect &&
	aptix reindex >actual &&
	test_cmp expect actual &&
	fsck_clean
'

test_expect_success STORE_EDIT 'reindex with a missing blob and a missing turn' '
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	first=$(printf first | aptix hash-object --stdin) &&
	store del objects hex:$first &&
	store del objects hex:$t3 &&
	store del-record hex:$s2 &&
	echo "reindexed 3 sessions" >expect &&
	aptix reindex >actual &&
	test_cmp expect actual &&
	test_expect_code 1 aptix fsck --no-dangling >out &&
	! grep "index mismatch" out &&
	grep "^missing blob $first$" out &&
	grep "^missing turn $t3$" out
'

test_expect_success STORE_EDIT 'reindex with a missing parent and clocks gone wrong' '
	p1=$(aptix write-turn --conversation c3 --seq 1 \
		--instruction-text p --created-at 1000) &&
	P=$(aptix commit-session --created-at 1000 $p1) &&
	a1=$(aptix write-turn --conversation c3 --seq 2 \
		--instruction-text a --created-at 2000) &&
	A=$(aptix commit-session -p $P --created-at 2000 $a1) &&
	b1=$(aptix write-turn --conversation c3 --seq 3 \
		--instruction-text b --created-at 500) &&
	B=$(aptix commit-session -p $A --created-at 500 $b1) &&
	store del objects hex:$P &&
	aptix reindex -q &&
	test_expect_code 1 aptix fsck --no-dangling >out &&
	cat >expect <<-EOF &&
	broken link from session $A
	              to session $P
	index mismatch $A: parent is none in the index, $P in the object
	missing session $P
	EOF
	test_cmp expect out
'

test_lazy_prereq MDB_STAT 'command -v mdb_stat'

# free_pages <dir>: pages of data.mdb that hold nothing
free_pages () {
	mdb_stat -ef "$1" | sed -n "s/^  Free pages: //p"
}

test_expect_success 'setup: a generated history' '
	sh "$TEST_DIRECTORY/perf/build-store.sh" 10 1500 big >/dev/null &&
	(
		cd big &&
		aptix log --all --format=%H | sort >../big-expect &&
		aptix log --all -S lexer --format=%H | sort >../big-lexer &&
		test_line_count = 1500 ../big-expect &&
		test_line_count -gt 10 ../big-lexer
	)
'

test_expect_success MDB_STAT 'reindex gives data.mdb back the old index'"'"'s pages' '
	cp -R big compacted &&
	aptix -C compacted reindex -q &&
	test "$(free_pages compacted/.aptix)" = 0 &&
	test_path_is_missing compacted/.aptix/compact.tmp &&
	aptix -C compacted reindex -q --no-compact &&
	test "$(free_pages compacted/.aptix)" -gt 0 &&
	(cd compacted && fsck_clean)
'

test_expect_success 'a store reindex cannot compact is reindexed, with a warning' '
	cp -R big linked &&
	ln linked/.aptix/data.mdb linked-data.mdb &&
	aptix -C linked reindex >out 2>err &&
	echo "reindexed 1500 sessions" >expect &&
	test_cmp expect out &&
	grep "^warning: data.mdb keeps the pages the old index held" err &&
	grep "hard links" err &&
	(cd linked && fsck_clean)
'

# reindex writes in batches, each a commit, under a mark (meta
# "reindex"): a kill leaves the old index, or one marked incomplete
# that every command but reindex refuses, and reindex makes whole
test_expect_success 'reindex killed at any moment leaves a usable store' '
	cp -R big killed &&
	t0=$(date +%s%N) &&
	aptix -C killed reindex -q &&
	ms=$(( ($(date +%s%N) - t0) / 1000000 )) &&
	kills=0 && step=0 && halves=0 &&
	while test $step -le 12
	do
		APTIX_TEST_REINDEX_BATCH=64 aptix -C killed reindex -q &
		pid=$! &&
		sleep "$(awk "BEGIN { print $ms * $step / 10 / 1000 }")" &&
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		test $? = 137 && kills=$((kills + 1))
		if ! aptix -C killed log -n 1 >/dev/null 2>err
		then
			grep "index is incomplete" err &&
			halves=$((halves + 1)) &&
			aptix -C killed reindex -q || return 1
		fi
		(
			cd killed &&
			fsck_clean &&
			aptix log --all --format=%H | sort >got &&
			test_cmp ../big-expect got &&
			aptix log --all -S lexer --format=%H | sort >got &&
			test_cmp ../big-lexer got
		) || return 1
		step=$((step + 1))
	done &&
	echo "# $kills of 13 reindexes killed, $halves midway" &&
	test $kills -gt 3
'

# table_values <dir>: every table the rebuild writes, as what it says
# (values put together from their pieces, the search index whatever
# its blocks: they depend on the writes that made them)
table_values () {
	(
		cd "$1" &&
		for t in sessions timeline children conversations recency \
			imports
		do
			echo "$t" && store values $t || return 1
		done &&
		store search-postings
	)
}

test_expect_success STORE_EDIT 'reindex in many writes makes the index one write makes' '
	cp -R big one &&
	cp -R big many &&
	APTIX_TEST_REINDEX_BATCH=1000000 aptix -C one reindex -q &&
	APTIX_TEST_REINDEX_BATCH=3 aptix -C many reindex -q &&
	table_values one >one.tables &&
	table_values many >many.tables &&
	test_line_count -gt 9000 one.tables &&
	test_cmp one.tables many.tables
'

# reindex_slowly <dir>: reindex <dir> in the background, a commit a
# session (a commit a key while it clears the old records); $pid is it
reindex_slowly () {
	APTIX_TEST_REINDEX_BATCH=1 aptix -C "$1" reindex -q &
	pid=$!
}

test_expect_success STORE_EDIT 'a reindex killed midway: commands say so, reindex makes it whole' '
	cp -R big half &&
	conv=$(cd half && aptix conversation list --all-workspaces --json |
	       sed -n "s/.*\"id\": *\"\([^\"]*\)\".*/\1/p" | head -n 1) &&
	test -n "$conv" &&
	aptix -C half conversation rename "$conv" "Kept through a kill" &&
	aptix -C half conversation archive "$conv" &&
	aptix -C half reindex -q &&
	table_values half >expect &&
	aptix -C half log --all --format=%H | sort >expect-log &&
	title=$(printf "Kept through a kill" | od -An -tx1 | tr -d " \n") &&
	reindex_slowly half &&
	test_when_finished "kill -9 $pid 2>/dev/null; true" &&
	# killed once the old records are gone and some sessions written
	# again: the conversation'"'"'s record is back, its title not yet
	i=0 &&
	until test "$(cd half && store keys timeline | wc -l)" -gt 20 &&
	      ! (cd half && store value conversations "$conv") | grep -q "$title"
	do
		test $i -lt 600 && sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	kill -9 $pid &&
	{ wait $pid; test $? = 137; } &&
	test_must_fail aptix -C half log --all >out 2>err &&
	test_must_be_empty out &&
	grep "^fatal: the index is incomplete: an .aptix reindex. is running or was interrupted; run .aptix reindex.$" err &&
	test_must_fail aptix -C half conversation rename "$conv" x 2>err &&
	grep "index is incomplete" err &&
	aptix -C half reindex -q &&
	table_values half >actual &&
	test_cmp expect actual &&
	(
		cd half &&
		fsck_clean &&
		aptix log --all --format=%H | sort >got &&
		test_cmp ../expect-log got &&
		aptix conversation list --all-workspaces --archived >list &&
		grep "Kept through a kill" list
	)
'

test_lazy_prereq STRACE_INJECT '
	strace -f -o /dev/null -e trace=rename \
		-e inject=rename:delay_enter=1000 true
'

# compact_slowly <dir>: reindex <dir> in the background, each rename
# held for 3 s by strace: the compacted copy waits beside data.mdb,
# with the writer's lock held, for that long; $pid is the reindex
# (LeakSanitizer cannot run under ptrace: an ASan build leaves it out)
compact_slowly () {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -o /dev/null -e trace=rename,renameat,renameat2 \
		-e inject=rename,renameat,renameat2:delay_enter=3000000 \
		aptix -C "$1" reindex -q >reindex.out 2>reindex.err &
	pid=$!
}

# A command that opens the store while another compacts it waits for
# the writer's lock, which the compaction holds until data.mdb is the
# new file: its write must not go to the old one, which is gone (the
# store opens the new file and writes there: t8105).
test_expect_success STRACE_INJECT 'a write waiting while reindex compacts is not lost' '
	cp -R big racing &&
	compact_slowly racing &&
	test_when_finished "kill $pid 2>/dev/null; true" &&
	i=0 &&
	while test_path_is_missing racing/.aptix/compact.tmp/data.mdb \
		2>/dev/null && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	test_path_is_file racing/.aptix/compact.tmp/data.mdb &&
	{
		echo "written during the compaction" |
		aptix -C racing hash-object -w --stdin >id 2>err
		code=$?
	} &&
	wait $pid &&
	test_path_is_missing racing/.aptix/compact.tmp/data.mdb &&
	cat err &&
	test $code = 0 &&
	aptix -C racing cat-object -e "$(cat id)" &&
	aptix -C racing fsck >/dev/null
'

# wait_for_copy <dir>: until the compaction's copy is in place
wait_for_copy () {
	i=0 &&
	while test_path_is_missing "$1"/.aptix/compact.tmp/data.mdb \
		2>/dev/null && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	test_path_is_file "$1"/.aptix/compact.tmp/data.mdb
}

test_expect_success STRACE_INJECT 'the copy of a running compaction stays while others open the store' '
	cp -R big running &&
	compact_slowly running &&
	test_when_finished "kill $pid 2>/dev/null; true" &&
	wait_for_copy running &&
	# one quick command: the copy waits 3 s for its rename
	aptix -C running log --all -n 1 --format=%H >/dev/null &&
	test_path_is_file running/.aptix/compact.tmp/data.mdb &&
	wait $pid &&
	test_must_be_empty reindex.err &&
	test_path_is_missing running/.aptix/compact.tmp
'

test_expect_success STRACE_INJECT 'the copy of a compaction killed midway goes at the next open' '
	cp -R big dead &&
	compact_slowly dead &&
	test_when_finished "kill $pid 2>/dev/null; true" &&
	wait_for_copy dead &&
	# the reindex under strace: killed where it waits to rename its copy
	kill -9 $(ps -o pid= --ppid $pid) &&
	{ wait $pid || :; } &&
	test_path_is_file dead/.aptix/compact.tmp/data.mdb &&
	(
		cd dead &&
		aptix log --all --format=%H | sort >got &&
		test_cmp ../big-expect got &&
		test_path_is_missing .aptix/compact.tmp &&
		fsck_clean
	)
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix reindex extra &&
	test_expect_code 129 aptix reindex --no-such-option
'

# A turn that claimed its conversation before a reindex could not
# commit its answer while the reindex writes (a write fails then): the
# reindex refuses while a turn runs, and takes its mark back.
test_expect_success PYTHON3 'reindex refuses while a turn runs; the turn commits' '
	. "$TEST_DIRECTORY/lib-standin.sh" &&
	start_standin &&
	test_when_finished stop_standin &&
	mkdir turning &&
	aptix -C turning init -q &&
	aptix -C turning continue -q --no-rag --no-stream -m "first" >/dev/null &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":4}" &&
	{ aptix -C turning continue --no-rag --no-stream -m "paid for" \
		>bg.out 2>&1 & } &&
	pid=$! &&
	test_when_finished "kill $pid 2>/dev/null; true" &&
	wait_for_requests $((n + 1)) &&
	test_must_fail aptix -C turning reindex 2>err &&
	grep "a turn is running in conversation" err &&
	aptix -C turning log -n 1 --format=%s >out &&
	echo first >expect &&
	test_cmp expect out &&
	wait $pid &&
	aptix -C turning log -n 1 --format=%s >out &&
	echo "paid for" >expect &&
	test_cmp expect out &&
	aptix -C turning reindex -q &&
	aptix -C turning log --format=%s >out &&
	printf "paid for\nfirst\n" >expect &&
	test_cmp expect out
'

test_done
