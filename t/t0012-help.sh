#!/bin/sh
test_description='every command answers -h with its usage and exit 129'
. "$(dirname "$0")"/test-lib.sh

aptix --list-cmds=all >commands
aptix init -q store >/dev/null 2>&1

test_expect_success 'there are commands' '
	test $(wc -l <commands) -gt 2
'

while read cmd
do
	test_expect_success "$cmd -h" '
		test_expect_code 129 aptix '"$cmd"' -h >out 2>err &&
		grep "^usage: aptix '"$cmd"'" out &&
		test_must_be_empty err
	'
	test_expect_success "$cmd -h outside a store" '
		(cd / && test_expect_code 129 aptix '"$cmd"' -h >/dev/null)
	'
	test_expect_success "$cmd rejects an unknown option" '
		test_expect_code 129 aptix -C store '"$cmd"' --no-such-option 2>err &&
		grep "unknown option" err
	'
done <commands

test_done
