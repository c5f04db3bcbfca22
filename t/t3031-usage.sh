#!/bin/sh
test_description='aptix usage: tokens per turn, per conversation and
overall, an estimated cost from the price table and config'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# used_turn <conv> <model> <input> <cached> <output> [<parent>]: a
# committed session whose turn spent these tokens, at the fake clock
used_turn () {
	local seq=1 ms=${APTIX_TEST_DATE}000 ins turn pj='' mj=''
	if test -n "${6-}"
	then
		seq=$(object_field "$(object_field "$6" turn)" seq) &&
		seq=$((seq + 1)) &&
		pj="\"parent\":\"$6\"," || return 1
	fi
	test -n "$2" && mj="\"model\":\"$2\","
	ins=$(make_blob "turn $seq of $1") &&
	turn=$(printf '{"conversation":"%s","created_at":%s,"instruction":"%s",%s"seq":%s,"status":"completed","status_at":%s,"usage":{"cached_tokens":%s,"input_tokens":%s,"model_requests":1,"output_tokens":%s,"reasoning_tokens":0,"total_tokens":%s},"v":1}\n' \
		"$1" "$ms" "$ins" "$mj" "$seq" "$ms" "$4" "$3" "$5" \
		"$(($3 + $5))" |
		aptix hash-object -w -t turn --stdin) &&
	printf '{"conversation":"%s","created_at":%s,"metadata":{"session_type":"agent"},%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":1,"prompt_tokens":0,"total_tokens":0}},"status":"committed","turn":"%s","v":1}\n' \
		"$1" "$ms" "$pj" "$turn" |
	aptix hash-object -w -t session --stdin
}

# row <name>: the line of a conversation (or "total") in usage's table,
# without its title
row () {
	grep "^$1 " out | tr -s " " | cut -d" " -f1-7
}

#   c1: gpt-5-mini (1M in, 200k of them cached, 100k out), then a dated
#       snapshot of gpt-5 (2M in, 1M out)
#   c2: a model no table knows, 1000 in, 10 out
test_expect_success setup '
	aptix init -q &&
	test_tick &&
	a1=$(used_turn c1 gpt-5-mini 1000000 200000 100000) &&
	test_tick &&
	a2=$(used_turn c1 gpt-5-2025-08-07 2000000 0 1000000 $a1) &&
	test_tick &&
	b1=$(used_turn c2 acme-7b 1000 0 10) &&
	aptix update-ref refs/conversations/c1 $a2 &&
	aptix update-ref refs/conversations/c2 $b1 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

# gpt-5-mini: 800k x 0.25 + 200k x 0.025 + 100k x 2.00 = 0.405
# gpt-5:      2M x 1.25 + 1M x 10.00                    = 12.5
test_expect_success 'totals per conversation and overall; unknown, not 0' '
	aptix usage --all-workspaces >out 2>err &&
	test "$(row c1)" = "c1 2 3000000 200000 1100000 4100000 \$12.9050" &&
	test "$(row c2)" = "c2 1 1000 0 10 1010 unknown" &&
	test "$(row total)" = "total 3 3001000 200000 1100010 4101010 unknown" &&
	grep "no price for .acme-7b." err &&
	head -n1 out | grep "^CONVERSATION  *TURNS  *INPUT  *CACHED  *OUTPUT"
'

test_expect_success '--turns: one line per turn, oldest first' '
	aptix usage --all-workspaces --turns >out 2>err &&
	grep "^SESSION" out &&
	grep "^$(echo $a1 | cut -c1-12) .* gpt-5-mini .* \$0.4050$" out &&
	grep "^$(echo $a2 | cut -c1-12) .* gpt-5-2025-08-07 .* \$12.5000$" out &&
	grep "^$(echo $b1 | cut -c1-12) .* acme-7b .* unknown$" out &&
	grep -n "^$(echo $a1 | cut -c1-12)" out | grep "^2:"
'

