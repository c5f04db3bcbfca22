#!/bin/sh
test_description='history queries: log -S, --grep, --since/--until,
A..B and ^A, log -p, show --format, one-argument diff, diff of answers
and of file contents'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# file_json <content-blob> <sha-digit>: one active file, src/a.c
file_json () {
	printf '[{"binary":false,"content":"%s","path":"src/a.c","sent":true,"sha256":"%s","size":20,"too_large":false,"touched":false}]' \
		"$1" "$(printf "%064d" 0 | tr 0 "$2")"
}

# log_ids <args>: the short ids log shows, one a line
log_ids () {
	aptix log --format=%h "$@"
}

# short <id>...: their 12-digit abbreviations
short () {
	for id
	do
		printf '%s\n' "$id" | cut -c1-12
	done
}

#   c1:  a1 --- a2 --- a3 --- a4   (HEAD -> c1), one minute apart
#   c2:  b1                        (c2), the newest
test_expect_success setup '
	aptix init -q &&
	old=$(make_blob "one
two
three
four
five
six
seven
eight
nine
ten") &&
	new=$(make_blob "one
two
THREE
four
five
six
seven
eight
nine
ten
eleven") &&
	test_tick && a1=$(make_answered c1 "write a parser" "Use recursive descent.
It is simple.") &&
	test_tick && a2=$(make_answered c1 "add tests please" \
		"Here are tests for FooBar" $a1) &&
	test_tick && a3=$(make_answered c1 "third step" "done" $a2 \
		"$(file_json $old 1)") &&
	test_tick && a4=$(make_answered c1 "fourth step" "done
and more" $a3 "$(file_json $new 2)") &&
	test_tick && b1=$(make_answered c2 "unrelated" "nothing here") &&
	aptix update-ref refs/conversations/c1 $a4 &&
	aptix update-ref refs/conversations/c2 $b1 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success 'log -S: a text in the instruction or the answer' '
	log_ids -S FooBar >out &&
	short $a2 >expect &&
	test_cmp expect out &&
	log_ids -S parser >out &&
	short $a1 >expect &&
	test_cmp expect out &&
	log_ids -S foobar >out &&
	test_must_be_empty out &&
	log_ids -i -S foobar >out &&
	short $a2 >expect &&
	test_cmp expect out &&
	log_ids --all -S ere >out &&
	short $b1 $a2 >expect &&
	test_cmp expect out
'

test_expect_success 'log --grep: POSIX regexes, -i, -E, any of several' '
	log_ids --grep "recursive.*descent" >out &&
	short $a1 >expect &&
	test_cmp expect out &&
	log_ids --grep "^done$" >out &&
	short $a4 $a3 >expect &&
	test_cmp expect out &&
	log_ids --grep "TESTS" >out &&
	test_must_be_empty out &&
	log_ids --regexp-ignore-case --grep "TESTS" >out &&
	short $a2 >expect &&
	test_cmp expect out &&
	log_ids -E --grep "(third|fourth) step" >out &&
	short $a4 $a3 >expect &&
	test_cmp expect out &&
	log_ids --grep third --grep parser >out &&
	short $a3 $a1 >expect &&
	test_cmp expect out &&
	test_must_fail aptix log --grep "a[" 2>err &&
	grep "^fatal: invalid --grep pattern" err &&
	test_must_fail aptix log --graph --grep x 2>err &&
	grep "cannot be used with .--graph." err
'

test_expect_success 'log --since/--until: ISO dates, relative ones, @seconds' '
	log_ids --since "3 minutes ago" >out &&
	short $a4 $a3 $a2 >expect &&
	test_cmp expect out &&
	log_ids --since 3.minutes.ago --until "2 minutes ago" >out &&
	short $a3 $a2 >expect &&
	test_cmp expect out &&
	log_ids --since 2023-11-14T22:14:20Z --until @1700000120 >out &&
	short $a3 $a2 >expect &&
	test_cmp expect out &&
	log_ids --all --since yesterday >out &&
	test_line_count = 5 out &&
	log_ids --all --after "1 min ago" >out &&
	short $b1 $a4 >expect &&
	test_cmp expect out &&
	test_must_fail aptix log --since "next tuesday" 2>err &&
	grep "invalid date .next tuesday." err
'

test_expect_success 'ranges: A..B and ^A, as in git' '
	log_ids $a2..c1 >out &&
	short $a4 $a3 >expect &&
	test_cmp expect out &&
	log_ids ^$a2 c1 >out &&
	test_cmp expect out &&
	log_ids $a2.. >out &&
	test_cmp expect out &&
	log_ids c1..c2 >out &&
	short $b1 >expect &&
	test_cmp expect out &&
	log_ids c1..c1 >out &&
	test_must_be_empty out &&
	log_ids --all ^c1 >out &&
	short $b1 >expect &&
	test_cmp expect out &&
	test_must_fail aptix log nosuch..c1 2>err &&
	grep "^fatal: " err
'

test_expect_success 'log -p: the answer under each entry' '
	aptix log -p -n2 --format="%H %s" >out &&
	cat >expect <<-EOF &&
	$a4 fourth step

	Answer:
	    done
	    and more
	$a3 third step

	Answer:
	    done
	EOF
	test_cmp expect out &&
	aptix log -p -n1 >out &&
	grep "^Answer:$" out &&
	grep "^    and more$" out &&
	aptix log --oneline -p -n1 $a1 >out &&
	grep "^    It is simple.$" out
'

test_expect_success 'show --format: only the answer, as llm logs -r' '
	aptix show --format=%A >out &&
	printf "done\nand more\n" >expect &&
	test_cmp expect out &&
	aptix show --format=%A $a1 >out &&
	printf "Use recursive descent.\nIt is simple.\n" >expect &&
	test_cmp expect out &&
	aptix show --format="%h %I" $a1 $a2 >out &&
	cat >expect <<-EOF &&
	$(short $a2) add tests please
	$(short $a1) write a parser
	EOF
	test_cmp expect out &&
	aptix log --no-walk --format="%h %I" $a1 $a2 >log &&
	test_cmp out log &&
	test_must_fail aptix show --format=%A --json 2>err &&
	grep "cannot be used with --json" err
'

test_expect_success 'diff <session>: against its parent' '
	aptix diff c1~1 c1 >expect &&
	aptix diff c1 >out &&
	test_cmp expect out &&
	test_must_fail aptix diff $a1 2>err &&
	grep "no parent to compare with" err
'

test_expect_success 'diff: answers line by line, file contents with -p' '
	aptix diff -p $a3 $a4 >out &&
	cat >expect <<-EOF &&
	diff $(short $a3) $(short $a4)
	Instructions:
	  - third step
	  + fourth step
	Answers:
	  @@ -1,1 +1,2 @@
	   done
	  +and more
	Model: same (gpt-5-mini)
	Previous response id: same
	Chain restarted: same (no)
	Files: 0 added, 0 removed, 1 changed
	  M src/a.c (sha256 111111111111 -> 222222222222)
	    @@ -1,6 +1,6 @@
	     one
	     two
	    -three
	    +THREE
	     four
	     five
	     six
	    @@ -8,3 +8,4 @@
	     eight
	     nine
	     ten
	    +eleven
	Chunks: same (0)
	EOF
	test_cmp expect out &&
	aptix diff $a3 $a4 >out &&
	! grep "^    @@" out &&
	aptix diff $a3 $a3 >out &&
	grep "^Answers: same$" out &&
	aptix diff --json $a3 $a4 >out &&
	grep "\"answers\"" out
'

test_done
