#!/bin/sh
test_description='make demo: the commands it prints run when pasted

The demo (contrib/demo.sh) prints each command before it runs it; a
word with spaces or shell characters is quoted, so that a line copied
from the demo is the command that ran.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

test_expect_success 'the demo runs' '
	(
		unset OPENAI_API_KEY OPENAI_BASE_URL &&
		TMPDIR=$TRASH_DIRECTORY &&
		export TMPDIR &&
		sh "$TEST_DIRECTORY/../contrib/demo.sh" >demo.out 2>demo.err
	) &&
	grep "^\$ aptix " demo.out >commands &&
	test_line_count -gt 8 commands
'

test_expect_success 'words are quoted as the shell reads them back' '
	grep "^\$ aptix continue -m '\''Explain how the parser in parser.h should handle errors'\''$" commands &&
	grep "^\$ aptix cat-object -p [0-9a-f]\{64\}$" commands &&
	grep "^\$ aptix log --graph --oneline --all$" commands &&
	while read -r dollar line
	do
		eval "set -- $line" &&
		test "$1" = aptix || return 1
	done <commands &&
	line=$(grep "^\$ aptix fork" commands) &&
	eval "set -- ${line#\$ }" &&
	test $# = 5 &&
	test "$5" = "Instead: should the parser return a tree?"
'

test_expect_success 'a pasted line runs' '
	start_standin &&
	aptix init -q &&
	line=$(grep "^\$ aptix continue" commands | head -n 1) &&
	eval "${line#\$ }" >out &&
	grep "^Answer #1 to: Explain how the parser in parser.h should handle errors" out &&
	stop_standin
'

test_done