test_expect_success 'prices from config override and extend the table' '
	aptix config price.acme-7b.input 1000 &&
	aptix config price.acme-7b.output 100000 &&
	aptix config price.gpt-5-mini.output 0 &&
	aptix usage --all-workspaces >out 2>err &&
	test_must_be_empty err &&
	test "$(row c2)" = "c2 1 1000 0 10 1010 \$2.0000" &&
	test "$(row c1)" = "c1 2 3000000 200000 1100000 4100000 \$12.7050" &&
	test "$(row total)" = "total 3 3001000 200000 1100010 4101010 \$14.7050" &&
	aptix config --unset price.acme-7b.input &&
	aptix config --unset price.acme-7b.output &&
	aptix config --unset price.gpt-5-mini.output
'

test_expect_success 'price keys are checked when set' '
	cp .aptix/config before &&
	test_must_fail aptix config price.gpt-5.input cheap 2>err &&
	grep "bad value .cheap. for .price.gpt-5.input." err &&
	test_must_fail aptix config price.gpt-5.input 1e9 2>err &&
	test_must_fail aptix config price.gpt-5.inptu 1 2>err &&
	grep "unknown config key" err &&
	test_cmp before .aptix/config &&
	aptix config price.gpt-4.1.cached-input 0.4 &&
	test "$(aptix config price.gpt-4.1.cached-input)" = 0.4 &&
	aptix config --unset price.gpt-4.1.cached-input
'

test_expect_success PYTHON3 '--json: per turn, per conversation, total' '
	aptix usage --all-workspaces --json --turns >out &&
	python3 -c "
