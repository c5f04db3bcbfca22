#!/bin/sh
test_description='aptix cat-object'
. "$(dirname "$0")"/test-lib.sh

test_expect_success setup '
	aptix init -q &&
	printf "hello\n" >hello &&
	hello=$(aptix hash-object -w hello) &&
	printf "Explain the parser\n" | aptix hash-object -w --stdin >instr &&
	printf "{\"conversation\":\"c1\",\"created_at\":1700000000000,\"instruction\":\"%s\",\"seq\":1,\"status\":\"pending\",\"status_at\":1700000000000,\"usage\":{\"cached_tokens\":0,\"input_tokens\":0,\"model_requests\":0,\"output_tokens\":0,\"reasoning_tokens\":0,\"total_tokens\":0},\"v\":1}\n" $(cat instr) >turn &&
	turn=$(aptix hash-object -w -t turn turn)
'

test_expect_success '-t, -s, -e and <type>' '
	test "$(aptix cat-object -t $hello)" = blob &&
	test "$(aptix cat-object -s $hello)" = 6 &&
	aptix cat-object -e $hello &&
	test "$(aptix cat-object -t $turn)" = turn &&
	aptix cat-object blob $hello >out &&
	test_cmp hello out
'

test_expect_success 'abbreviated ids' '
	short=$(echo $hello | cut -c1-8) &&
	aptix cat-object -p $short >out &&
	test_cmp hello out &&
	test_must_fail aptix cat-object -p abc 2>err &&
	grep "^fatal:" err
'

test_expect_success '-e on a missing object exits 1 quietly' '
	test_expect_code 1 aptix cat-object -e 0000000000000000000000000000000000000000000000000000000000000001 2>err &&
	test_must_be_empty err
'

test_expect_success 'the wrong type is an error' '
	test_must_fail aptix cat-object turn $hello 2>err &&
	grep "is a blob, not a turn" err
'

test_expect_success '-p shows the fields of a turn and the ids it references' '
	aptix cat-object -p $turn >out &&
	grep "^status  *pending" out &&
	grep "^conversation  *c1" out &&
	grep "^instruction  *$(cat instr)" out
'

test_expect_success '--batch-check and --batch' '
	printf "%s\n%s\nffffffff\nHEAD\n" $hello $turn | aptix cat-object --batch-check >out &&
	cat >expect <<-EOF &&
	$hello blob 6
	$turn turn $(wc -c <turn)
	ffffffff missing
	HEAD missing
	EOF
	test_cmp expect out &&
	echo $hello | aptix cat-object --batch >out &&
	printf "%s blob 6\nhello\n\n" $hello >expect &&
	test_cmp expect out
'

test_expect_success '--batch reports ambiguous names' '
	mkdir many &&
	for i in $(test_seq 1 1000)
	do
		echo $i >many/$i || return 1
	done &&
	ls many/* | aptix hash-object -w --stdin-paths >ids &&
	pre=$(cut -c1-4 ids | sort | uniq -d | head -n1) &&
	test -n "$pre" &&
	echo $pre | aptix cat-object --batch-check >out &&
	echo "$pre ambiguous" >expect &&
	test_cmp expect out
'

test_expect_success '--batch-all-objects lists every object in id order' '
	aptix cat-object --batch-check --batch-all-objects >out &&
	test_line_count = 1003 out &&
	cut -d" " -f1 out >ids-listed &&
	sort ids-listed >sorted &&
	test_cmp sorted ids-listed
'

test_expect_success 'a corrupted stored object is named, not a crash' '
	mdb_dump -s objects .aptix >dump &&
	key=$(echo $hello) &&
	awk -v k=" $key" "prev == k { print \" 8106ffffffff\"; prev = \"\"; next } { prev = \$0; print }" dump >dump2 &&
	! cmp dump dump2 &&
	mdb_load -s objects -f dump2 .aptix &&
	test_must_fail aptix cat-object -e $hello &&
	test_must_fail aptix cat-object -p $hello 2>err &&
	grep "fatal:" err &&
	echo $hello | aptix cat-object --batch >out 2>err &&
	grep "corrupt" out
'

test_done
