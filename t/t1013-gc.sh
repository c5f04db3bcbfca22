#!/bin/sh
test_description='aptix gc: deletes only what nothing reaches

gc deletes exactly what fsck calls unreachable (the library'"'"'s
reachability: refs, reflogs, claims of running turns, failed sessions,
a grace period), keeps an unreachable object a kept one is stored
against, expires reflog entries only when told, and compacts the store
so that data.mdb shrinks and no deleted byte stays in it. A turn that
runs while gc does survives it.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# ids <file>: the ids of fsck --unreachable output, sorted
ids () {
	awk '{ print $3 }' "$1" | sort
}

# pruned <file>: the ids gc --dry-run lists, sorted
pruned () {
	sed -n "s/^prune [a-z_]* \([0-9a-f]*\) [0-9]*$/\1/p" "$1" | sort
}

# in_file <text> <file>: the bytes of text are somewhere in file
in_file () {
	python3 -c 'import sys
sys.exit(0 if sys.argv[1].encode() in open(sys.argv[2], "rb").read() else 1)' "$1" "$2"
}

# start_turns <n>: n turns one after the other in the background, the
# pid of the loop in $pid
start_turns () {
	(
		for i in $(test_seq 1 "$1")
		do
			aptix continue -q --no-stream -m "turn $i of the race" \
				>/dev/null || exit 1
		done
	) &
	pid=$!
}

test_expect_success '-h shows the usage' '
	test_expect_code 129 aptix gc -h >out &&
	grep "^usage: aptix gc" out &&
	grep -e "--dry-run" out &&
	grep -e "--reflog-expire" out
'

test_expect_success 'setup: history, garbage, a failed turn, a young orphan' '
	aptix init -q s &&
	cd s &&
	big=$(test_seq 1 300 | aptix hash-object -w --stdin) &&
	t1=$(aptix write-turn --conversation c1 --seq 1 --instruction $big \
		--created-at 1700000000000) &&
	s1=$(aptix commit-session --created-at 1700000001000 $t1) &&
	aptix update-ref refs/conversations/c1 $s1 &&
	t2=$(aptix write-turn --conversation c1 --seq 2 \
		--instruction-text "failed turn" --created-at 1700000060000) &&
	failed=$(aptix commit-session -p $s1 --status failed \
		--created-at 1700000061000 $t2) &&
	# garbage: stored raw (small, incompressible-looking), so its
	# bytes are plain in data.mdb
	garbage=$(printf "gc-garbage-Zq8xW" | aptix hash-object -w --stdin) &&
	u1=$(aptix write-turn --conversation c2 --seq 1 \
		--instruction-text "orphan-old-Kp3v" --created-at 1700000200000) &&
	o1=$(aptix commit-session --created-at 1700000201000 $u1) &&
	now=$(($(date +%s) * 1000)) &&
	u2=$(aptix write-turn --conversation c3 --seq 1 \
		--instruction-text "orphan-young" --created-at $now) &&
	o2=$(aptix commit-session --created-at $now $u2) &&
	aptix fsck --unreachable >unreachable &&
	grep "$garbage" unreachable &&
	grep "$o1" unreachable &&
	grep "$o2" unreachable &&
	! grep "$failed" unreachable &&
	in_file gc-garbage-Zq8xW .aptix/data.mdb
'

test_expect_success '--dry-run lists what would go, with sizes, and changes nothing' '
	cd s &&
	aptix cat-object --batch-check --batch-all-objects >before &&
	cp .aptix/data.mdb data.before &&
	aptix gc --dry-run >out 2>err &&
	grep "^prune blob $garbage [0-9][0-9]*$" out &&
	grep "^prune session $o1 [0-9]" out &&
	grep "^prune turn $u1 [0-9]" out &&
	# young: the grace period (gc.prune-expire, two weeks) keeps it
	! grep "$o2" out &&
	! grep "$failed" out &&
	! grep "$s1" out &&
	grep "^would prune 4 of" err &&
	aptix cat-object --batch-check --batch-all-objects >after &&
	test_cmp before after &&
	cmp .aptix/data.mdb data.before
