#!/bin/bash

test_description='remotes under stress: concurrent pushers, killed pushes, bad logins

Sixteen stores push the same conversation at once: each compare-and-swap
is won by exactly one, and a loser changes no ref (its push is one
transaction). A push killed with SIGKILL at any moment leaves the remote
with no ref to a missing object (fsck clean). A wrong password, a host
that cannot be reached and a malformed URL give clear errors that hold
no credential.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

pg_require standin

N=16

conv_of () {
	aptix -C "$1" symbolic-ref HEAD | sed "s|^refs/conversations/||"
}

test_expect_success 'setup: a server, a remote with one conversation' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin &&
	mkdir seed &&
	aptix -C seed init -q &&
	aptix -C seed remote add --org race origin "$PG_APP_URL" &&
	aptix -C seed continue -q --no-rag --no-stream -m "common turn" &&
	C=$(conv_of seed) &&
	aptix -C seed push -q &&
	mkdir view &&
	aptix -C view init -q --backend "$PG_APP_URL" --org race
'

test_expect_success "setup: $N clones, each with a turn of its own" '
	for i in $(seq $N)
	do
		aptix clone -q --org race "$PG_APP_URL" p$i &&
		aptix -C p$i continue -q --no-rag --no-stream -m "turn of $i" &&
		aptix -C p$i switch -c own-$i >/dev/null &&
		aptix -C p$i continue -q --no-rag --no-stream -m "own $i" &&
		aptix -C p$i switch "$C" >/dev/null || return 1
	done
'

test_expect_success "$N pushers at once: each CAS won by exactly one" '
	pids= &&
	for i in $(seq $N)
	do
		{ aptix -C p$i push origin "$C" own-$i 2>push$i.err
		  echo $? >push$i.rc; } &
		pids="$pids $!"
	done &&
	wait $pids &&
	cat push*.rc | sort | uniq -c | sed "s/^ *//" >actual &&
	printf "1 0\n$((N - 1)) 1\n" >expect &&
	test_cmp expect actual &&
	winner=$(grep -l "^0$" push*.rc | sed "s/push\(.*\)\.rc/\1/") &&
	grep -h "rejected.* $C -> $C " push*.err >rejected &&
	test_line_count = $((N - 1)) rejected &&
	! grep -v "(fetch first)$" rejected &&
	aptix -C view rev-parse "refs/conversations/$C" >actual &&
	aptix -C p$winner rev-parse "refs/conversations/$C" >expect &&
	test_cmp expect actual &&
	# a push that lost the CAS changed nothing (one transaction); one
	# that saw the conversation moved pushed its other one alone
	grep -h "own-.*(atomic push failed)$" push*.err |
		sed "s/.* -> \(own-[0-9]*\) .*/refs\/conversations\/\1/" >lost &&
	aptix -C view for-each-ref --format="%(refname)" refs/conversations/ |
		grep "/own-" >pushed &&
	test_line_count = $((N - $(wc -l <lost))) pushed &&
	grep "own-$winner$" pushed &&
	! grep -x -f lost pushed &&
	aptix -C view reflog "refs/conversations/$C" >reflog &&
	test_line_count = 2 reflog &&
	aptix -C view fsck
'

test_expect_success 'the losers fetch, fork and push: nothing lost' '
	for i in $(seq $N)
	do
		test $i = $winner && continue
		aptix -C p$i push -q --fork origin "$C" own-$i || return 1
	done &&
	aptix -C view for-each-ref --format="%(refname)" >refs &&
	test $(grep -c "/own-[0-9]*$" refs) = $N &&
	test $(grep -c -- "-fork-" refs) = $((N - 1)) &&
	aptix -C view fsck
'

test_expect_success 'setup: a store with a long history' '
	"$TEST_DIRECTORY/perf/build-store.sh" 20 1500 "$TRASH_DIRECTORY/big" >/dev/null &&
	aptix -C big remote add --org killed origin "$PG_APP_URL" &&
	mkdir kview &&
	aptix -C kview init -q --backend "$PG_APP_URL" --org killed
