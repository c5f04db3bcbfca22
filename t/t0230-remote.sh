#!/bin/bash

test_description='a local store with a remote: remote, push, fetch, clone

A local (LMDB) store pushes to and fetches from a shared store on a
throwaway PostgreSQL (the role aptix_app, which owns nothing; each org
its own rows); clone makes a store from a remote. A conversation that
moved on both sides is rejected with git'"'"'s words, or pushed as a fork
on request; remote-tracking refs show in log --all and sessions; the
remote store stays clean for fsck.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

pg_require standin

# turn <dir> <instruction>: one turn in that store's current conversation.
turn () {
	aptix -C "$1" continue -q --no-rag --no-stream -m "$2"
}

# conv_of <dir>: the current conversation of that store.
conv_of () {
	aptix -C "$1" symbolic-ref HEAD | sed "s|^refs/conversations/||"
}

test_expect_success 'setup: a server, its schema, the stand-in, a store' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin &&
	mkdir a &&
	aptix -C a init -q &&
	echo hello >a/notes.txt &&
	aptix -C a continue -q --no-rag --no-stream --file notes.txt \
		-m "first turn" &&
	turn a "second turn" &&
	C=$(conv_of a)
'

test_expect_success 'remote add, -v, remove' '
	aptix -C a remote add --org acme origin "$PG_APP_URL" &&
	aptix -C a remote add other "$PG_APP_URL" &&
	aptix -C a remote >actual &&
	printf "origin\nother\n" >expect &&
	test_cmp expect actual &&
	aptix -C a remote -v >actual &&
	grep "^origin	postgresql:.* (org acme)$" actual &&
	grep "^other	postgresql:.* (org default)$" actual &&
	aptix -C a remote remove other &&
	aptix -C a remote >actual &&
	echo origin >expect &&
	test_cmp expect actual &&
	test_must_fail aptix -C a remote add origin "$PG_APP_URL" 2>err &&
	grep "already exists" err &&
	test_must_fail aptix -C a remote remove nope 2>err &&
	grep "no such remote" err
'

test_expect_success 'remote add refuses a password, and never echoes it' '
	url=$(printf "%s" "$PG_APP_URL" |
	      sed -e "s|postgresql://|postgresql://aptix_app:Hunter2pw@|") &&
	test_must_fail aptix -C a remote add pw "$url" 2>err &&
	grep "holds a password" err &&
	! grep Hunter2pw err &&
	test_must_fail aptix -C a remote add pw "$PG_APP_URL&password=Hunter2pw" 2>err &&
	grep "holds a password" err &&
	! grep Hunter2pw err &&
	! grep -r Hunter2pw a/.aptix/config &&
	test_must_fail aptix -C a remote add bad "http://example.com/x" 2>err &&
	grep "a remote.s URL is a PostgreSQL one" err
'

test_expect_success 'push: everything is new there' '
	aptix -C a push 2>err &&
	grep "^To origin$" err &&
	grep "^ \* \[new conversation\] *$C -> $C$" err &&
	aptix -C a rev-parse refs/remotes/origin/$C >actual &&
	aptix -C a rev-parse HEAD >expect &&
	test_cmp expect actual &&
	aptix -C a push 2>err &&
	grep "Everything up-to-date" err
'

test_expect_success 'the remote store has the history, fsck clean' '
	mkdir view &&
	aptix -C view init -q --backend "$PG_APP_URL" --org acme &&
	aptix -C view log --format=%s refs/conversations/$C >actual &&
	printf "second turn\nfirst turn\n" >expect &&
	test_cmp expect actual &&
	aptix -C view fsck &&
	aptix -C view sessions >sessions &&
	grep "2 turns" sessions
'

test_expect_success 'another org sees nothing of it' '
	mkdir other &&
	aptix -C other init -q --backend "$PG_APP_URL" --org globex &&
	aptix -C other log --all --format=%s >actual &&
	test_must_be_empty actual
'

test_expect_success 'clone: the same history, the remote as origin' '
	aptix clone -q --org acme "$PG_APP_URL" b &&
	aptix -C b log --format=%s >actual &&
	printf "second turn\nfirst turn\n" >expect &&
	test_cmp expect actual &&
	test "$(conv_of b)" = "$C" &&
	aptix -C b rev-parse refs/remotes/origin/$C >actual &&
	aptix -C a rev-parse HEAD >expect &&
	test_cmp expect actual &&
	aptix -C b remote -v >actual &&
	grep "^origin	.* (org acme)$" actual &&
	aptix -C b fsck
'

