#!/bin/sh
test_description='a store of format 3 (objects-format.md) opens, reads and grows

t/fixtures/store-v3.tar.gz was written by aptix at d53d5ea
(t/fixtures/make-store-v3.sh): a conversation whose files change from
turn to turn (based values, packed turns and sessions, spliced raw
requests and responses), a failed turn, a turn after it, and a fork of
the first turn. This aptix reads every object of it, checks it, and
commits a new turn into it, stored against a format-3 turn; the old
objects still read as they were.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

# the meta "format" once a new turn is written into the fixture
# (the format this aptix writes)
expect_format=8

# The fixture's sessions and conversations.
first=7aa8bf4a79ea4c79ae7073bb8ffacb53d495e0afe39fd80957ec9ad23ecc6e02
second=90671e818edf3fa1df2c800098d3969410eb475fe47b882768fb79074927410f
third=ab30b18baffde6ef17d0133ae4aa3e8a1e59b9613c6c2da4e569fdc52d69cf31
failed=a3ffb5dc1032e22604fde88780c518d99867c621f7edf4b489df83088a2b8e4e
again=91f82c8007eb1195f52f106d280149c19457d925c1e6ec10035db553b1e1c2e4
fork=0a142d79004f08c9da28329a45a55eec12dae95fc038e51de04fd975f5cdb9ca
main=20c2e62e-ff45-420c-b551-41e47a24d3f9
forked=23544c8e-4b77-4fb8-b442-9f439589cad9

# parse_c <n> <value>: parse.c as the fixture has it (make-store-v3.sh)
parse_c () {
	i=0
	while test $i -lt 24
	do
		if test $i -eq "$1"; then v=$2; else v=$i; fi
		printf 'int parse_%d(const char *s)\n{\n\treturn s[%d] == %d;\n}\n\n' \
			$i $i "$v"
		i=$((i + 1))
	done
}

# store_format <dir>: the meta "format" of the store of <dir>
store_format () {
	mdb_dump -p -s meta "$1/.aptix" | sed -n '/^ format$/{n;s/^ //;p;}'
}

# value_kinds <dir>: how many values of the objects table have each first
# byte (flags and type), as format 3 lays them out
value_kinds () {
	mdb_dump -s objects "$1/.aptix" | python3 -c '
import collections, sys
lines = [l.strip() for l in sys.stdin if l.startswith(" ")]
kinds = collections.Counter(bytes.fromhex(v)[0] for v in lines[1::2])
for flags, n in sorted(kinds.items()):
    print("0x%02x %d" % (flags, n))
'
}

# bases <dir>: the base named by each based value (objects-format.md,
# "Based values") of the objects table, the values of later formats put
# together from the values table (lib-objects.py), one a line, sorted
bases () {
	python3 "$TEST_DIRECTORY/lib-objects.py" "$1/.aptix" | python3 -c '
import sys
for line in sys.stdin:
    v = bytes.fromhex(line.split()[1])
    t = v[0] if v else 0
    if not t & 0x20 or t & 0x80 or (t & 0x1f) not in (1, 2, 3):
        continue
    i = 1
    while i < len(v) and i < 11 and v[i] & 0x80:
        i += 1
    if len(v) >= i + 33:
        print(v[i + 1:i + 33].hex())
' | sort
}

# turn_summary: a session as show --json gives it (on stdin), in short
turn_summary () {
	PYTHONIOENCODING=utf-8 python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["session"][:12], d["status"], d["instruction"])
print("  answer:", d["answer"])
for f in d["files"]:
    print("  file:", f["path"], f["size"], f["state"])
'
}

# file_of <session> <path>: the content id of <path> in the session's turn
file_of () {
	aptix -C old show --json "$1" | python3 -c '
import json, sys
print([f["content"] for f in json.load(sys.stdin)["files"]
       if f["path"] == sys.argv[1]][0])' "$2"
}

