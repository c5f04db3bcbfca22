#!/bin/sh
test_description='contrib: bash completion'
. "$(dirname "$0")"/test-lib.sh

. "$TEST_DIRECTORY/../contrib/completion/aptix-completion.bash"

# complete <words...>: COMPREPLY for the last word, one per line
complete_words () {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_aptix
	printf "%s\n" "${COMPREPLY[@]}" | sort
}

test_expect_success 'command names' '
	complete_words aptix con >out &&
	printf "config\ncontinue\nconversation\n" >expect &&
	test_cmp expect out
'

test_expect_success 'long options come from -h' '
	complete_words aptix continue --no- >out &&
	grep -x -- "--no-stream" out &&
	grep -x -- "--no-rag" out &&
	grep -x -- "--no-files" out
'

test_expect_success 'conversation ids and refs' '
	aptix init -q &&
	blob=$(echo hi | aptix hash-object -w --stdin) &&
	turn=$(aptix write-turn --conversation conv-one --seq 1 --instruction $blob) &&
	session=$(aptix commit-session $turn) &&
	aptix update-ref refs/conversations/conv-one $session &&
	complete_words aptix show conv >out &&
	grep -x conv-one out &&
	complete_words aptix log refs/ >out &&
	grep -x refs/conversations/conv-one out
'

test_expect_success '-C is skipped when finding the command' '
	complete_words aptix -C . log --one >out &&
	grep -x -- "--oneline" out
'

test_done
