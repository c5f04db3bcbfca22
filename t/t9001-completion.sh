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
	if test ${#COMPREPLY[@]} -gt 0
	then
		printf "%s\n" "${COMPREPLY[@]}" | sort
	fi
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

test_expect_success 'search: its options, the statuses of --status' '
	complete_words aptix search --conv >out &&
	grep -x -- "--conversation" out &&
	complete_words aptix search --status fa >out &&
	echo failed >expect &&
	test_cmp expect out &&
	complete_words aptix search --status=aw >out &&
	echo --status=awaiting_tool_results >expect &&
	test_cmp expect out &&
	complete_words aptix search --conversation conv >out &&
	echo conv-one >expect &&
	test_cmp expect out
'

test_expect_success 'conversations where a conversation goes, not files' '
	>conv-file &&
	complete_words aptix conversation rename "" >out &&
	grep -x conv-one out &&
	! grep conv-file out &&
	complete_words aptix conversation delete conv >out &&
	echo conv-one >expect &&
	test_cmp expect out &&
	complete_words aptix conversation "" >out &&
	printf "archive\ndelete\nlist\nrename\nunarchive\n" >expect &&
	test_cmp expect out &&
	complete_words aptix chat --session conv >out &&
	grep -x conv-one out &&
	! grep conv-file out &&
	complete_words aptix continue --conversation conv >out &&
	echo conv-one >expect &&
	test_cmp expect out &&
	complete_words aptix continue --conversation=conv >out &&
	echo --conversation=conv-one >expect &&
	test_cmp expect out &&
	complete_words aptix usage -c "" >out &&
	grep -x conv-one out &&
	complete_words aptix switch conv >out &&
	echo conv-one >expect &&
	test_cmp expect out &&
	complete_words aptix share conv >out &&
	test_cmp expect out
'

test_expect_success 'config keys, commands after help, nothing after -m' '
	complete_words aptix config openai.mo >out &&
	echo openai.model >expect &&
	test_cmp expect out &&
	complete_words aptix config openai.model "" >out &&
	test_must_be_empty out &&
	complete_words aptix -c openai.mo >out &&
	echo openai.model= >expect &&
	test_cmp expect out &&
	complete_words aptix help con >out &&
	printf "config\ncontinue\nconversation\n" >expect &&
	test_cmp expect out &&
	complete_words aptix continue -m "" >out &&
	test_must_be_empty out &&
	complete_words aptix continue --file conv- >out &&
	grep -x conv-file out
'

test_expect_success '-C: directories, then the store in that directory' '
	mkdir -p other/sub &&
	(
		cd other &&
		aptix init -q &&
		blob=$(echo hi | aptix hash-object -w --stdin) &&
		turn=$(aptix write-turn --conversation elsewhere --seq 1 --instruction $blob) &&
		aptix update-ref refs/conversations/elsewhere $(aptix commit-session $turn)
	) &&
	complete_words aptix -C oth >out &&
	echo other >expect &&
	test_cmp expect out &&
	complete_words aptix -C conv >out &&
	test_must_be_empty out &&
	complete_words aptix -C other switch "" >out &&
	echo elsewhere >expect &&
	test_cmp expect out &&
	complete_words aptix -C other conversation rename "" >out &&
	test_cmp expect out &&
	complete_words aptix switch "" >out &&
	! grep elsewhere out
'

test_expect_success 'import: the tool, then files' '
	complete_words aptix import c >out &&
	printf "claude\ncodex\n" >expect &&
	test_cmp expect out &&
	mkdir -p sessions &&
	complete_words aptix import codex sess >out &&
	grep -x sessions out
'

test_expect_success 'import: the new tools; export: formats, names' '
	complete_words aptix import j >out &&
	echo json >expect &&
	test_cmp expect out &&
	complete_words aptix export --format=s >out &&
	echo --format=session-md >expect &&
	test_cmp expect out &&
	complete_words aptix export --format m >out &&
	echo markdown >expect &&
	test_cmp expect out &&
	complete_words aptix log --format m >out &&
	! grep markdown out &&
	complete_words aptix export H >out &&
	grep -x HEAD out
'

test_lazy_prereq ZSH 'command -v zsh'
test_lazy_prereq FISH 'command -v fish'
comp=$TEST_DIRECTORY/../contrib/completion

# zsh_stubs: the start of a zsh script that loads _aptix with the
# completion builtins stubbed to print what would be offered
zsh_stubs () {
	cat <<-\EOF
	fpath=($PWD/zfunc $fpath)
	autoload -Uz compinit && compinit -u -d $PWD/zcompdump
	compadd () { print -rl -- "${(@P)${@[-1]}}" }
	_describe () { print -rl -- "${(@P)${@[-1]}}" }
	_files () { print FILES }
	_arguments () { return 1 }
	source zfunc/_aptix
	EOF
}

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

test_expect_success ZSH 'zsh: conversations, config keys, commands; -C' '
	zsh_stubs >zsh-test2 &&
	cat >>zsh-test2 <<-\EOF &&
	print "== rename"
	words=(conversation rename ""); CURRENT=3; _aptix_arguments conversation
	print "== session"
	words=(chat --session ""); CURRENT=3; _aptix_arguments chat
	print "== conversation"
	words=(continue --conversation ""); CURRENT=3; _aptix_arguments continue
	print "== config"
	words=(config ""); CURRENT=2; _aptix_arguments config
	print "== help"
	words=(help ""); CURRENT=2; _aptix_arguments help
	print "== -m"
	words=(continue -m ""); CURRENT=3; _aptix_arguments continue
	print "== -C other"
	_aptix_dir=other
	words=(switch ""); CURRENT=2; _aptix_arguments switch
	EOF
	zsh -f zsh-test2 >out 2>err &&
	test_must_be_empty err &&
	sed -n "/== rename/,/== session/p" out >rename &&
	grep -x conv-one rename && ! grep FILES rename &&
	sed -n "/== session/,/== conversation/p" out | grep -x conv-one &&
	sed -n "/== conversation/,/== config/p" out | grep -x conv-one &&
	sed -n "/== config/,/== help/p" out | grep -x openai.model &&
	sed -n "/== help/,/== -m/p" out | grep "^continue:" &&
	sed -n "/== -m/,/== -C other/p" out >m &&
	test_line_count = 2 m &&
	sed -n "/== -C other/,\$p" out >c &&
	grep -x elsewhere c && ! grep conv-one c
'

test_expect_success ZSH 'zsh: export formats and names, import tools' '
	zsh_stubs >zsh-test3 &&
	cat >>zsh-test3 <<-\EOF &&
	print "== format"
	words=(export --format ""); CURRENT=3; _aptix_arguments export
	print "== names"
	words=(export ""); CURRENT=2; _aptix_arguments export
	print "== tools"
	words=(import ""); CURRENT=2; _aptix_arguments import
	EOF
	zsh -f zsh-test3 >out 2>err &&
	test_must_be_empty err &&
	sed -n "/== format/,/== names/p" out | grep -x session-md &&
	sed -n "/== names/,/== tools/p" out | grep -x conv-one &&
	sed -n "/== tools/,\$p" out | grep -x session-md
'

test_expect_success FISH 'fish: export formats and names, import tools' '
	cat >fish-test3 <<-EOF &&
	source $comp/aptix.fish
	echo "== format"; complete -C "aptix export --format "
	echo "== names"; complete -C "aptix export conv"
	echo "== tools"; complete -C "aptix import js"
	echo "== end"
	EOF
	fish --no-config fish-test3 >out 2>err &&
	test_must_be_empty err &&
	sed -n "/== format/,/== names/p" out | grep -x markdown &&
	sed -n "/== names/,/== tools/p" out | grep -x conv-one &&
	sed -n "/== tools/,/== end/p" out | grep -x json
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

test_expect_success FISH 'fish: conversations, config keys, commands, -C' '
	cat >fish-test2 <<-EOF &&
	source $comp/aptix.fish
	echo "== rename"; complete -C "aptix conversation rename "
	echo "== session"; complete -C "aptix chat --session conv"
	echo "== conversation"; complete -C "aptix continue --conversation "
	echo "== config"; complete -C "aptix config openai.mo"
	echo "== help"; complete -C "aptix help con"
	echo "== -C"; complete -C "aptix -C oth"
	echo "== -C other"; complete -C "aptix -C other switch "
	echo "== end"
	EOF
	fish --no-config fish-test2 >out 2>err &&
	test_must_be_empty err &&
	sed -n "/== rename/,/== session/p" out >rename &&
	grep -x conv-one rename && ! grep conv-file rename &&
	sed -n "/== session/,/== conversation/p" out | grep -x conv-one &&
	sed -n "/== conversation/,/== config/p" out | grep -x conv-one &&
	sed -n "/== config/,/== help/p" out | grep "^openai.model	" &&
	sed -n "/== help/,/== -C/p" out | grep "^continue	" &&
	sed -n "/== -C\$/,/== -C other/p" out | grep "^other/" &&
	sed -n "/== -C other/,/== end/p" out >c &&
	grep -x elsewhere c && ! grep conv-one c
'

test_done
