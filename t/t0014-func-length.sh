#!/bin/sh
test_description='contrib/check-func-length.sh: no function over 150 lines

make lint runs the script over the tree; these tests run it on samples
written in the project'"'"'s brace style (the function'"'"'s braces alone at
column 0) to show where it draws the line and what it reports.'
test_lib_no_binary=t
. "$(dirname "$0")"/test-lib.sh

check=$TEST_DIRECTORY/../contrib/check-func-length.sh

# body N: N lines of statements
body () {
	i=0
	while test $i -lt "$1"
	do
		echo "	x += $i;"
		i=$((i + 1))
	done
}

# write_fn FILE NAME N: FILE gets a function NAME whose braces and body
# make N lines, after a two-line header with an attribute macro
write_fn () {
	{
		echo "FORMAT(1, 2)" &&
		echo "static int $2(const char *fmt," &&
		echo "	  ...)" &&
		echo "{" &&
		echo "	int x = 0;" &&
		body $(($3 - 4)) &&
		echo "	return x;" &&
		echo "}"
	} >"$1"
}

test_expect_success 'a function of 150 lines passes' '
	mkdir ok &&
	write_fn ok/a.c long_one 150 &&
	"$check" ok 2>err &&
	test_must_be_empty err
'

test_expect_success 'a function of 151 lines fails, named with its length' '
	mkdir bad &&
	write_fn bad/a.c long_one 151 &&
	test_expect_code 1 "$check" bad 2>err &&
	echo "bad/a.c:2: long_one is 151 lines (limit 150)" >expect &&
	test_cmp expect err
'

test_expect_success '-n sets the limit' '
	"$check" -n 151 bad &&
	test_expect_code 1 "$check" -n 149 ok 2>err &&
	echo "ok/a.c:2: long_one is 150 lines (limit 149)" >expect &&
	test_cmp expect err
'

test_expect_success 'each long function is reported, the short ones are not' '
	mkdir two &&
	{
		echo "int short_one(void)" &&
		echo "{" &&
		echo "	return 0;" &&
		echo "}" &&
		echo &&
		echo "static const int table[] =" &&
		echo "{" &&
		body 200 &&
		echo "};" &&
		echo "#define MACRO(x) \\" &&
		echo "int x(void) \\" &&
		echo "{ \\" &&
		body 200 | sed "s/\$/ \\\\/" &&
		echo "}" &&
		echo &&
		echo "static void" &&
		echo "second(int a)" &&
		echo "{" &&
		echo "	if (a) {" &&
		body 160 &&
		echo "	}" &&
		echo "}"
	} >two/b.h &&
	write_fn two/a.c first 300 &&
	test_expect_code 1 "$check" two 2>err &&
	cat >expect <<-\EOT &&
	two/a.c:2: first is 300 lines (limit 150)
	two/b.h:415: second is 164 lines (limit 150)
	EOT
	test_cmp expect err
'

test_expect_success 'misuse is told apart from a long function' '
	test_expect_code 2 "$check" -n x ok &&
	test_expect_code 2 "$check" no-such-dir
'

test_expect_success 'no function of the tree is over 150 lines' '
	"$check"
'

test_done