test_expect_success 'setup: the format-3 fixture' '
	mkdir old &&
	tar -C old -xzf "$TEST_DIRECTORY/fixtures/store-v3.tar.gz" &&
	test -f old/.aptix/data.mdb &&
	parse_c 0 0 >parse.c.0 &&
	parse_c 7 70 >parse.c.7 &&
	parse_c 12 120 >parse.c.12 &&
	parse_c 20 200 >parse.c.20 &&
	printf "# notes\n\nThe parser reads tokens, %s\n%s\n" \
		"one function per position." \
		"Each function compares one byte of the input." >notes.md.1 &&
	cat notes.md.1 >notes.md.2 &&
	echo "parse_12 now compares with 120." >>notes.md.2 &&
	test_cmp parse.c.20 old/parse.c &&
	test_cmp notes.md.2 old/notes.md
'

test_expect_success MDB_DUMP,PYTHON3 'the fixture is of store format 3, with based values' '
	test "$(store_format old)" = 3 &&
	value_kinds old >kinds &&
	# 0x01/0x81 blob, deflated/as is; 0x21 based blob; 0x41 spliced
	# blob; 0x61 based spliced blob; 0x62 based packed turn; 0xc2 packed
	# turn, as is; 0xc3 packed session, as is
	cat >expect <<-\EOF &&
	0x01 3
	0x21 7
	0x41 1
	0x61 7
	0x62 3
	0x81 11
	0xc2 3
	0xc3 6
	EOF
	test_cmp expect kinds &&
	bases old >bases-before &&
	test_line_count = 17 bases-before
'

test_expect_success 'log --graph --all draws both conversations' '
	aptix -C old log --graph --all --format="%h %S %s" >graph &&
	cat >expect <<-\EOF &&
	* 0a142d79004f committed A fork of the first turn
	| * 91f82c8007eb committed Try again: café, naïve "quotes"
	| | * a3ffb5dc1032 failed This one fails
	| |/
	| * ab30b18baffd committed Make parse_12 compare with 120, and say so in the notes
	| * 90671e818edf committed Make parse_7 compare with 70
	|/
	o 7aa8bf4a79ea committed Explain the parser
	EOF
	test_cmp expect graph &&
	aptix -C old log --graph --all >log &&
	test $(grep -c "session [0-9a-f]\{64\}" log) = 6 &&
	grep "^| | \* session $failed \[failed\]" log &&
	grep "Conversation: $main" log
'

test_expect_success 'sessions and status' '
	aptix -C old sessions >sessions &&
	cat >expect <<-\EOF &&
	* 23544c8e  2026-11-27    1 turn   committed  A fork of the first turn
	  20c2e62e  2026-11-27    4 turns  committed  Explain the parser
	EOF
	test_cmp expect sessions &&
	aptix -C old status >status &&
	grep "^On conversation $forked (A fork of the first turn)$" status &&
	grep "^Head: 0a142d79004f A fork of the first turn " status
'

test_expect_success PYTHON3 'show reads each turn: instruction, answer, files' '
	for s in $fork $again $failed $third $second $first
	do
		aptix -C old show --json $s >show.json &&
		turn_summary <show.json || return 1
	done >turns &&
	cat >expect <<-\EOF &&
	0a142d79004f committed A fork of the first turn
	  answer: Answer #6 to: Active file parse.c (1267 bytes, sha256 416dd4ffd281f8d8), a (chain depth 2, context chars 3024)
	  file: parse.c 1267 sent
	91f82c8007eb committed Try again: café, naïve "quotes"
	  answer: Answer #5 to: Active file parse.c (1267 bytes, sha256 416dd4ffd281f8d8), a (chain depth 4, context chars 6243)
	  file: notes.md 139 unchanged
	  file: parse.c 1267 sent
	a3ffb5dc1032 failed This one fails
	  answer: None
	  file: parse.c 1267 unchanged
	ab30b18baffd committed Make parse_12 compare with 120, and say so in the notes
	  answer: Answer #3 to: Active file notes.md (139 bytes, sha256 1a91278a678530ff), a (chain depth 3, context chars 4772)
	  file: notes.md 139 sent
	  file: parse.c 1267 sent
	90671e818edf committed Make parse_7 compare with 70
	  answer: Answer #2 to: Active file parse.c (1267 bytes, sha256 0144e0091a062761), a (chain depth 2, context chars 3085)
	  file: notes.md 107 unchanged
	  file: parse.c 1267 sent
	7aa8bf4a79ea committed Explain the parser
	  answer: Answer #1 to: Active file notes.md (107 bytes, sha256 712392d54d6fbae1), a (chain depth 1, context chars 1617)
	  file: notes.md 107 sent
	  file: parse.c 1266 sent
	EOF
	test_cmp expect turns &&
	aptix -C old show $again >show &&
	grep "Try again: café, naïve \"quotes\"" show
