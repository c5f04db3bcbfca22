#!/bin/sh
test_description='objects-format.md: its worked examples hold'
. "$(dirname "$0")"/test-lib.sh

doc="$TEST_DIRECTORY/../objects-format.md"

# The indented lines after "## Worked examples": ids and JSON objects.
awk '/^## Worked examples/ { on = 1 } on && /^    [0-9a-f{]/ { sub(/^    /, ""); print }' \
	"$doc" >examples

ex() { sed -n "$1p" examples; }

test_expect_success 'the document has its examples' '
	test_line_count = 7 examples
'

test_expect_success 'empty blob' '
	printf "" | aptix hash-object --stdin >actual &&
	ex 1 >expect &&
	test_cmp expect actual
'

test_expect_success 'blob ids equal git sha256 ids' '
	printf "hello\n" | aptix hash-object --stdin >actual &&
	ex 2 >expect &&
	test_cmp expect actual &&
	if test_have_prereq GIT
	then
		git init -q --object-format=sha256 g &&
		printf "hello\n" | git -C g hash-object --stdin >git-id &&
		test_cmp expect git-id
	fi
'

test_expect_success 'stored form of small blobs' '
	aptix init -q &&
	printf "" | aptix hash-object -w --stdin &&
	printf "hello\n" | aptix hash-object -w --stdin &&
	mdb_dump -s objects .aptix >dump &&
	grep -x " 8100" dump &&
	grep -x " 810668656c6c6f0a" dump
'

test_expect_success 'instruction blob' '
	printf "Explain the parser\n" | aptix hash-object -w --stdin >actual &&
	ex 3 >expect &&
	test_cmp expect actual
'

test_expect_success 'pending turn' '
	ex 4 >turn &&
	aptix hash-object -w -t turn turn >actual &&
	ex 5 >expect &&
	test_cmp expect actual &&
	aptix cat-object turn $(cat actual) >back &&
	test_cmp turn back
'

test_expect_success 'root session' '
	ex 6 >session &&
	aptix hash-object -w -t session session >actual &&
	ex 7 >expect &&
	test_cmp expect actual &&
	aptix cat-object -t $(cat actual) >type &&
	echo session >expect &&
	test_cmp expect type
'

test_expect_success 'non-canonical turns are refused' '
	sed "s/\"seq\":1/\"seq\": 1/" turn >t1 &&
	test_must_fail aptix hash-object -t turn t1 2>err &&
	grep "not in canonical form" err &&
	sed "s/^{\(.*\),\"seq\":1,/{\"seq\":1,\1,/" turn >t2 &&
	! cmp turn t2 &&
	test_must_fail aptix hash-object -t turn t2 &&
	printf "%s" "$(cat turn)" >t3 &&
	test_must_fail aptix hash-object -t turn t3 &&
	sed "s/\"seq\":1/\"seq\":1.0/" turn >t4 &&
	test_must_fail aptix hash-object -t turn t4 &&
	sed "s/\"v\":1/\"v\":2/" turn >t5 &&
	test_must_fail aptix hash-object -t turn t5 2>err &&
	grep "upgrade aptix" err
'

test_done
