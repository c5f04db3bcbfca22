#!/bin/sh
test_description='habits that must not destroy history

git clean and git add -A never reach the store of a git work tree, which
lives in the git directory and is shared by its worktrees; an older
.aptix store there is pointed out and moved by init --migrate. Moving a
work tree or opening it on another host hides no conversation. An init
killed midway leaves nothing half-made, and a stale config.lock says
what to do.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq GIT
then
	skip_all='python3 (the OpenAI stand-in) and git are needed'
	test_done
fi

test_lazy_prereq UNSHARE_UTS 'unshare -u true'

git_commit () {
	git -c user.name=t -c user.email=t@example.com commit -q "$@"
}

test_expect_success 'setup' '
	start_standin
'

# --- 4: the store of a git work tree --------------------------------------

test_expect_success 'init in a git work tree puts the store in the git directory' '
	git init -q repo &&
	(
		cd repo &&
		aptix init >out &&
		grep "Initialized empty aptix store in .*/repo/.git/aptix/" out &&
		test_path_is_missing .aptix &&
		test "$(stat -c %a .git/aptix)" = 700 &&
		test "$(aptix rev-parse --aptix-dir)" = "$PWD/.git/aptix" &&
		test "$(aptix rev-parse --show-toplevel)" = "$PWD" &&
		echo "int x;" >x.c &&
		aptix continue -m "first in repo" >/dev/null 2>err &&
		mkdir sub &&
		(cd sub && aptix rev-parse --aptix-dir) >dir &&
		test "$(cat dir)" = "$PWD/.git/aptix"
	)
'

test_expect_success 'git status, add -A and clean -fdx never touch it' '
	(
		cd repo &&
		git status --porcelain --ignored >st &&
		! grep aptix st &&
		git add -A &&
		git ls-files >staged &&
		! grep aptix staged &&
		git_commit -m files &&
		git clean -fdxq &&
		aptix log --oneline >log &&
		grep "first in repo" log &&
		aptix fsck
	)
'

test_expect_success 'git worktrees share the store; each works on its own files' '
	git -C repo worktree add -q ../wt2 2>/dev/null &&
	(
		cd wt2 &&
		test "$(aptix rev-parse --aptix-dir)" = "$TRASH_DIRECTORY/repo/.git/aptix" &&
		test "$(aptix rev-parse --show-toplevel)" = "$PWD" &&
		aptix log --oneline >log &&
		grep "first in repo" log &&
		aptix init >out &&
		grep "Reinitialized existing aptix store in .*/repo/.git/aptix/" out &&
		echo "int only_in_wt2;" >wt2.c &&
		aptix status >st &&
		grep "wt2.c" st
	)
'

test_expect_success 'a .aptix store in a git work tree: every command says how to move it' '
	mkdir old &&
	(
		cd old &&
		aptix init -q &&
		aptix continue -m "made before git" >/dev/null 2>&1 &&
		git init -q &&
		aptix log --oneline >log 2>err &&
		grep "made before git" log &&
		grep "^warning: the store .*/old/.aptix. is inside a git work tree" err &&
		grep "^hint: move it to .*/old/.git/aptix. with .aptix init --migrate." err &&
		aptix init 2>err &&
		grep "^hint: move it to" err &&
		test_path_is_missing .git/aptix
	)
'

test_expect_success 'init --migrate moves it whole; the history carries on' '
	(
		cd old &&
		head=$(aptix rev-parse HEAD) &&
		aptix init --migrate >out &&
		grep "^Moved the aptix store to .*/old/.git/aptix/$" out &&
		test_path_is_missing .aptix &&
		test "$(aptix rev-parse HEAD)" = "$head" &&
		aptix log --oneline >log 2>err &&
		grep "made before git" log &&
		test_must_be_empty err &&
		aptix fsck &&
		test_must_fail aptix init --migrate 2>err &&
		grep "no .aptix/ store in the work tree" err
	)
'

test_expect_success 'init --migrate refuses outside a git work tree, and over a store' '
	mkdir plain &&
	(cd plain && aptix init -q) &&
	test_must_fail aptix -C plain init --migrate 2>err &&
	grep "not in a git work tree" err &&
	test_path_is_dir plain/.aptix &&
	(cd repo && mkdir again && cd again && aptix init -q . &&
	 test_path_is_missing .aptix) &&
	mkdir both && (cd both && git init -q && aptix init -q) &&
	mkdir both/.aptix &&
	cp -R both/.git/aptix/. both/.aptix/ &&
	test_must_fail aptix -C both init --migrate 2>err &&
	grep "exists already" err &&
	test_path_is_dir both/.aptix