'

test_expect_success 'push killed by SIGKILL at random moments: fsck on the remote clean' '
	for delay in 0.05 0.2 0.4 0.7 1.0 0.3
	do
		{ aptix -C big push -q origin 2>/dev/null & } &&
		pid=$! &&
		sleep $delay &&
		kill -9 $pid 2>/dev/null
		wait $pid 2>/dev/null
		aptix -C kview fsck >fsck.out 2>&1 || {
			cat fsck.out
			return 1
		}
	done &&
	aptix -C big push -q origin &&
	aptix -C big for-each-ref --format="%(objectname) %(refname)" refs/conversations/ >expect &&
	aptix -C kview for-each-ref --format="%(objectname) %(refname)" refs/conversations/ >actual &&
	test_cmp expect actual &&
	aptix -C kview fsck
'

test_expect_success 'setup: a role that logs in with a password' '
	pg_sql -c "CREATE ROLE aptix_pw LOGIN PASSWORD '"'"'Right4pw'"'"' NOSUPERUSER" &&
	pg_sql -c "GRANT aptix_app TO aptix_pw" &&
	hba="$TRASH_DIRECTORY/pg/data/pg_hba.conf" &&
	{ echo "local all aptix_pw scram-sha-256" && cat "$hba"; } >hba.new &&
	cat hba.new >"$hba" &&
	pg_sql -c "SELECT pg_reload_conf()" &&
	PW_URL=$(printf "%s" "$PG_APP_URL" | sed "s/user=aptix_app/user=aptix_pw/")
'

test_expect_success 'a wrong password: a clear error, the password nowhere' '
	test_expect_code 128 env PGPASSWORD=Wrong7pw aptix -C seed push "$PW_URL" >out 2>err &&
	grep "password authentication failed" err &&
	! grep -e Wrong7pw -e Right4pw out err &&
	test_expect_code 128 env PGPASSWORD=Wrong7pw aptix clone "$PW_URL" pwclone >out 2>err &&
	grep "password authentication failed" err &&
	! grep -e Wrong7pw -e Right4pw out err &&
	test_path_is_missing pwclone/.aptix
'

test_expect_success 'the right password from ~/.pgpass works' '
	echo "*:*:*:aptix_pw:Right4pw" >"$HOME/.pgpass" &&
	chmod 600 "$HOME/.pgpass" &&
	aptix -C seed push "$PW_URL" >out 2>err &&
	! grep Right4pw out err &&
	rm -f "$HOME/.pgpass"
'

test_expect_success 'a host that cannot be reached: a clear error' '
	url=$(printf "%s" "$PG_APP_URL" | sed "s|host=[^&]*|host=$TRASH_DIRECTORY/nowhere|") &&
	test_expect_code 128 aptix -C seed push "$url" 2>err &&
	grep "cannot connect to the PostgreSQL store" err &&
	aptix -C seed remote add down "$url" &&
	test_expect_code 128 aptix -C seed fetch down 2>err &&
	grep "cannot connect to the PostgreSQL store" err
'

test_expect_success 'a malformed URL: a clear error, nothing stored' '
	test_expect_code 128 aptix -C seed remote add bad "postgresql://h/db?nosuchparam=1" 2>err &&
	grep "invalid PostgreSQL URL" err &&
	test_expect_code 128 aptix -C seed push "postgresql://h:notaport/db" 2>err &&
	test -s err &&
	test_must_fail aptix -C seed config --get remote.bad.url &&
	test_expect_code 128 aptix clone "postgresql://%zz" badclone 2>err &&
	grep "invalid PostgreSQL URL" err &&
	test_path_is_missing badclone
'

test_expect_success 'stop the server' '
	stop_pg
'

test_done
