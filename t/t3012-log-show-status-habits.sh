#!/bin/sh
test_description='git habits of log, show and status

log --decorate/--no-decorate, --pretty, %ar %as %b %B, -- <path> (the
turns that sent a file), -g/--walk-reflogs with %gd %gs, --skip,
--first-parent; show -s/--no-patch and --stat; status -s/--short,
--porcelain and -b.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

short () {
	echo "$1" | cut -c1-12
}

#   conv:  s1 (sends a.c) - s2 (sends b.txt) - s3 (a.c unchanged)
#          - s4 (a.c changed: sent) - [failed f5]
test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	mkdir src &&
	echo "int a;" >src/a.c &&
	echo b >b.txt &&
	test_tick &&
	aptix continue -q --no-rag --file src/a.c -m "look at a" &&
	test_tick &&
	aptix continue -q --no-rag --file b.txt -m "look at b" &&
	test_tick &&
	aptix continue -q --no-rag --file src/a.c -m "a again" &&
	echo "int a2;" >src/a.c &&
	test_tick &&
	aptix continue -q --no-rag --file src/a.c -m "a changed

with a body line" &&
	s1=$(aptix rev-parse HEAD~3) && s2=$(aptix rev-parse HEAD~2) &&
	s3=$(aptix rev-parse HEAD~1) && s4=$(aptix rev-parse HEAD) &&
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	test_tick &&
	test_must_fail aptix continue -q --no-rag -m "this one fails" 2>/dev/null &&
	standin_reset &&
	f5=$(aptix log --all --format="%H %S" | sed -n "s/ failed$//p") &&
	test -n "$f5"
'

test_expect_success 'log -- <path>: the turns that sent that file' '
	cat >expect <<-EOF &&
	$(short $s4) a changed
	$(short $s1) look at a
	EOF
	aptix log --format="%h %s" -- src/a.c >actual &&
	test_cmp expect actual &&
	aptix log --format="%h %s" -- src >actual &&
	test_cmp expect actual &&
	aptix log --format="%h %s" -- ./src/ >actual &&
	test_cmp expect actual &&
	echo "$(short $s2) look at b" >expect &&
	aptix log --format="%h %s" -- b.txt >actual &&
	test_cmp expect actual &&
	aptix log --format="%h %s" -- nosuch >actual &&
	test_must_be_empty actual &&
	aptix log --format="%h" -- src/a.c b.txt >actual &&
	test_line_count = 3 actual
'

test_expect_success 'log -- <path>: relative to the current directory, as in git' '
	cat >expect <<-EOF &&
	$(short $s4) a changed
	$(short $s1) look at a
	EOF
	(
		cd src &&
		aptix log --format="%h %s" -- a.c >../actual &&
		aptix log --format="%h %s" -- ../src/a.c >../actual2 &&
		aptix log --format="%h %s" -- "$TRASH_DIRECTORY/src/a.c" >../actual3 &&
		aptix log --format="%h %s" -- b.txt >../none &&
		aptix log --format="%h" -- .. >../all
	) &&
	test_cmp expect actual &&
	test_cmp expect actual2 &&
	test_cmp expect actual3 &&
	test_must_be_empty none &&
	test_line_count = 3 all
'

