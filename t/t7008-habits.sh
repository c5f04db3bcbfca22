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

# --- 5: a pipe that closes, a terminal that closes, Ctrl-C -----------------

# field <rev> <path>: a field of show --json
field () {
	aptix show --json "$1" | json_field "$2"
}

test_expect_success 'setup: a store for the turns' '
	aptix init -q && aptix continue -m "first" >/dev/null 2>&1
'

test_expect_success 'continue | head: the answer is still committed' '
	standin_fault "{\"kind\":\"slow\",\"delay\":0.2}" &&
	{ aptix continue -m "piped into head"; echo $? >code; } 2>err | head -c 6 >out &&
	test "$(cat out)" = "Answer" &&
	test "$(cat code)" = 0 &&
	test "$(field HEAD .instruction)" = "piped into head" &&
	test "$(field HEAD .status)" = committed &&
	field HEAD .answer >answer &&
	grep "^Answer #.* to: piped into head" answer &&
	aptix status >st &&
	! grep "in flight" st
'

test_expect_success 'SIGHUP (the terminal closed): the turn finishes and is committed' '
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":0.3}" &&
	{ aptix continue -m "the terminal closes" >hup.out 2>hup.err & pid=$!; } &&
	wait_for_requests $((n + 1)) &&
	kill -HUP $pid &&
	{ wait $pid; echo $? >code; } &&
	test "$(cat code)" = 0 &&
	test "$(field HEAD .instruction)" = "the terminal closes" &&
	test "$(field HEAD .status)" = committed
'

test_expect_success 'Ctrl-C exits 130; the turn is committed as failed, its instruction kept' '
	head=$(aptix rev-parse HEAD) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	{ aptix continue -m "interrupted by the user" >int.out 2>int.err & pid=$!; } &&
	wait_for_requests $((n + 1)) &&
	kill -INT $pid &&
	{ wait $pid; echo $? >code; } &&
	test "$(cat code)" = 130 &&
	grep "failed; the instruction is kept" int.err &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix log --all --oneline >log &&
	grep "\[failed\] interrupted by the user" log &&
	aptix status >st &&
	! grep "in flight" st &&
	standin_reset
'

# --- 7: claims are leases ---------------------------------------------------

# claim_json <conv>: the running record of <conv> (no aptix may run)
claim_json () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix get running "$1" |
	python3 -c "import sys; print(bytes.fromhex(sys.stdin.read().strip()).decode())"
}

# set_claim <conv> <python statements on r>: edit the running record
set_claim () {
	claim_json "$1" >claim.json &&
	python3 - "$2" <<-\EOF >claim2.json &&
	import json, sys, time
	r = json.load(open("claim.json"))
	now = int(time.time() * 1000)
	exec(sys.argv[1])
	print(json.dumps(r, sort_keys=True, separators=(",", ":")))
	EOF
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put running "$1" "$(cat claim2.json)"
}

test_expect_success 'a killed turn leaves a claim with a lease' '
	conv=$(aptix symbolic-ref --short HEAD) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	{ aptix continue -m "left on another host" >/dev/null 2>&1 & pid=$!; } &&
	wait_for_requests $((n + 1)) &&
	kill -9 $pid &&
	{ wait $pid; true; } &&
	standin_reset &&
	claim_json $conv >claim &&
	json_field .lease <claim >lease &&
	test "$(cat lease)" = 120000 &&
	json_field .renewed <claim >renewed &&
	test "$(cat renewed)" -gt 0
'

test_expect_success 'a claim from another host with a fresh lease is alive' '
	set_claim $conv "r[\"host\"] = \"other-host\"; r[\"renewed\"] = now" &&
	aptix status >st &&
	grep "^  $conv  pid [0-9]*  since .*  host other-host, renewed [0-9]* s ago  running$" st &&
	aptix fsck >fsck.out &&
	grep "^running turn [0-9a-f]* in $conv: pid [0-9]* on other-host, lease renewed [0-9]* s ago (lapses after 120 s)$" fsck.out &&
	test_must_fail aptix continue -m "refused" 2>err &&
	grep "is busy" err
'

test_expect_success 'once its lease lapsed it is taken over, and says why' '
	set_claim $conv "r[\"renewed\"] = now - 600000" &&
	aptix fsck >fsck.out &&
	grep "^dead turn [0-9a-f]* in $conv: pid [0-9]* on other-host stopped renewing its claim [0-9]* s ago (lease lapsed); the next command that writes to the store (or aptix status) records it as failed$" fsck.out &&
	aptix continue -m "takes over" >out 2>err &&
	test "$(field HEAD .instruction)" = "takes over" &&
	aptix log --all --oneline >log &&
	grep "\[failed\] left on another host" log &&
	aptix show --json $(aptix log --all --format=%H | sed -n 2p) >dead.json &&
	grep "stopped renewing its claim" dead.json