import json, sys
d = json.load(open(\"out\"))
assert d[\"total\"][\"cost_usd\"] is None, d
assert d[\"total\"][\"turns\"] == 3
c = {x[\"conversation\"]: x for x in d[\"conversations\"]}
assert abs(c[\"c1\"][\"cost_usd\"] - 12.905) < 1e-9, c
assert c[\"c2\"][\"cost_usd\"] is None
assert [t[\"model\"] for t in d[\"turns\"]] == [\"gpt-5-mini\", \"gpt-5-2025-08-07\", \"acme-7b\"]
assert d[\"unpriced_models\"] == [\"acme-7b\"]
"
'

test_expect_success 'filters: --conversation, --since, --until' '
	aptix usage -c c2 >out 2>/dev/null &&
	test "$(row total)" = "total 1 1000 0 10 1010 unknown" &&
	! grep "^c1 " out &&
	aptix usage --all-workspaces --since "1 minute ago" >out 2>/dev/null &&
	test "$(row c1)" = "c1 1 2000000 0 1000000 3000000 \$12.5000" &&
	aptix usage --all-workspaces --until @1700000000 >out &&
	test "$(row total)" = "total 1 1000000 200000 100000 1100000 \$0.4050" &&
	aptix usage --workspace nowhere >out &&
	test "$(row total)" = "total 0 0 0 0 0 \$0.0000" &&
	test_must_fail aptix usage -c nosuch 2>err &&
	grep "^fatal: " err &&
	test_must_fail aptix usage --since "the other day" 2>err &&
	grep "invalid date" err
'

test_expect_success 'ids: names whole, UUIDs by a unique prefix; the title' '
	u1=1a2b3c4d-aaaa-4000-8000-000000000001 &&
	u2=1a2b3c4d-bbbb-4000-8000-000000000002 &&
	u3=9f8e7d6c-1111-4111-8111-111111111111 &&
	for u in $u1 $u2 $u3
	do
		s=$(used_turn $u gpt-5-mini 10 0 1) &&
		aptix update-ref refs/conversations/$u $s || return 1
	done &&
	aptix conversation rename $u3 "Parser errors" &&
	aptix usage --all-workspaces >out &&
	grep "^1a2b3c4d-a  *1 .* turn 1 of $u1$" out &&
	grep "^1a2b3c4d-b  *1 " out &&
	grep "^9f8e7d6c  *1 .*  Parser errors$" out &&
	grep "^c1  *2 " out &&
	head -n1 out | grep "COST  TITLE$" &&
	aptix usage -c 1a2b3c4d-a >out &&
	test "$(row 1a2b3c4d-a)" = "1a2b3c4d-a 1 10 0 1 11 <\$0.0001" &&
	aptix usage --all-workspaces --turns >out &&
	grep "^[0-9a-f]\{12\}  9f8e7d6c  " out &&
	aptix usage --all-workspaces --json >out &&
	grep "\"title\": \"Parser errors\"" out
'

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix "$@"
}

# The usage section of a session record (version 5 and later) follows the summary:
# flags, str8 model, then varints input, cached, output... (see
# objects-format.md). recorded_output <session> <new>: the record, with
# the output tokens of its turn said to be <new> (one varint byte).
recorded_output () {
	python3 - "$(store record hex:$1)" "$2" <<-\EOF
	import sys
	rec = bytearray.fromhex(sys.argv[1])
	assert rec[0] in (5, 6)
	p = 80
	p += 16 if rec[3] & 2 else 1 + rec[p]
	p += 1 + rec[p]				# the summary
	p += 2 + rec[p + 1]			# flags, model
	for _ in range(2):			# input, cached
	    while rec[p] & 0x80:
	        p += 1
	    p += 1
	end = p
	while rec[end] & 0x80:
	    end += 1
	rec[p:end + 1] = bytes([int(sys.argv[2])])
	print(rec.hex())
	EOF
}

test_expect_success PYTHON3 'usage reads what the index records, not the turns' '
	aptix usage --all-workspaces --json --turns >before.json &&
	aptix usage --all-workspaces >before &&
	bad=$(recorded_output $b1 99) &&
	store put-record hex:$b1 hex:$(store seal hex:$bad) &&
	aptix usage --all-workspaces --turns >out 2>/dev/null &&
	grep "^$(echo $b1 | cut -c1-12) .* acme-7b  *1000  *0  *99 " out &&
	test_expect_code 1 aptix fsck >out &&
	echo "index mismatch conversation c2: its usage sums are not what its sessions spent" >expect &&
	test_cmp expect out &&
	test_expect_code 1 aptix fsck --full >out &&
	grep "^index mismatch $b1: usage in the index record of $b1 is not what its turn says" out &&
	aptix reindex -q &&
	aptix fsck --full &&
	aptix usage --all-workspaces --json --turns >after.json &&
	test_cmp before.json after.json
'

test_expect_success PYTHON3 'a conversation record sums its usage: usage reads one record each' '
	rec=$(store get conversations c2) &&
	case $rec in 03*) ;; *) false ;; esac &&
	# the end of c2 record: ... acme-7b, turns 1, 0 calls, 0 requests,
	# input 1000 (e807), cached 0, output 10 (0a): say 11
	bad=$(echo "$rec" | sed "s/e807000a\(.\{16\}\)\$/e807000b\1/") &&
	test "$bad" != "$rec" &&
	store put conversations c2 hex:$(store seal-conv hex:$bad) &&
	aptix usage --all-workspaces >out 2>/dev/null &&
	test "$(row c2)" = "c2 1 1000 0 11 1010 unknown" &&
	# what each turn says is still read where a date chooses the turns
	aptix usage --all-workspaces --since @1 >out 2>/dev/null &&
	test "$(row c2)" = "c2 1 1000 0 10 1010 unknown" &&
	test_expect_code 1 aptix fsck >out &&
	grep "^index mismatch conversation c2: its usage sums are not what its sessions spent$" out &&
	aptix reindex -q &&
	aptix fsck &&
	aptix usage --all-workspaces >out &&
	test_cmp before out
'

test_expect_success PYTHON3 'a damaged conversation record is an error, not other counts' '
	rec=$(store get conversations c2) &&
	bad=$(echo "$rec" | sed "s/e807000a/e807000b/") &&
	store put conversations c2 hex:$bad &&
	test_must_fail aptix usage --all-workspaces 2>err &&
	grep "index record of c2 is corrupt" err &&
	store put conversations c2 hex:$rec &&
	aptix usage --all-workspaces >out &&
	test_cmp before out
'

test_expect_success PYTHON3 'records of older versions: the same answer, from the turns' '
	aptix usage --all-workspaces --json >before-conv.json &&
	for c in c1 c2
	do
		store put conversations $c hex:$(store conv-v1 hex:$(store get conversations $c)) || return 1
	done &&
	aptix usage --all-workspaces >out &&
	test_cmp before out &&
	aptix usage --all-workspaces --json >out.json &&
	test_cmp before-conv.json out.json &&
	aptix reindex -q &&
	store get conversations c1 | grep "^03" &&
	aptix usage --all-workspaces >out &&
	test_cmp before out
'

test_expect_success 'a snapshot that repeats its parent turn counts once' '
	turn=$(object_field $b1 turn) &&
	again=$(aptix commit-session -p $b1 $turn) &&
	aptix update-ref refs/conversations/c2 $again $b1 &&
	aptix usage --all-workspaces >out 2>/dev/null &&
	test_cmp before out &&
	aptix usage --all-workspaces --since @1 >out 2>/dev/null &&
	test_cmp before out &&
	aptix fsck &&
	aptix fsck --full
'

test_expect_success 'five models in one conversation: summed from the sessions' '
	p= &&
	for m in m1 m2 m3 m4 m5
	do
		s=$(used_turn c5 $m 100 0 1 $p) &&
		p=$s || return 1
	done &&
	aptix update-ref refs/conversations/c5 $p &&
	# unknown: flags 0, no model, then the checksum
	store get conversations c5 | grep "0000[0-9a-f]\{8\}$" &&
	aptix usage -c c5 >out 2>/dev/null &&
	test "$(row c5)" = "c5 5 500 0 5 505 unknown" &&
	aptix fsck
'

test_expect_success '--forks: forks below their conversation, with what the tree spent' '
	f1=$(used_turn f1 gpt-5-mini 100 0 10 $a1) &&
	aptix update-ref refs/conversations/f1 $f1 &&
	test_tick &&
	f2=$(used_turn f2 gpt-5-mini 100 0 10 $f1) &&
	aptix update-ref refs/conversations/f2 $f2 &&
	aptix usage -c c1 --forks >out 2>err &&
	sed -e "s/ *\$//" -e "s/  */ /g" out >rows &&
	cat >expect <<-\EOF &&
	CONVERSATION TURNS INPUT CACHED OUTPUT TOTAL COST TITLE
	c1 2 3000000 200000 1100000 4100000 $12.9050 turn 1 of c1
	 f1 1 100 0 10 110 <$0.0001 turn 2 of f1
	 f2 1 100 0 10 110 <$0.0001 turn 3 of f2
	 f1 +forks 2 200 0 20 220 $0.0001
	c1 +forks 4 3000200 200000 1100020 4100220 $12.9051
	total 4 3000200 200000 1100020 4100220 $12.9051
	EOF
	test_cmp expect rows &&
	grep "^    f2 " out &&
	aptix usage -c f1 --forks >out &&
	grep "^total  *2 " out &&
	! grep "^c1" out &&
	# without --forks, a conversation is itself alone
	aptix usage -c c1 >out &&
	grep "^total  *2 " out &&
	aptix usage --all-workspaces --forks >out 2>/dev/null &&
	grep "^c1 +forks  *4 " out &&
	grep "^c2  *1 " out &&
	! grep "^c2 +forks" out
'

test_expect_success PYTHON3 '--forks --json: where each came from, and the subtree' '
	aptix usage -c c1 --forks --json >out &&
	python3 -c "
import json
d = json.load(open(\"out\"))
c = {x[\"conversation\"]: x for x in d[\"conversations\"]}
assert [x[\"conversation\"] for x in d[\"conversations\"]] == [\"c1\", \"f1\", \"f2\"], d
assert c[\"c1\"][\"forked_from\"] is None
assert c[\"f1\"][\"forked_from\"] == {\"conversation\": \"c1\", \"session\": \"$a1\"}, c[\"f1\"]
assert c[\"f2\"][\"forked_from\"][\"session\"] == \"$f1\"
assert (c[\"c1\"][\"forks\"], c[\"f1\"][\"forks\"], c[\"f2\"][\"forks\"]) == (2, 1, 0)
assert c[\"c1\"][\"subtree\"][\"turns\"] == 4 and c[\"f1\"][\"subtree\"][\"input_tokens\"] == 200
assert d[\"total\"][\"turns\"] == 4
"
'

test_expect_success 'usage -h' '
	test_expect_code 129 aptix usage -h >out &&
	grep "^usage: aptix usage" out &&
	aptix help >help &&
	grep "^   usage  *tokens spent and their estimated cost$" help
'

test_done