'

test_expect_success 'gc and fsck agree: --prune=now lists what fsck calls unreachable' '
	cd s &&
	aptix gc --dry-run --prune=now >out &&
	pruned out >gc.ids &&
	ids unreachable >fsck.ids &&
	test_cmp fsck.ids gc.ids &&
	# fsck numbers objects by the first bytes of their ids
	# (plumbing/fsck-table.c): with keys that many share, or a walk
	# out of order, it still calls unreachable what gc prunes
	for knobs in APTIX_TEST_FSCK_KEY_BYTES=1 APTIX_TEST_FSCK_UNSORTED=1
	do
		env $knobs aptix fsck --unreachable >unreachable.k &&
		ids unreachable.k >fsck.ids &&
		test_cmp fsck.ids gc.ids || return 1
	done
'

test_expect_success '--json: the summary and the items' '
	cd s &&
	aptix gc --dry-run --json >out &&
	test "$(json_field .dry_run <out)" = true &&
	test "$(json_field .pruned <out)" = 4 &&
	test "$(json_field .items[0].kind <out)" = object &&
	python3 -c "import json,sys
j = json.load(open(\"out\"))
assert sum(i[\"size\"] for i in j[\"items\"]) == j[\"pruned_bytes\"] > 0
assert j[\"objects\"] == j[\"reachable\"] + j[\"pruned\"]"
'

test_expect_success 'gc deletes them, compacts, and fsck is clean after' '
	cd s &&
	size_before=$(wc -c <.aptix/data.mdb) &&
	aptix gc >out 2>err &&
	test_must_be_empty out &&
	grep "^pruned 4 of" err &&
	size_after=$(wc -c <.aptix/data.mdb) &&
	test $size_after -lt $size_before &&
	! in_file gc-garbage-Zq8xW .aptix/data.mdb &&
	test_must_fail aptix cat-object -e $garbage &&
	aptix cat-object -e $o2 &&
	aptix cat-object -e $failed &&
	aptix fsck >out 2>err &&
	! grep -v "^notice: HEAD points to an unborn" err &&
	echo "dangling session $o2" >expect &&
	test_cmp expect out &&
	aptix log --all --oneline >log &&
	! grep orphan-old log
'

test_expect_success 'a second gc finds nothing' '
	cd s &&
	aptix gc --json >out &&
	test "$(json_field .pruned <out)" = 0
'

test_expect_success 'reflogs keep a deleted conversation until a policy expires them' '
	cd s &&
	t4=$(aptix write-turn --conversation c4 --seq 1 \
		--instruction-text "kept by a reflog" --created-at 1700000300000) &&
	s4=$(aptix commit-session --created-at 1700000301000 $t4) &&
	aptix update-ref refs/conversations/c4 $s4 &&
	aptix update-ref -d refs/conversations/c4 &&
	aptix gc --prune=now --dry-run >out &&
	! grep "$s4" out &&
	aptix config gc.reflog-expire now &&
	aptix gc --prune=now --dry-run >out &&
	grep "^expire reflog refs/conversations/c4 " out &&
	grep "^prune session $s4 " out &&
	grep "^prune turn $t4 " out &&
	# a failed session stays (it is history), and with it its parent
	! grep "$failed" out &&
	! grep "$s1" out &&
	aptix config --unset gc.reflog-expire &&
	aptix gc --prune=now --dry-run >out &&
	! grep "$s4" out
'

test_expect_success 'gc.prune-expire=never prunes nothing' '
	cd s &&
	aptix -c gc.prune-expire=never gc --dry-run --json >out &&
	test "$(json_field .pruned <out)" = 0 &&
	test_must_fail aptix gc --prune=yesterday-ish 2>err &&
	grep "bad --prune" err
'

test_expect_success 'setup: four turns, each stored against the first' '
	start_standin &&
	aptix init -q ws &&
	cd ws &&
	for n in 1 2 3 4
	do
		# 80 lines, line 40 changed by each turn
		test_seq 1 80 | sed -e "s/^40\$/40 version $n/" \
			-e "s/.*/static int line_&(void);/" >src.c &&
		aptix continue -q --no-stream --file src.c \
			-m "turn $n: change line 40" >/dev/null || return 1
	done &&
	test_line_count = 4 $(aptix log --format=%H >heads && echo heads)
'

test_expect_success 'an unreachable base of a kept object is kept' '
	cd ws &&
	s4=$(aptix rev-parse HEAD) &&
	t4=$(aptix cat-object session $s4 | json_field .turn) &&
	s1=$(aptix log --format=%H | tail -n 1) &&
	t1=$(aptix cat-object session $s1 | json_field .turn) &&
	v1=$(aptix cat-object turn $t1 | json_field ".files[0].content") &&
	# turn 4 alone, without its parents; every reflog entry expired
	lone=$(aptix commit-session $t4) &&
	aptix update-ref HEAD $lone &&
	v4=$(aptix cat-object turn $t4 | json_field ".files[0].content") &&
	aptix cat-object blob $v4 >v4.before &&
	aptix gc --prune=now --reflog-expire=now --json >out &&
	test "$(json_field .rewritten <out)" -ge 1 &&
	grep "$v1" out &&
	grep "$s1" out &&
	test_must_fail aptix cat-object -e $v1 &&
	aptix cat-object blob $v4 >v4.after &&
	test_cmp v4.before v4.after &&
	aptix fsck --full
'

test_expect_success 'a turn that runs while gc does survives it' '
	cd ws &&
	aptix gc --prune=now --reflog-expire=now >/dev/null 2>&1 &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":3}" &&
	start_turn racing --no-stream -m "racing gc" &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	# its claim, instruction and parent are roots while it runs;
	# the file cannot be compacted under it, which gc says
	aptix gc --prune=now --reflog-expire=now >gc.out 2>gc.err &&
	grep "not compacted: another process (pid $pid)" gc.err &&
	wait_for_exit $pid 20 &&
	wait $pid &&
	head=$(aptix rev-parse HEAD) &&
	test "$(aptix show --json HEAD | json_field .instruction)" = "racing gc" &&
	aptix fsck --full >out 2>err &&
	test_must_be_empty err &&
	aptix gc --prune=now >gc.out 2>gc.err &&
	! grep "not compacted" gc.err &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix fsck --full
'

test_expect_success 'gc runs many times while turns commit: nothing reachable goes' '
	cd ws &&
	standin_reset &&
	start_turns 5 &&
	turns=$pid &&
	test_when_finished "kill_children $turns" &&
	while child_running $turns
	do
		aptix gc --prune=now --no-compact >gc.out 2>gc.err || {
			cat gc.err
			return 1
		}
	done &&
	wait $turns &&
	aptix log --oneline >log &&
	grep "turn 5 of the race" log &&
	aptix fsck --full
'

test_expect_success 'purge, then gc: the audit record stays, the bytes go' '
	cd ws &&
	printf "sk-gc-secret-1234567890abcdef\n" >secret &&
	aptix continue -q --no-stream \
		-m "the key is sk-gc-secret-1234567890abcdef" >/dev/null &&
	aptix cat-object --batch --batch-all-objects >all &&
	grep -q sk-gc-secret all &&
	in_file sk-gc-secret-1234567890abcdef .aptix/data.mdb &&
	aptix purge --force --reason "leaked key" --secret-from-file secret \
		>out 2>err &&
	blob=$(sed -n "s/^purge blob //p" out | head -n 1) &&
	test -n "$blob" &&
	aptix gc --prune=now --reflog-expire=now >out 2>err &&
	! in_file sk-gc-secret-1234567890abcdef .aptix/data.mdb &&
	aptix cat-object --batch --batch-all-objects >all &&
	! grep -q sk-gc-secret all &&
	test_must_fail aptix cat-object blob $blob 2>err &&
	grep "was purged on .*: leaked key" err &&
	aptix fsck --full
'

# index_views <file>: what the index answers, all of it
index_views () {
	{
		aptix sessions --json --all-workspaces --include-archived &&
		aptix log --all --format="%H %P %c %s" &&
		aptix log --all --format=%H -S zebra-Qx &&
		aptix search --json zebra-Qx &&
		aptix usage
	} >"$1"
}

test_expect_success 'the index of what gc prunes goes in its write: as reindex makes it' '
	aptix init -q ix &&
	cd ix &&
	at=1700000000000 &&
	a1=$(aptix write-turn --conversation cA --seq 1 --created-at $at \
		--instruction-text "alpha one") &&
	A1=$(aptix commit-session --created-at $at $a1) &&
	a2=$(aptix write-turn --conversation cA --seq 2 --created-at $((at + 1000)) \
		--instruction-text "alpha two zebra-Qx") &&
	A2=$(aptix commit-session -p $A1 --created-at $((at + 1000)) $a2) &&
	a3=$(aptix write-turn --conversation cA --seq 3 --created-at $((at + 2000)) \
		--instruction-text "alpha three") &&
	A3=$(aptix commit-session -p $A2 --created-at $((at + 2000)) $a3) &&
	b1=$(aptix write-turn --conversation cB --seq 1 --created-at $((at + 500)) \
		--instruction-text "bravo zebra-Qx") &&
	B1=$(aptix commit-session --created-at $((at + 500)) $b1) &&
	c1=$(aptix write-turn --conversation cC --seq 1 --created-at $((at + 700)) \
		--instruction-text "charlie") &&
	C1=$(aptix commit-session --created-at $((at + 700)) $c1) &&
	aptix update-ref refs/conversations/cA $A3 &&
	aptix update-ref refs/conversations/cB $B1 &&
	aptix update-ref refs/conversations/cC $C1 &&
	aptix conversation rename cA "alpha, renamed" &&
	aptix update-ref refs/conversations/cA $A1 &&
	aptix update-ref -d refs/conversations/cB &&
	aptix search zebra-Qx >hits &&
	test_line_count = 2 hits &&
	aptix gc --prune=now --reflog-expire=now >out 2>err &&
	grep "^pruned" err &&
	aptix fsck --full &&
	aptix log --all --format=%H >log &&
	grep $A1 log && grep $C1 log &&
	! grep -e $A2 -e $A3 -e $B1 log &&
	aptix search zebra-Qx >hits &&
	test_must_be_empty hits &&
	aptix sessions --json >list &&
	! grep cB list &&
	index_views gc-made &&
	aptix reindex -q &&
	index_views reindex-made &&
	test_cmp reindex-made gc-made
'

test_lazy_prereq STORE_EDIT '
	python3 -c "import sys" &&
	command -v mdb_dump && command -v mdb_load
'

# search_df <file>: the search index's terms, df and live postings
# (t/lib-store.py search-df)
search_df () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-df >"$1"
}

# many_sessions <n>: n sessions, each in a conversation of its own, as
# objects (hash-object), their words common (in every session: sealed
# runs), of a tenth (a key of their own), of a fortieth (blocks) and
# unique; "conversation session" lines in "made"
many_sessions () {
	python3 - "$1" <<-\EOF
	import hashlib, json, sys
	n = int(sys.argv[1])
	def canon(o):
	    return (json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n").encode()
	def put(kind, i, data):
	    p = "obj/%s-%d" % (kind, i)
	    open(p, "wb").write(data)
	    lists[kind].append(p)
	    return hashlib.sha256(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()
	lists = {"blob": [], "turn": [], "session": []}
	made = open("made", "w")
	t = 1600000000000
	ut = dict.fromkeys(("cached_tokens", "input_tokens", "model_requests",
	    "output_tokens", "reasoning_tokens", "total_tokens"), 0)
	us = dict.fromkeys(("completion_tokens", "model_requests",
	    "prompt_tokens", "total_tokens"), 0)
	for i in range(n):
	    conv = "0000%04x-beef-4000-8000-%012x" % (i, i)
	    blob = put("blob", i, b"Instruction %d: explain the memory cache, "
	               b"group%d pair%d uniq%05d\n" % (i, i % 10, i % 40, i))
	    turn = put("turn", i, canon({"conversation": conv, "created_at": t + i,
	        "instruction": blob, "seq": 1, "status": "completed",
	        "status_at": t + i, "usage": ut, "v": 1}))
	    s = put("session", i, canon({"conversation": conv, "created_at": t + i,
	        "metadata": {"session_type": "agent"},
	        "run_summary": {"duration_ms": 0, "usage": us},
	        "status": "committed", "turn": turn, "v": 1}))
	    made.write("%s %s\n" % (conv, s))
	for k, v in lists.items():
	    open(k, "w").write("".join(p + "\n" for p in v))
	EOF
}

# word_views <file>: what log -S and search answer of many_sessions' words
word_views () {
	{
		aptix log --all --format=%H -S memory | sort &&
		aptix log --all --format=%H -S uniq00003 &&
		aptix log --all --format=%H -S uniq00004 &&
		for w in memory group3 pair7 uniq00003
		do
			aptix search --json -n 1000 $w || return 1
		done
	} >"$1"
}

test_expect_success STORE_EDIT 'gc takes the postings of what it prunes out of every word' '
	aptix init -q words &&
	cd words &&
	mkdir obj &&
	many_sessions 300 &&
	for type in blob turn session
	do
		aptix hash-object -w -t $type --stdin-paths <$type >/dev/null ||
		return 1
	done &&
	awk "NR % 3 == 1 { print \"create refs/conversations/\" \$1, \$2 }" made |
	aptix update-ref --stdin &&
	aptix reindex -q &&
	search_df before &&
	grep "^$(printf memory | od -An -tx1 | tr -d " \n") 300 300\$" before &&
	aptix gc --prune=now --reflog-expire=now >out 2>err &&
	grep "^pruned" err &&
	aptix fsck --full &&
	search_df gc-df &&
	awk "\$2 != \$3 { print; bad = 1 } END { exit bad }" gc-df &&
	grep "^$(printf memory | od -An -tx1 | tr -d " \n") 100 100\$" gc-df &&
	word_views gc-made &&
	aptix log --all --format=%H -S uniq00003 >uniq-hits &&
	test_line_count = 1 uniq-hits &&
	test -z "$(aptix log --all --format=%H -S uniq00004)" &&
	aptix reindex -q &&
	search_df reindex-df &&
	test_cmp reindex-df gc-df &&
	word_views reindex-made &&
	test_cmp reindex-made gc-made
'

test_expect_success 'delete a conversation for good: delete, expire, gc' '
	cd ws &&
	aptix switch -c >/dev/null &&
	aptix continue -q --no-stream -m "forget-me-Rt5u please" >/dev/null &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix switch - >/dev/null &&
	aptix conversation delete -D "$conv" &&
	aptix gc --prune=now >out 2>err &&
	aptix cat-object --batch --batch-all-objects >all &&
	grep -q forget-me-Rt5u all &&
	in_file forget-me-Rt5u .aptix/data.mdb &&
	aptix gc --prune=now --reflog-expire=now >out 2>err &&
	aptix cat-object --batch --batch-all-objects >all &&
	! grep -q forget-me-Rt5u all &&
	! in_file forget-me-Rt5u .aptix/data.mdb &&
	aptix fsck --full
'

test_done
