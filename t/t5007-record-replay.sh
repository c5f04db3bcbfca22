#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='the recorder: recorded turns replayed through the plumbing

Real turns of aptix continue against the stand-in (active files of a git
work tree, a failed turn and its retry, a chain past its 16th turn, a
fork) are replayed from their objects alone through write-turn (--blob,
--parent) and commit-session into a fresh store. Both go through the
recorder, as continue does: the replay gives the same object ids, the
same stored values (the same bases and splices chosen), and the same
index records (sessions, timeline, children, conversations).'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq GIT || ! test_have_prereq JQ
then
	skip_all='python3 (for the stand-in), git and jq are needed'
	test_done
fi

store () {
	python3 "$TEST_DIRECTORY/lib-store.py" "$@"
}

turn () {
	aptix -C ws continue -q --no-stream -m "$1"
}

test_expect_success 'setup: turns of continue in a git work tree' '
	start_standin &&
	git init -q ws &&
	(
		cd ws &&
		printf "int main(void)\n{\n\treturn 0;\n}\n" >main.c &&
		git add main.c &&
		git commit -q -m initial &&
		aptix init -q
	) &&
	printf "int main(void)\n{\n\t/* v1 */\n\treturn util();\n}\n" >ws/main.c &&
	echo "int util(void) { return 1; }" >ws/util.c &&
	turn "first question about main" &&
	first=$(aptix -C ws rev-parse HEAD) &&
	printf "int main(void)\n{\n\t/* v2 */\n\treturn util() + 1;\n}\n" >ws/main.c &&
	turn "second question: what changed in main" &&
	second=$(aptix -C ws rev-parse HEAD) &&
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	test_must_fail turn "this one fails" &&
	test "$(aptix -C ws rev-parse HEAD)" = "$second" &&
	for i in 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17
	do
		echo "int util(void) { return $i; }" >ws/util.c &&
		turn "question $i about util" || return 1
	done &&
	test "$(aptix -C ws show --json HEAD | jq .seq)" = 17 &&
	aptix -C ws fork -q --no-stream -m "a fork from the second turn" \
		"$second" &&
	conv=$(aptix -C ws symbolic-ref --short HEAD) &&
	aptix -C ws show --json HEAD >fork.json &&
	test "$(jq -r .parent fork.json)" = "$second" &&
	S=$(aptix -C ws rev-parse --aptix-dir) &&
	store "$S" keys timeline | cut -c17- >sessions &&
	test_line_count = 19 sessions
'

# replay <session>: write its turn (with every blob it names, against
# its parent) and the session into the store of replay; the ids printed
# must be those of the original
replay () {
	local sid=$1 t p got
	aptix -C ws cat-object session "$sid" >s.json &&
	t=$(jq -r .turn s.json) &&
	p=$(jq -r ".parent // empty" s.json) &&
	aptix -C ws cat-object turn "$t" >t.json &&
	jq -r "[.instruction, .answer, .request, .response,
		(.files // [] | .[].content), (.chunks // [] | .[].snippet)] |
		.[] | select(. != null)" t.json | sort -u >blobs &&
	set -- &&
	while read -r b
	do
		aptix -C ws cat-object blob "$b" >"blob.$b" &&
		set -- "$@" --blob "$PWD/blob.$b" || return 1
	done <blobs &&
	got=$(aptix -C replay write-turn -F "$PWD/t.json" ${p:+-p "$p"} "$@") &&
	test "$got" = "$t" &&
	got=$(aptix -C replay commit-session --stdin <s.json) &&
	test "$got" = "$sid"
}

test_expect_success 'every session replays to its own id' '
	aptix init -q replay &&
	R=$(aptix -C replay rev-parse --aptix-dir) &&
	cp sessions pending &&
	while test -s pending
	do
		: >later &&
		while read -r s
		do
			p=$(aptix -C ws cat-object session "$s" |
				jq -r ".parent // empty") &&
			if test -n "$p" &&
			   ! aptix -C replay cat-object -e "$p" 2>/dev/null
			then
				echo "$s" >>later
			else
				replay "$s" || return 1
			fi
		done <pending &&
		! test_cmp pending later >/dev/null &&
		mv later pending || return 1
	done &&
	for r in $(aptix -C ws for-each-ref --format="%(objectname) %(refname)" |
		tr " " ":")
	do
		aptix -C replay update-ref "${r#*:}" "${r%%:*}" || return 1
	done &&
	aptix -C replay symbolic-ref HEAD "$(aptix -C ws symbolic-ref HEAD)"
'

test_expect_success 'the same objects, stored alike' '
	aptix -C ws cat-object --batch-check --batch-all-objects >expect &&
	aptix -C replay cat-object --batch-check --batch-all-objects >actual &&
	test_cmp expect actual &&
	store "$S" values objects >expect &&
	store "$R" values objects >actual &&
	test_cmp expect actual &&
	grep -c . expect >count &&
	test "$(cat count)" -gt 60
'

test_expect_success 'the same index records' '
	for table in sessions timeline children conversations
	do
		store "$S" values $table >expect.$table &&
		store "$R" values $table >actual.$table &&
		test_cmp expect.$table actual.$table || return 1
	done &&
	test_line_count = 19 expect.timeline &&
	test_line_count = 2 expect.conversations
'

test_expect_success 'the replayed store reads as the original' '
	aptix -C ws log --all --oneline >expect &&
	aptix -C replay log --all --oneline >actual &&
	test_cmp expect actual &&
	aptix -C replay fsck --full
'

test_done