'

test_expect_success 'outside a git work tree the store stays in .aptix' '
	(cd plain && test "$(aptix rev-parse --aptix-dir)" = "$PWD/.aptix") &&
	(cd / && APTIX_DIR="$TRASH_DIRECTORY/repo/.git/aptix" aptix log --oneline) >log &&
	grep "first in repo" log
'

# --- 6: moving a work tree, another host ----------------------------------

test_expect_success 'moving the work tree hides no conversation' '
	mv repo renamed &&
	git -C renamed worktree repair ../wt2 >/dev/null 2>&1 &&
	(cd renamed && aptix sessions) >out 2>err &&
	grep "first in repo" out &&
	test_must_be_empty err &&
	(cd renamed && aptix continue -m "after the move" >/dev/null 2>&1 &&
	 aptix show --json HEAD) >show &&
	test "$(json_field .workspace <show)" = "repo.$(hostname | sed "s/\..*//")"
'

test_expect_success 'a copy of the work tree lists them too' '
	cp -a renamed copied &&
	(cd copied && aptix sessions) >out &&
	grep "first in repo" out
'

test_expect_success UNSHARE_UTS 'nor does another host name (a new container)' '
	unshare -u sh -c "hostname other-container && cd renamed && aptix sessions" >out 2>err &&
	grep "first in repo" out &&
	test_must_be_empty err
'

test_expect_success 'an older store (no workspace recorded) lists every conversation' '
	(cd plain && aptix continue -m "plain turn" >/dev/null 2>&1) &&
	python3 "$TEST_DIRECTORY/lib-store.py" plain/.aptix del meta workspace &&
	mv plain plain-moved &&
	(cd plain-moved && aptix sessions) >out &&
	grep "plain turn" out &&
	(cd plain-moved && aptix init >/dev/null && aptix sessions) >out &&
	grep "plain turn" out
'

test_expect_success 'an explicit workspace still filters' '
	(cd renamed && APTIX_WORKSPACE=elsewhere aptix sessions) >out 2>err &&
	test_must_be_empty out &&
	grep "No conversation in workspace .elsewhere." err
'

# --- 9: init killed midway, a stale config.lock ---------------------------

test_expect_success 'a scratch directory left by a killed init is ignored' '
	mkdir scratch && (cd scratch && aptix init -q) &&
	mv scratch/.aptix scratch/.aptix.init-AbC123 &&
	test_must_fail aptix -C scratch log 2>err &&
	grep "not an aptix store" err &&
	aptix -C scratch init >out &&
	grep "Initialized empty" out &&
	aptix -C scratch status
'

test_expect_success 'init finishes a store an older init left half-made' '
	mkdir half && (cd half && aptix init -q) &&
	python3 "$TEST_DIRECTORY/lib-store.py" half/.aptix del meta format &&
	python3 "$TEST_DIRECTORY/lib-store.py" half/.aptix del refs HEAD &&
	test_must_fail aptix -C half log 2>err &&
	grep "no store format version" err &&
	aptix -C half init &&
	aptix -C half status &&
	mkdir empty && mkdir empty/.aptix &&
	aptix -C empty init &&
	aptix -C empty status
'

test_expect_success 'init does not finish a damaged store that holds objects' '
	mkdir holds && (cd holds && aptix init -q && echo x | aptix hash-object -w --stdin) &&
	python3 "$TEST_DIRECTORY/lib-store.py" holds/.aptix del meta format &&
	test_must_fail aptix -C holds init 2>err &&
	grep "no store format version" err
'

test_expect_success 'inits killed at random moments leave a store or none' '
	for i in 1 2 3 4 5 6 7 8 9 10
	do
		rm -rf k &&
		mkdir k &&
		{ aptix -C k init -q & p=$!; } &&
		sleep "0.00$i" &&
		{ kill -9 $p 2>/dev/null; wait $p; true; } &&
		if test -d k/.aptix
		then
			aptix -C k status >/dev/null || return 1
		fi &&
		aptix -C k init -q &&
		aptix -C k status >/dev/null || return 1
	done
'

test_expect_success 'a stale config.lock says what holds it and how to clear it' '
	(cd plain-moved && touch .aptix/config.lock &&
	 test_must_fail aptix config openai.model gpt-x 2>err) &&
	grep "config.lock.*exists" plain-moved/err &&
	grep "Another aptix process seems to be" plain-moved/err &&
	grep "remove the file manually" plain-moved/err &&
	rm plain-moved/.aptix/config.lock &&
	aptix -C plain-moved config openai.model gpt-x
'

test_done
