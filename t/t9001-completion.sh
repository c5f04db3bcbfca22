#!/bin/sh
test_description='contrib: bash, zsh and fish completion'
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

test_expect_success 'global options, and -c skipped with its value' '
	complete_words aptix --no >out &&
	grep -x -- "--no-pager" out &&
	complete_words aptix - >out &&
	grep -x -- "-c" out &&
	grep -x -- "--paginate" out &&
	complete_words aptix -c x.y=z fork --dry >out &&
	grep -x -- "--dry-run" out
'

test_lazy_prereq ZSH 'command -v zsh'
test_lazy_prereq FISH 'command -v fish'
comp=$TEST_DIRECTORY/../contrib/completion

test_expect_success ZSH 'zsh: _aptix loads; commands and options with help' '
	mkdir zfunc &&
	cp "$comp/aptix-completion.zsh" zfunc/_aptix &&
	zsh -n zfunc/_aptix &&
	cat >zsh-test <<-\EOF &&
	fpath=($PWD/zfunc $fpath)
	autoload -Uz compinit && compinit -u -d $PWD/zcompdump
	# outside completion: print what would be offered
	_describe () { print -rl -- "${(@P)${@[-1]}}" }
	compadd () { print -rl -- "${(@P)${@[-1]}}" }
	_arguments () { return 1 }
	source zfunc/_aptix
	_aptix_commands
	_aptix_options continue
	_aptix_names
	EOF
	zsh -f zsh-test >out 2>err &&
	test_must_be_empty err &&
	grep -x "continue:run one turn in the current conversation" out &&
	grep -x -- "--no-rag:retrieve no RAG context" out &&
	grep -x -- "-q:no summary line" out &&
	grep -x refs/conversations/conv-one out
'

test_expect_success FISH 'fish: commands, options, global options, names' '
	cat >fish-test <<-EOF &&
	source $comp/aptix.fish
	complete -C "aptix con"
	complete -C "aptix continue --no-"
	complete -C "aptix -C . -c x.y=z fork --dry"
	complete -C "aptix --no"
	complete -C "aptix show conv"
	EOF
	fish --no-config fish-test >out 2>err &&
	test_must_be_empty err &&
	printf "continue\\trun one turn in the current conversation\\n" >expect &&
	grep -F -x -f expect out &&
	grep "^--no-rag	" out &&
	grep "^--dry-run	" out &&
	grep "^--no-pager	" out &&
	grep -x conv-one out
'

test_done