'

test_expect_success PYTHON3 'every version of the files reads back as it was' '
	while read s file v
	do
		aptix -C old cat-object blob $(file_of $s $file) >got &&
		test_cmp $file.$v got || return 1
	done <<-EOF
	$first parse.c 0
	$first notes.md 1
	$second parse.c 7
	$second notes.md 1
	$third parse.c 12
	$third notes.md 2
	$failed parse.c 12
	$again parse.c 20
	$again notes.md 2
	$fork parse.c 20
	EOF
'

test_expect_success PYTHON3 'cat-object -p: session, turn, raw request and response' '
	aptix -C old cat-object -p $again >p-session &&
	grep "^parent  *$third$" p-session &&
	aptix -C old cat-object session $again >session &&
	turn=$(json_field .turn <session) &&
	aptix -C old cat-object -p $turn >p-turn &&
	grep "^conversation  *$main$" p-turn &&
	aptix -C old cat-object turn $turn >turn &&
	for f in instruction answer request response
	do
		id=$(json_field .$f <turn) &&
		aptix -C old cat-object -p $id >p-$f &&
		aptix -C old cat-object blob $id >$f &&
		test_cmp $f p-$f &&
		test "$(aptix -C old cat-object -s $id)" = \
			"$(wc -c <$f | tr -d " ")" || return 1
	done &&
	printf "%s" "Try again: café, naïve \"quotes\"" >expect &&
	test_cmp expect instruction &&
	PYTHONIOENCODING=utf-8 python3 -c "import json, sys
