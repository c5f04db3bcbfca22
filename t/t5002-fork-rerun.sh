#!/bin/sh
test_description='aptix fork and aptix rerun against the OpenAI stand-in

A fork chains from the session it starts at, not from the head; a fork
without -m only moves HEAD; a rerun asks the same question again as a
sibling of the session, in a new conversation, leaving the old one as
it was; log --graph draws the branches.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

field () {
	aptix show --json "$1" | json_field "$2"
}

test_expect_success 'setup: three turns in one conversation' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	aptix continue -m "question A" >/dev/null 2>&1 &&
	aptix continue -m "question B" >/dev/null 2>&1 &&
	aptix continue -m "question C" >/dev/null 2>&1 &&
	A=$(aptix rev-parse HEAD~2) &&
	B=$(aptix rev-parse HEAD~1) &&
	C=$(aptix rev-parse HEAD) &&
	rA=$(field $A .response_id) &&
	rB=$(field $B .response_id) &&
	rC=$(field $C .response_id) &&
	test "$(request_count)" = 3 &&
	aptix show --json $C >C.before
'

test_expect_success 'fork -m from an old session chains from that session' '
	aptix fork HEAD~1 -m "fork question" >out 2>err &&
	grep "^Answer #4 to: fork question (chain depth 3, " out &&
	test "$(request_count)" = 4 &&
	request_body 4 >body &&
	test "$(json_field .previous_response_id <body)" = "$rB" &&
	test "$(json_field .previous_response_id <body)" != "$rC" &&
	test "$(json_field .input[0].content <body)" = "fork question"
'

test_expect_success 'fork -m: HEAD moves to the new conversation' '
	F=$(aptix rev-parse HEAD) &&
	fconv=$(aptix symbolic-ref --short HEAD) &&
	test "$fconv" != "$conv" &&
	test "$(field HEAD .conversation)" = "$fconv" &&
	test "$(field HEAD .parent)" = "$B" &&
	test "$(field HEAD .forked_from)" = "$conv" &&
	test "$(field HEAD .seq)" = 3 &&
	test "$(field HEAD .previous_response_id)" = "$rB" &&
	test "$(aptix rev-parse refs/conversations/$fconv)" = "$F" &&
	# the old conversation did not move
	test "$(aptix rev-parse refs/conversations/$conv)" = "$C" &&
	grep -E "^\[$(printf %.8s "$fconv") [0-9a-f]{12}\] [0-9]+ tokens" err &&
	grep "^Switched to a new conversation .$fconv.$" err
'

test_expect_success 'fork without -m switches HEAD and sends nothing' '
	n=$(request_count) &&
	aptix fork $A >out 2>err &&
	test "$(request_count)" = "$n" &&
	pconv=$(aptix symbolic-ref --short HEAD) &&
	test "$pconv" != "$conv" &&
	test "$pconv" != "$fconv" &&
	grep "^Switched to a new conversation .$pconv., forked from session $(printf %.12s $A)" out &&
	test "$(aptix rev-parse HEAD)" = "$A"
'

test_expect_success 'continue after a plain fork commits into the new conversation' '
	aptix continue -m "after plain fork" >out 2>err &&
	grep "^Answer #5 to: after plain fork (chain depth 2, " out &&
	test "$(last_request_body | json_field .previous_response_id)" = "$rA" &&
	P=$(aptix rev-parse HEAD) &&
	test "$P" != "$A" &&
	test "$(aptix symbolic-ref --short HEAD)" = "$pconv" &&
	test "$(aptix rev-parse refs/conversations/$pconv)" = "$P" &&
	test "$(field HEAD .conversation)" = "$pconv" &&
	test "$(field HEAD .parent)" = "$A" &&
	test "$(field HEAD .seq)" = 2 &&
	aptix log --oneline >log &&
	test_line_count = 2 log &&
	grep "after plain fork" log &&
	grep "question A" log &&
	test "$(aptix rev-parse refs/conversations/$conv)" = "$C"
'

test_expect_success 'rerun: same instruction, sibling of the session, new conversation' '
	aptix rerun $C >out 2>err &&
	grep "^Answer #6 to: question C (chain depth 3, " out &&
	request_body 6 >body &&
	test "$(json_field .input[0].content <body)" = "question C" &&
	test "$(json_field .previous_response_id <body)" = "$rB" &&
	R=$(aptix rev-parse HEAD) &&
	rconv=$(aptix symbolic-ref --short HEAD) &&
	test "$R" != "$C" &&
	test "$rconv" != "$conv" &&
	test "$rconv" != "$fconv" &&
	test "$rconv" != "$pconv" &&
	test "$(field $R .parent)" = "$B" &&
	test "$(field $R .conversation)" = "$rconv" &&
	test "$(field $R .instruction)" = "question C" &&
	test "$(field $R .instruction_id)" = "$(field $C .instruction_id)" &&
	test "$(field $R .seq)" = 3 &&
	grep "^Switched to a new conversation .$rconv.$" err
'

test_expect_success 'rerun leaves the old session and its conversation untouched' '
	test "$(aptix rev-parse refs/conversations/$conv)" = "$C" &&
	aptix show --json $C >C.after &&
	test_cmp C.before C.after &&
	aptix log --oneline $conv >log &&
	test_line_count = 3 log
'

test_expect_success 'rerun of a first turn: no parent, no previous response' '
	aptix rerun $A >out 2>err &&
	grep "^Answer #7 to: question A (chain depth 1, " out &&
	! last_request_body | grep previous_response_id &&
	test "$(field HEAD .parent)" = null &&
	test "$(field HEAD .seq)" = 1
'