test_expect_success 'log --decorate, --no-decorate, --decorate=full; log.decorate, auto as git' '
	# auto (the default) names conversations on a terminal only
	aptix log --oneline -n1 >actual &&
	echo "$(short $s4) a changed" >expect &&
	test_cmp expect actual &&
	aptix log --oneline --decorate=auto -n1 >actual &&
	test_cmp expect actual &&
	if script -qec "test -t 1" /dev/null </dev/null
	then
		script -qec "aptix log --oneline -n1 --color=never" /dev/null \
			</dev/null | tr -d "\r" >actual &&
		echo "$(short $s4) (HEAD -> ${conv%"${conv#????????}"}) a changed" >expect &&
		test_cmp expect actual
	fi &&
	aptix -c log.decorate=short log --oneline -n1 >actual &&
	echo "$(short $s4) (HEAD -> ${conv%"${conv#????????}"}) a changed" >expect &&
	test_cmp expect actual &&
	aptix -c log.decorate=short log --oneline --no-decorate -n1 >actual &&
	echo "$(short $s4) a changed" >no &&
	test_cmp no actual &&
	test_must_fail aptix config log.decorate sideways 2>err &&
	grep "log.decorate" err &&
	aptix log --oneline --decorate -n1 >actual &&
	test_cmp expect actual &&
	aptix log --oneline --no-decorate -n1 >actual &&
	echo "$(short $s4) a changed" >expect &&
	test_cmp expect actual &&
	aptix log --oneline --decorate=full -n1 >actual &&
	echo "$(short $s4) (HEAD -> refs/conversations/$conv) a changed" >expect &&
	test_cmp expect actual &&
	aptix log --no-decorate -n1 >actual &&
	head -n1 actual >first &&
	echo "session $s4" >expect &&
	test_cmp expect first &&
	test_expect_code 129 aptix log --decorate=sideways 2>err &&
	grep "invalid --decorate value" err
'

test_expect_success 'log --pretty is --format; alone it is medium' '
	aptix log --format="%h %s" >expect &&
	aptix log --pretty="%h %s" >actual &&
	test_cmp expect actual &&
	aptix log --pretty=format:"%h %s" >actual &&
	test_cmp expect actual &&
	aptix log --pretty=oneline >actual &&
	aptix log --oneline >expect &&
	test_cmp expect actual &&
	aptix log --pretty >actual &&
	aptix log >expect &&
	test_cmp expect actual
'

test_expect_success 'placeholders %ar %as %b %B' '
	APTIX_TEST_DATE=$((APTIX_TEST_DATE + 7200)) \
		aptix log -n1 --no-walk --format="%ar|%as" $s4 >actual &&
	echo "2 hours ago|2023-11-14" >expect &&
	test_cmp expect actual &&
	aptix log -n1 --format="[%b]" $s4 >actual &&
	echo "[with a body line]" >expect &&
	test_cmp expect actual &&
	aptix log -n1 --format="%B" $s4 >actual &&
	printf "a changed\n\nwith a body line\n" >expect &&
	test_cmp expect actual &&
	aptix log -n1 --format="[%b]" $s1 >actual &&
	echo "[]" >expect &&
	test_cmp expect actual
'

test_expect_success 'log --skip, with -n and --reverse' '
	aptix log --format=%h --no-failed >all &&
	sed -n "3,4p" all >expect &&
	aptix log --format=%h --no-failed --skip=2 >actual &&
	test_cmp expect actual &&
	sed -n "2p" all >expect &&
	aptix log --format=%h --no-failed --skip 1 -n 1 >actual &&
	test_cmp expect actual &&
	sed -n "2,4p" all | awk "{ l[NR] = \$0 } END { for (i = NR; i; i--) print l[i] }" >expect &&
	aptix log --format=%h --no-failed --skip=1 --reverse >actual &&
	test_cmp expect actual &&
	test_expect_code 128 aptix log --skip=-1 2>err &&
	grep "skip" err
'

test_expect_success 'log --first-parent: the chain only, no failed attempt beside it' '
	aptix log --format=%H >actual &&
	grep "$f5" actual &&
	aptix log --first-parent --format=%H >actual &&
	! grep "$f5" actual &&
	test_line_count = 4 actual
'

test_expect_success 'log -g: the reflog, newest first, with its selector' '
	aptix reflog >reflog &&
	aptix log -g --oneline --decorate >actual &&
	test_line_count = $(wc -l <reflog) actual &&
	head -n1 actual >first &&
	echo "$(short $s4) (HEAD -> ${conv%"${conv#????????}"}) HEAD@{0}: continue: a changed" >expect &&
	test_cmp expect first &&
	aptix log --walk-reflogs --format="%h %gd %gs" -n2 >actual &&
	cat >expect <<-EOF &&
	$(short $s4) HEAD@{0} continue: a changed
	$(short $s3) HEAD@{1} continue: a again
	EOF
	test_cmp expect actual &&
	aptix log -g --format="%gD" -n1 $conv >actual &&
	echo "refs/conversations/$conv@{0}" >expect &&
	test_cmp expect actual &&
	aptix log -g -n1 >actual &&
	grep "^Reflog: HEAD@{0}$" actual &&
	grep "^Reflog message: continue: a changed$" actual &&
	aptix log -g --skip=3 --format=%H >actual &&
	echo $s1 >expect &&
	test_cmp expect actual &&
	aptix log --format="[%gd]" -n1 >actual &&
	echo "[]" >expect &&
	test_cmp expect actual &&
	test_expect_code 128 aptix log -g --graph 2>err &&
	grep "cannot be used" err
'

test_expect_success 'show -s / --no-patch: no answer, sources or files' '
	aptix show $s4 >full &&
	grep "^Answer:" full &&
	grep "^Active files:" full &&
	aptix show -s $s4 >actual &&
	grep "^session $s4" actual &&
	grep "^Instruction:" actual &&
	! grep "^Answer:" actual &&
	! grep "^Active files:" actual &&
	aptix show --no-patch $s4 >actual2 &&
	test_cmp actual actual2 &&
	aptix show -s --pretty=%H $s4 >actual &&
	echo $s4 >expect &&
	test_cmp expect actual
'

test_expect_success 'show --stat: a line per file sent, then a summary' '
	aptix show --stat $s4 >actual &&
	grep "^Instruction:" actual &&
	! grep "^Answer:" actual &&
	grep "^ src/a.c | *8 bytes sent$" actual &&
	grep "^ 1 file (1 sent, 8 bytes), 0 chunks (0 sent), answer 1 line (" actual &&
	aptix show --stat $s3 >actual &&
	grep "^ src/a.c | *7 bytes unchanged$" actual &&
	grep "^ 1 file (0 sent, 0 bytes)" actual
'

test_expect_success 'status -s, --porcelain, -b' '
	echo "int a3;" >src/a.c &&
	aptix status -s --file src/a.c --file b.txt >actual &&
	cat >expect <<-\EOF &&
	U  b.txt
	S  src/a.c
	EOF
	test_cmp expect actual &&
	aptix status --porcelain --file src/a.c --file b.txt >actual &&
	test_cmp expect actual &&
	aptix status --short -b --file b.txt >actual &&
	cat >expect <<-EOF &&
	## $conv $(short $s4) [failed $(short $f5)]
	U  b.txt
	EOF
	test_cmp expect actual &&
	aptix status --porcelain -b >actual &&
	echo "## $conv $s4 [failed $f5]" >expect &&
	test_cmp expect actual &&
	test_expect_code 128 aptix status -s --json 2>err &&
	grep "cannot be used together" err
'

test_expect_success 'stop the stand-in' '
	stop_standin
'

test_done