req = json.load(open(sys.argv[1]))
texts = [m[\"content\"] for m in req[\"input\"]]
assert any(open(sys.argv[2]).read() in t for t in texts), texts
parse_c = open(sys.argv[3]).read()
assert any(parse_c in t for t in texts), texts
r = json.load(open(sys.argv[4]))
parts = [c[\"text\"] for o in r[\"output\"] for c in o.get(\"content\", [])]
assert open(sys.argv[5]).read() in parts, parts
" request instruction parse.c.20 response answer
'

test_expect_success 'every object reads, and fsck --full finds nothing wrong' '
	aptix -C old cat-object --batch-check --batch-all-objects >all &&
	test_line_count = 41 all &&
	awk "{print \$1}" all >ids &&
	while read id
	do
		aptix -C old cat-object -e $id || return 1
	done <ids &&
	aptix -C old cat-object --batch --batch-all-objects >batch-before &&
	aptix -C old fsck --full >fsck &&
	test_must_be_empty fsck &&
	aptix -C old fsck --failed >fsck &&
	echo "failed session $failed" >expect &&
	test_cmp expect fsck
'

test_expect_success MDB_DUMP 'a reindex alone gives the store the format of its records' '
	# its records keep 16-byte file fingerprints, which an aptix of
	# format 3 would misread: it must refuse the store instead
	rm -rf reidx &&
	mkdir reidx &&
	tar -C reidx -xzf "$TEST_DIRECTORY/fixtures/store-v3.tar.gz" &&
	test "$(store_format reidx)" = 3 &&
	aptix -C reidx reindex >/dev/null &&
	test "$(store_format reidx)" = "$expect_format" &&
	aptix -C reidx fsck --full >fsck &&
	test_must_be_empty fsck
'

test_expect_success 'diff: the files changed between turns' '
	aptix -C old diff -p $second >diff &&
	grep "^Files: 0 added, 0 removed, 1 changed$" diff &&
	grep "^  M parse.c " diff &&
	grep "^    -	return s\[7\] == 7;$" diff &&
	grep "^    +	return s\[7\] == 70;$" diff &&
	aptix -C old diff --stat $first $again >stat &&
	grep "^  M notes.md  107 bytes -> 139 bytes$" stat &&
	grep "^  M parse.c " stat &&
	aptix -C old diff $fork $again >forkdiff &&
	grep "^  A notes.md " forkdiff
'

# The stand-in starts from the state it had when the fixture was made
# (the responses it keeps), and aptix's clock from an hour after the
# fixture's last turn: the chains of the fixture have not expired.
test_expect_success PYTHON3 'continue writes a new turn, chained to a format-3 turn' '
	cp old/standin-state.json state.json &&
	start_standin --state "$TRASH_DIRECTORY/state.json" &&
	at=$(aptix -C old log -n 1 --format=%at $fork) &&
	aptix -C old log --all --format="%H %S %P %s" >log.before &&
	parse_c 21 210 >parse.c.21 &&
	cp parse.c.21 old/parse.c &&
	(
		cd old &&
		APTIX_TEST_DATE=$((at + 3600)) &&
		export APTIX_TEST_DATE &&
		aptix continue -q --no-stream --conversation $main \
			--file parse.c --file notes.md \
			-m "Make parse_21 compare with 210" >../out
	) &&
	aptix -C old rev-parse refs/conversations/$main >new &&
	aptix -C old cat-object session $(cat new) >new-session &&
	test "$(json_field .parent <new-session)" = $again &&
	last_request_body >request.json &&
	json_field .previous_response_id <request.json >prev &&
	json_field .response_id <turn >expect &&
	test_cmp expect prev &&
	aptix -C old cat-object blob $(file_of $(cat new) parse.c) >got &&
	test_cmp parse.c.21 got &&
	aptix -C old fsck --full >fsck &&
	test_must_be_empty fsck &&
	aptix -C old log --all --format="%H %S %P %s" >log.after &&
	test_line_count = 7 log.after &&
	grep "^$(cat new) committed $again Make parse_21" log.after
'

test_expect_success PYTHON3 'the old objects read as they did' '
	aptix -C old cat-object --batch <ids >batch-after &&
	test_cmp batch-before batch-after &&
	aptix -C old cat-object -p $again >p-session.after &&
	test_cmp p-session p-session.after &&
	aptix -C old cat-object -p $(json_field .turn <session) >p-turn.after &&
	test_cmp p-turn p-turn.after &&
	for f in request response
	do
		aptix -C old cat-object -p $(json_field .$f <turn) >p-$f.after &&
		test_cmp p-$f p-$f.after || return 1
	done &&
	aptix -C old log --all --format="%H %S %P %s" >log.after &&
	grep -v "^$(cat new) " log.after >log.old &&
	test_cmp log.before log.old
'

test_expect_success PYTHON3,MDB_DUMP 'the new turn and its blobs are stored against format-3 objects' '
	bases old >bases-after &&
	comm -13 bases-before bases-after >new-bases &&
	while read base
	do
		grep -q -x "$base" ids &&
		aptix -C old cat-object -t $base || return 1
	done <new-bases >types &&
	sort -u types >types.u &&
	# the session too, when its parent saves it an eighth
	printf "blob\nturn\n" >expect &&
	grep -v -x session types.u >types.t &&
	test_cmp expect types.t
'

test_expect_success MDB_DUMP "the new turn raised the format to $expect_format" '
	test "$(store_format old)" = "$expect_format"
'

# Thirty-one days later, the fork's chain has expired: its next turn
# starts a new one, replaying the fork's turns read from the store.
test_expect_success PYTHON3 'a turn after the chain expired replays format-3 turns' '
	at=$(aptix -C old log -n 1 --format=%at $fork) &&
	(
		cd old &&
		APTIX_TEST_DATE=$((at + 31 * 86400)) &&
		export APTIX_TEST_DATE &&
		aptix continue -q --no-stream --conversation $forked \
			-m "After a month" >../out
	) &&
	last_request_body >request.json &&
	test "$(json_field .previous_response_id <request.json)" = null &&
	grep "A fork of the first turn" request.json &&
	grep "Answer #6 to: Active file parse.c" request.json &&
	aptix -C old rev-parse refs/conversations/$forked >new2 &&
	aptix -C old cat-object session $(cat new2) >new2-session &&
	test "$(json_field .parent <new2-session)" = $fork &&
	aptix -C old fsck --full >fsck &&
	test_must_be_empty fsck
'

test_done