test_expect_success MDB_DUMP 'rerun --dry-run and fork --dry-run change nothing' '
	n=$(request_count) &&
	objects=$(object_count) &&
	head=$(aptix symbolic-ref HEAD) &&
	aptix rerun --dry-run $C >out &&
	grep "Bearer <redacted>" out &&
	grep "\"previous_response_id\": \"$rB\"" out &&
	grep "\"content\": \"question C\"" out &&
	aptix fork --dry-run -m "dry fork" $B >out &&
	grep "\"previous_response_id\": \"$rB\"" out &&
	test "$(request_count)" = "$n" &&
	test "$(object_count)" = "$objects" &&
	test "$(aptix symbolic-ref HEAD)" = "$head"
'

# save_store <dir>: a copy of every file of the store but lock.mdb
# (LMDB's table of readers, which any reader writes)
save_store () {
	rm -rf "$1" &&
	mkdir "$1" &&
	(cd .aptix && find . ! -name lock.mdb | sort) >"$1.list" &&
	(cd .aptix && tar cf - --exclude=./lock.mdb .) | (cd "$1" && tar xf -)
}

# same_store <dir>: the store's files are those save_store saved,
# byte for byte
same_store () {
	(cd .aptix && find . ! -name lock.mdb | sort) >now.list &&
	test_cmp "$1.list" now.list &&
	(cd .aptix && find . -type f ! -name lock.mdb) >files &&
	while read -r f
	do
		cmp "$1/$f" ".aptix/$f" || return 1
	done <files
}

test_expect_success 'every --dry-run leaves every file of the store as it was' '
	aptix config openai.model gpt-5 &&
	n=$(request_count) &&
	save_store before &&
	for cmd in "continue --dry-run -m dry" \
		"continue --dry-run --json -m dry" \
		"continue --dry-run --no-stream -m dry" \
		"fork --dry-run $B" "fork --dry-run --json $B" \
		"fork --dry-run -m dry $B" "fork --dry-run --json -m dry $B" \
		"rerun --dry-run $C" "rerun --dry-run --json $C"
	do
		aptix $cmd >out 2>err &&
		same_store before || { echo "changed by: $cmd" >&2; return 1; }
	done &&
	test "$(request_count)" = "$n"
'

test_expect_success '--dry-run --json prints exactly one JSON object' '
	for cmd in "continue --dry-run --json -m dry" \
		"fork --dry-run --json $B" "fork --dry-run --json -m dry $B" \
		"rerun --dry-run --json $C"
	do
		aptix $cmd >out &&
		python3 -c "import json, sys; o = json.load(sys.stdin); \
assert isinstance(o, dict) and o[\"dry_run\"] is True" <out ||
		{ echo "not one JSON object: $cmd" >&2; cat out >&2; return 1; }
	done &&
	aptix continue --dry-run --json -m "dry as json" >out &&
	grep "\"Authorization\": \"Bearer <redacted>\"" out &&
	grep "\"content\": \"dry as json\"" out
'

test_expect_success 'fork and rerun need a session' '
	n=$(request_count) &&
	test_must_fail aptix fork -m "x" "$C^{turn}" 2>err &&
	grep "is a turn, not a session" err &&
	test_must_fail aptix rerun "$C^{turn}" 2>err &&
	grep "is a turn, not a session" err &&
	test_must_fail aptix rerun no-such-thing 2>err &&
	test_must_fail aptix fork 2>err &&
	test "$(request_count)" = "$n"
'

test_expect_success 'log --graph --oneline --all shows the branches' '
	aptix log --graph --oneline --all >graph &&
	cat graph &&
	# one node per session: A B C, fork, after-fork, two reruns
	test "$(grep -c "^[| ]*[*o]" graph)" = 7 &&
	# branches join their parent
	grep "^|/" graph &&
	# every session once
	for s in $A $B $C $F $P $R
	do
		test "$(grep -c "$(printf %.12s $s)" graph)" = 1 || return 1
	done &&
	# the fork base B has the fork and the rerun as children: two
	# branches close right above it
	awk -v b="$(printf %.12s $B)" "
		index(\$0, b) { print prev2; print prev; exit }
		{ prev2 = prev; prev = \$0 }
	" graph >above-B &&
	grep "/" above-B &&
	# A is drawn last: the oldest session of every branch
	tail -n 1 graph | grep "$(printf %.12s $A) question A$"
'

test_expect_success 'log --oneline of the fork shows its ancestry' '
	aptix log --oneline $fconv >log &&
	sed -e "s/^[0-9a-f]\{12\} //" -e "s/^([^)]*) //" log >actual &&
	test_write_lines "fork question" "question B" "question A" >expect &&
	test_cmp expect actual
'

test_expect_success 'rerun --recorded-context sends the files as they were' '
	echo "version one" >ctx.txt &&
	aptix continue -q --file ctx.txt -m "look at ctx" >out 2>err &&
	orig=$(aptix rev-parse HEAD) &&
	last_request_body >body-orig &&
	echo "version two" >ctx.txt &&
	aptix rerun -q --recorded-context $orig >out 2>err &&
	last_request_body >body-rerun &&
	grep "version one" body-rerun &&
	! grep "version two" body-rerun &&
	test "$(json_field ".input" <body-rerun)" = \
		"$(json_field ".input" <body-orig)" &&
	aptix show --json >show &&
	test "$(json_field ".files[0].sha256" <show)" = \
		"$(aptix show --json $orig | json_field ".files[0].sha256")" &&
	aptix rerun -q --file ctx.txt $orig >out 2>err &&
	last_request_body | grep "version two" &&
	test_expect_code 129 aptix rerun --recorded-context --no-files \
		$orig 2>err &&
	grep "takes no context option" err
'

test_done
