#!/bin/sh
test_description='aptix import: a run killed between its batches

An import commits its fresh turns in batches (one write transaction for
many turns). The import is stopped at a known point, after its first
batch was committed and with more turns queued, by giving it a FIFO as
its last file: the test opens the FIFO for writing, which returns when
the import opens it for reading (every other file is read by then), and
then kills the import with SIGKILL.
The store must then be clean (fsck --full), hold some turns but not all,
and a second import must add exactly the rest: the same objects and refs
as one clean import of the same files.'
. "$(dirname "$0")"/test-lib.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to make the corpus'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import
PARENT=01a20a30-fe75-78c1-af75-749cedb50f1c
PARENT_FILE=rollout-2026-11-23T20-55-12-$PARENT.jsonl
COPIES=120	# three turns each: more than one batch

# json_field <name> <file>: the value of one summary field
json_field () {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"
}

# snapshot of a store: its objects and its conversations' refs
store_state () {
	aptix cat-object --batch-check --batch-all-objects | sort &&
	aptix for-each-ref refs/conversations/ | sort
}

test_expect_success 'setup: a corpus of many Codex threads, and a FIFO' '
	mkdir corpus &&
	i=0 &&
	while test $i -lt $COPIES
	do
		id=$(printf "01a20a30-fe75-78c1-af75-%012x" $i) &&
		sed "s/$PARENT/$id/g" "$FIX/codex-0.169/$PARENT_FILE" \
			>corpus/rollout-2026-11-23T20-55-12-$id.jsonl &&
		i=$((i + 1)) || return 1
	done &&
	mkfifo last.jsonl &&
	head -n 1 "$FIX/codex-0.171-toolcall/"*.jsonl >first-line &&
	aptix init -q clean &&
	(cd clean && aptix import --json codex ../corpus >../clean.json) &&
	test "$(json_field new_turn_count clean.json)" = $((COPIES * 3)) &&
	(cd clean && store_state) >clean.state
'

# start_import: the import of the corpus and then the FIFO, in the
# background (its pid in import.pid)
start_import () {
	(cd killed && exec aptix import -q codex ../corpus ../last.jsonl) \
		>/dev/null 2>err &
	echo $! >import.pid
}

# reads_fifo <pid>: the process has the FIFO open
reads_fifo () {
	local fd
	for fd in /proc/"$1"/fd/*
	do
		case $(readlink "$fd" 2>/dev/null) in
		*/last.jsonl) return 0 ;;
		esac
	done
	return 1
}

# hold_fifo: open the FIFO for writing in the background, which returns
# when the import opens it to read it (then "opened" appears), and keep
# it open (its pid in writer.pid)
hold_fifo () {
	sh -c 'exec 7>last.jsonl && : >opened && exec sleep 60' &
	echo $! >writer.pid
}

test_expect_success 'an import killed after a batch leaves a clean store' '
	aptix init -q killed &&
	start_import &&
	# the files named are read after the directories: first the
	# first record of each (the ids that order them)
	cat first-line >last.jsonl &&
	# until that read has closed it (else it, not the import of the
	# file, would be the reader the next open meets)
	i=0 &&
	while reads_fifo "$(cat import.pid)" && test $i -lt 600
	do
		sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	hold_fifo &&
	i=0 &&
	while ! test -f opened && test $i -lt 600
	do
		sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	test -f opened &&
	kill -9 "$(cat import.pid)" &&
	{ wait "$(cat import.pid)"; test $? = 137; } &&
	kill "$(cat writer.pid)" &&
	{ wait "$(cat writer.pid)"; true; } &&
	(cd killed && aptix fsck --full) &&
	n=$(cd killed && aptix log --all --format=%H | wc -l) &&
	test "$n" -gt 0 &&
	test "$n" -lt $((COPIES * 3))
'

test_expect_success 'importing again adds exactly the rest' '
	n=$(cd killed && aptix log --all --format=%H | wc -l) &&
	(cd killed && aptix import --json codex ../corpus >../again.json) &&
	test "$(json_field new_turn_count again.json)" = $((COPIES * 3 - n)) &&
	(cd killed && aptix fsck --full && store_state) >killed.state &&
	test_cmp clean.state killed.state
'

# Two sessions whose subagents have one id (copies of a project, as the
# bench makes them): the second file names the subagent's conversation
# again after the first file's state went, while the batch that moved
# its ref is not committed yet.
test_expect_success 'a conversation named again in the same batch' '
	python3 - "$FIX/claude-code-2.1.328/projects/-home-user-proj" \
		twice <<-\EOF &&
	import os, re, sys
	src, out = sys.argv[1], sys.argv[2]
	uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
	for i in range(2):
	    swap = lambda m: m.group(0)[:24] + "%012x" % i
	    for root, _, files in os.walk(src):
	        for f in files:
	            p = os.path.join(root, f)
	            q = os.path.join(out, uuid.sub(swap, os.path.relpath(p, src)))
	            os.makedirs(os.path.dirname(q), exist_ok=True)
	            open(q, "w").write(uuid.sub(swap, open(p).read()))
	EOF
	aptix init -q same &&
	(cd same && aptix import --json claude ../twice >../same.json) &&
	(cd same && aptix fsck --full) &&
	(cd same && aptix import --json claude ../twice >../same2.json) &&
	test "$(json_field new_turn_count same2.json)" = 0
'

test_done
