#!/bin/sh
test_description='aptix hash-object'
. "$(dirname "$0")"/test-lib.sh

test_expect_success setup '
	aptix init -q &&
	printf "hello\n" >hello &&
	printf "world\n" >world &&
	printf "" >empty
'

test_expect_success 'ids match git sha256 object ids' '
	aptix hash-object hello world empty >actual &&
	if test_have_prereq GIT
	then
		git init -q --object-format=sha256 g &&
		git -C g hash-object ../hello ../world ../empty >expect &&
		test_cmp expect actual
	fi &&
	test_line_count = 3 actual
'

test_expect_success 'without -w nothing is stored, and no store is needed' '
	(cd / && aptix hash-object "$TRASH_DIRECTORY/hello") &&
	test_must_fail aptix cat-object -e $(aptix hash-object hello)
'

test_expect_success '-w stores, and storing again is a no-op' '
	id=$(aptix hash-object -w hello) &&
	aptix cat-object -e $id &&
	aptix cat-object blob $id >out &&
	test_cmp hello out &&
	aptix hash-object -w hello >again &&
	echo $id >expect &&
	test_cmp expect again
'

test_expect_success '--stdin and --stdin-paths' '
	aptix hash-object --stdin <world >a &&
	aptix hash-object world >b &&
	test_cmp a b &&
	printf "hello\nworld\n" | aptix hash-object -w --stdin-paths >c &&
	aptix hash-object hello world >d &&
	test_cmp c d &&
	aptix cat-object -e $(tail -n1 d)
'

test_expect_success 'a missing file is an error, earlier paths stay written' '
	printf "x1\n" >x1 &&
	printf "x1\nnope\n" | test_must_fail aptix hash-object -w --stdin-paths >out 2>err &&
	grep "nope" err &&
	aptix cat-object -e $(aptix hash-object x1)
'

test_expect_success 'bad types and bad turn content are refused' '
	test_must_fail aptix hash-object -t tree hello 2>err &&
	grep "invalid object type" err &&
	test_must_fail aptix hash-object -w -t turn hello 2>err &&
	grep "^error: hello: " err &&
	test_must_fail aptix hash-object -w -t session hello &&
	aptix hash-object --literally -t turn hello
'

test_expect_success 'binary content with NUL bytes' '
	printf "a\000b\000" >nul &&
	id=$(aptix hash-object -w nul) &&
	aptix cat-object blob $id >out &&
	cmp nul out
'

test_expect_success 'a large blob round-trips' '
	test_seq 1 200000 >big &&
	id=$(aptix hash-object -w big) &&
	aptix cat-object -s $id >size &&
	test "$(cat size)" = "$(wc -c <big)" &&
	aptix cat-object blob $id >out &&
	cmp big out
'

test_expect_success 'usage errors' '
	test_expect_code 129 aptix hash-object &&
	test_expect_code 129 aptix hash-object --stdin-paths hello
'

test_done