'

test_expect_success 'a running turn renews its lease' '
	aptix config turn.lease 1s &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	{ aptix continue -m "renewing" >/dev/null 2>&1 & pid=$!; } &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1)) &&
	aptix status --json | json_field ".running[0].renewed" >r1 &&
	i=0 &&
	while aptix status --json | json_field ".running[0].renewed" >r2 &&
		test "$(cat r1)" = "$(cat r2)" && test $i -lt 100
	do
		sleep 0.1 && i=$((i + 1)) || return 1
	done &&
	! test_cmp r1 r2 >/dev/null &&
	aptix status --json | json_field ".running[0].state" >state &&
	echo running >expect &&
	test_cmp expect state &&
	kill -INT $pid &&
	{ wait $pid; true; } &&
	aptix config --unset turn.lease &&
	standin_reset
'

test_expect_success 'a zombie (killed, never reaped) holds no claim' '
	cat >zombie.py <<-\EOF &&
	import os, signal, sys, time
	pid = os.fork()
	if pid == 0:
	    fd = os.open(os.devnull, os.O_WRONLY)
	    os.dup2(fd, 1)
	    os.dup2(fd, 2)
	    os.execv(sys.argv[1], ["aptix", "continue", "-m", "a zombie turn"])
	for i in range(600):
	    if os.path.exists("zombie.go"):
	        break
	    time.sleep(0.05)
	os.kill(pid, signal.SIGKILL)
	open("zombie.pid", "w").write("%d\n" % pid)
	time.sleep(60)    # never waits: the child stays a zombie
	EOF
	n=$(request_count) &&
	standin_fault "{\"kind\":\"hang\",\"max\":30}" &&
	{ python3 zombie.py "$(command -v aptix)" & parent=$!; } &&
	test_when_finished "kill $parent" &&
	wait_for_requests $((n + 1)) &&
	>zombie.go &&
	i=0 &&
	while ! test -s zombie.pid && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	zpid=$(cat zombie.pid) &&
	i=0 &&
	while ! grep -q "^$zpid (aptix) Z" /proc/$zpid/stat && test $i -lt 200
	do
		sleep 0.05 && i=$((i + 1)) || return 1
	done &&
	grep "^$zpid (aptix) Z" /proc/$zpid/stat &&
	standin_reset &&
	aptix continue -m "after the zombie" >out 2>err &&
	test "$(field HEAD .instruction)" = "after the zombie" &&
	aptix log --all --oneline >log &&
	grep "\[failed\] a zombie turn" log &&
	aptix log --all --format=%H >ids &&
	aptix show --json $(sed -n 2p ids) >z.json &&
	grep "pid $zpid on .* was killed but never reaped (a zombie)" z.json
'

# --- 8: file names that are not UTF-8 ----------------------------------------

test_expect_success 'a file name that is not UTF-8 is skipped with a warning' '
	git init -q names &&
	(
		cd names &&
		aptix init -q &&
		echo "int good;" >good.c &&
		echo "int bad;" >"$(printf "bad\\377name.c")" &&
		aptix continue -m "odd names" >out 2>err &&
		grep "^warning: .bad\\\\xffname.c.: the file name is not valid UTF-8: skipped" err &&
		aptix show --json HEAD >show &&
		test "$(json_field .status <show)" = committed &&
		grep "good.c" show &&
		aptix status >st &&
		! grep "in flight" st
	)
'

test_expect_success 'an error after the claim ends in a failed snapshot, not a dead claim' '
	(
		cd names &&
		head=$(aptix rev-parse HEAD) &&
		mkdir "$(printf "dir\\377")" &&
		test_must_fail aptix continue --file "$(printf "dir\\377")" -m "cannot be stored whole" >out 2>err &&
		grep "could not be stored" err &&
		test "$(aptix rev-parse HEAD)" = "$head" &&
		aptix log --all --oneline >log &&
		grep "\[failed\] cannot be stored whole" log &&
		aptix status >st &&
		! grep "in flight" st &&
		! grep "died" st
	)
'

# --- 9: init killed midway, a stale config.lock ---------------------------

test_expect_success 'a scratch directory left by a killed init is ignored' '
	mkdir scratch && (cd scratch && aptix init -q) &&
	mv scratch/.aptix scratch/.aptix.init-AbC123 &&
	test "$(aptix -C scratch rev-parse --aptix-dir)" = "$TRASH_DIRECTORY/.aptix" &&
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