test_expect_success 'fast-forward push, fetch on the other side' '
	turn a "third turn" &&
	aptix -C a push 2>err &&
	old=$(aptix -C b rev-parse HEAD | cut -c1-7) &&
	new=$(aptix -C a rev-parse HEAD | cut -c1-7) &&
	grep "^   $old\.\.$new  *$C -> $C$" err &&
	aptix -C b fetch 2>err &&
	grep "^From origin$" err &&
	grep "^   $old\.\.$new  *$C -> refs/remotes/origin/$C$" err &&
	aptix -C b log --format=%s refs/remotes/origin/$C >actual &&
	printf "third turn\nsecond turn\nfirst turn\n" >expect &&
	test_cmp expect actual &&
	aptix -C b log --format=%s >actual &&
	printf "second turn\nfirst turn\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'a fetch with nothing new says nothing and changes nothing' '
	aptix -C b for-each-ref >before &&
	aptix -C b fetch 2>err &&
	test_must_be_empty err &&
	aptix -C b for-each-ref >after &&
	test_cmp before after
'

test_expect_success 'remote-tracking refs show in log --all and fsck' '
	aptix -C b log --all --format=%s >actual &&
	grep "third turn" actual &&
	aptix -C b fsck
'

test_expect_success 'moved on both sides: rejected with git'"'"'s words' '
	turn a "a fourth turn" &&
	aptix -C a push &&
	turn b "b fourth turn" &&
	aptix -C b rev-parse HEAD >b_head &&
	test_expect_code 1 aptix -C b push 2>err &&
	grep "^ ! \[rejected\]        $C -> $C (fetch first)$" err &&
	grep "^error: failed to push some conversations to .origin.$" err &&
	aptix -C view log -1 --format=%s refs/conversations/$C >actual &&
	echo "a fourth turn" >expect &&
	test_cmp expect actual
'

test_expect_success 'after a fetch it is still no fast-forward' '
	aptix -C b fetch &&
	test_expect_code 1 aptix -C b push 2>err &&
	grep "^ ! \[rejected\]        $C -> $C (non-fast-forward)$" err
'

test_expect_success 'push --fork: sent as a new conversation there' '
	short=$(cut -c1-8 b_head) &&
	aptix -C b push --fork 2>err &&
	grep "^ \* \[new fork\]  *$C -> $C-fork-$short$" err &&
	aptix -C view log --format=%s refs/conversations/$C-fork-$short >actual &&
	printf "b fourth turn\nsecond turn\nfirst turn\n" >expect &&
	test_cmp expect actual &&
	aptix -C view log -1 --format=%s refs/conversations/$C >actual &&
	echo "a fourth turn" >expect &&
	test_cmp expect actual &&
	aptix -C view fsck &&
	aptix -C b push --fork 2>err &&
	grep "Everything up-to-date" err
'

test_expect_success 'push of named conversations only' '
	aptix -C a switch -c solo &&
	turn a "solo turn" &&
	aptix -C a switch -c other-one &&
	turn a "other turn" &&
	aptix -C a push origin solo 2>err &&
	grep "solo -> solo" err &&
	! grep other-one err &&
	test_must_fail aptix -C view rev-parse refs/conversations/other-one &&
	test_must_fail aptix -C a push origin no-such 2>err &&
	grep "no conversation .no-such." err
'

test_expect_success 'sessions lists the fetched conversations' '
	aptix -C b fetch &&
	aptix -C b sessions --all-workspaces >actual &&
	grep solo actual
'

test_expect_success 'a push by URL, without a remote' '
	aptix -C a push "$PG_APP_URL" solo 2>err &&
	grep "new conversation" err &&
	mkdir dv &&
	aptix -C dv init -q --backend "$PG_APP_URL" &&
	aptix -C dv log --format=%s refs/conversations/solo >actual &&
	echo "solo turn" >expect &&
	test_cmp expect actual
'

test_expect_success 'a clone that fails midway leaves nothing behind' '
	# an org whose remote lost an object a ref reaches
	aptix -C a remote add --org broken broken "$PG_APP_URL" &&
	aptix -C a push -q broken &&
	head=$(aptix -C a rev-parse HEAD) &&
	pg_sql -c "DELETE FROM aptix_objects WHERE org = '"'"'broken'"'"' AND id = '"'"'\\x$head'"'"'" &&
	test_must_fail aptix clone -q --org broken "$PG_APP_URL" halfclone 2>err &&
	cat err &&
	test_path_is_missing halfclone &&
	mkdir kept &&
	echo mine >kept/file &&
	test_must_fail aptix clone -q --org broken "$PG_APP_URL" kept 2>err &&
	test_path_is_missing kept/.aptix &&
	test_path_is_file kept/file
'

test_expect_success 'stop the server' '
	stop_pg
'

test_done
