#!/bin/bash

test_description='a store that is PostgreSQL: init, turns, history, orgs, credentials, a dead server

aptix init --backend postgresql://... makes a store whose data is in a
database (the schema made by its admin: contrib/postgresql/schema.sql)
and whose directory holds only its config; every command works on it.
Each org sees its own rows alone (row-level security, as the role
aptix_app, which owns nothing); a URL with a password is never stored;
a server that is down gives a clear error and loses nothing.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

if ! test_have_prereq POSTGRES
then
	skip_all='PostgreSQL is not installed (make deps)'
	test_done
fi
if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

SCHEMA=$TEST_DIRECTORY/../contrib/postgresql/schema.sql

# app_sql <org> <sql>: a query as aptix_app with aptix.org set (or not,
# for an empty org), and aptix.user as the role (whose conversations
# these are), as aptix sets them: SET LOCAL in a transaction.
app_sql () {
	if test -n "$1"
	then
		psql -X -q -v ON_ERROR_STOP=1 -At "$PG_APP_URL" <<-EOF
		BEGIN;
		SET LOCAL aptix.org = '$1';
		SET LOCAL aptix."user" = 'aptix_app';
		$2;
		COMMIT;
		EOF
	else
		psql -X -q -v ON_ERROR_STOP=1 -At "$PG_APP_URL" -c "$2"
	fi
}

# subject_is <text>: the last turn of ws has that instruction.
subject_is () {
	aptix -C ws log -1 --format=%s >actual &&
	echo "$1" >expect &&
	test_cmp expect actual
}

# bg_turn <fault> <instruction>: a turn of ws in the background, held by
# the stand-in's fault; $pid is it, once the stand-in has its request.
bg_turn () {
	local n
	n=$(request_count) &&
	standin_fault "$1" &&
	{ aptix -C ws continue --no-rag --no-stream -m "$2" >bg.out 2>&1 & } &&
	pid=$! &&
	test_when_finished "kill_children $pid" &&
	wait_for_requests $((n + 1))
}

test_expect_success 'setup: a server, its schema, the stand-in' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	start_standin
'

test_expect_success 'a URL with a password is refused, and not echoed' '
	mkdir pw &&
	url=$(printf "%s" "$PG_APP_URL" |
	      sed -e "s|postgresql://|postgresql://aptix_app:Hunter2pw@|") &&
	test_must_fail aptix -C pw init --backend "$url" 2>err &&
	grep "holds a password" err &&
	! grep Hunter2pw err &&
	test_path_is_missing pw/.aptix &&
	test_must_fail aptix -C pw init --backend "$PG_APP_URL&password=Hunter2pw" 2>err &&
	grep "holds a password" err &&
	! grep Hunter2pw err &&
	test_path_is_missing pw/.aptix
'

test_expect_success 'a database without the schema: a clear error, no store' '
	pg_sql -d postgres -c "CREATE DATABASE noschema" &&
	mkdir bare &&
	url=$(printf "%s" "$PG_APP_URL" | sed -e "s|:///aptix?|:///noschema?|") &&
	test_must_fail aptix -C bare init --backend "$url" 2>err &&
	grep "no aptix schema" err &&
	grep "schema.sql" err &&
	test_path_is_missing bare/.aptix
'

test_expect_success 'init --backend: the directory holds only the config' '
	mkdir ws &&
	aptix -C ws init --backend "$PG_APP_URL" --org acme >out &&
	grep "Initialized empty aptix store" out &&
	ls ws/.aptix >files &&
	echo config >expect &&
	test_cmp expect files &&
	aptix -C ws config --get extensions.storage >actual &&
	echo postgresql >expect &&
	test_cmp expect actual &&
	aptix -C ws config --get postgresql.org >actual &&
	echo acme >expect &&
	test_cmp expect actual
'

test_expect_success 'turns, log, show, sessions, fork and fsck on it' '
	(
		cd ws &&
		echo hello >a.txt &&
		aptix continue -q --no-rag --no-stream --file a.txt \
			-m "first turn" &&
		aptix continue -q --no-rag --no-stream -m "second turn" &&
		aptix log --format=%s >../subjects &&
		printf "second turn\nfirst turn\n" >../expect &&
		test_cmp ../expect ../subjects &&
		aptix show --json HEAD >../show.json &&
		aptix sessions >../sessions &&
		aptix fork -q --no-rag --no-stream -m "forked turn" HEAD~1 &&
		aptix log --all --format=%s >../all &&
		aptix fsck
	) &&
	grep "second turn" show.json &&
	grep "2 turns" sessions &&
	sort all >actual &&
	printf "first turn\nforked turn\nsecond turn\n" >expect &&
	test_cmp expect actual &&
	app_sql acme "SELECT count(*) > 0 FROM aptix_objects" >actual &&
	echo t >expect &&
	test_cmp expect actual
'

test_expect_success 'another host of the same org sees the same history' '
	mkdir ws2 &&
	aptix -C ws2 init --backend "$PG_APP_URL" --org acme >out &&
	grep "^Reinitialized existing aptix store in " out &&
	! grep "Initialized empty" out &&
	aptix -C ws2 log --all --format=%H | sort >actual &&
	aptix -C ws log --all --format=%H | sort >expect &&
	test_cmp expect actual &&
	test_line_count = 3 actual
'

test_expect_success 'another org sees none of it' '
	mkdir other &&
	aptix -C other init -q --backend "$PG_APP_URL" --org other &&
	aptix -C other log --all --format=%H >actual &&
	test_must_be_empty actual &&
	aptix -C other continue -q --no-rag --no-stream -m "other org" &&
	aptix -C other log --all --format=%s >actual &&
	echo "other org" >expect &&
	test_cmp expect actual &&
	aptix -C ws log --all --format=%s | sort >actual &&
	printf "first turn\nforked turn\nsecond turn\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'RLS as aptix_app: no row of another org, none without an org' '
	for t in aptix_meta aptix_objects aptix_refs aptix_reflog aptix_index
	do
		app_sql acme "SELECT count(*) FROM $t WHERE org <> '\''acme'\''" >n &&
		echo 0 >expect &&
		test_cmp expect n &&
		app_sql "" "SELECT count(*) FROM $t" >n &&
		test_cmp expect n &&
		app_sql acme "SELECT count(*) > 0 FROM $t" >n &&
		echo t >expect &&
		test_cmp expect n || return 1
	done &&
	# the admin (a superuser, whom RLS does not bind) sees both orgs
	pg_sql -c "SELECT string_agg(DISTINCT org, '\'' '\'') FROM aptix_refs" >n &&
	echo "acme other" >expect &&
	test_cmp expect n
'

test_expect_success 'RLS: another org cannot write into acme, nor learn its objects' '
	id=$(aptix -C ws log -1 --format=%H) &&
	test_must_fail app_sql other "INSERT INTO aptix_refs (org, name, value) VALUES ('\''acme'\'', '\''refs/x'\'', '\''y'\'')" 2>err &&
	grep "row-level security" err &&
	app_sql other "UPDATE aptix_refs SET value = '\''z'\'' WHERE org = '\''acme'\''" &&
	aptix -C ws log -1 --format=%H >actual &&
	echo "$id" >expect &&
	test_cmp expect actual &&
	obj=$(app_sql acme "SELECT encode(id, '\''hex'\'') FROM aptix_objects LIMIT 1") &&
	app_sql other "SELECT count(*) FROM aptix_objects WHERE id = decode('\''$obj'\'', '\''hex'\'')" >n &&
	echo 0 >expect &&
	test_cmp expect n
'

test_expect_success 'the application role owns nothing, bypasses nothing' '
	pg_sql -c "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = '\''aptix_app'\''" >n &&
	echo 0 >expect &&
	test_cmp expect n
'

test_expect_success 'a password put in the config by hand is refused, not shown' '
	cp -R ws/.aptix pwstore &&
	url=$(printf "%s" "$PG_APP_URL" |
	      sed -e "s|postgresql://|postgresql://aptix_app:Hunter2pw@|") &&
	printf "[extensions]\n\tstorage = postgresql\n[postgresql]\n\turl = %s\n\torg = acme\n" \
		"$url" >pwstore/config &&
	test_must_fail env APTIX_DIR="$PWD/pwstore" aptix log 2>err &&
	grep "of the store holds a password" err &&
	grep "remove it" err &&
	! grep Hunter2pw err
'

test_expect_success 'a dead server: a clear error, no request sent, nothing lost' '
	aptix -C ws log --all --format=%H >before &&
	n=$(request_count) &&
	stop_pg &&
	test_must_fail env PGPASSWORD=Hunter2pw \
		aptix -C ws continue --no-rag --no-stream -m "lost?" 2>err &&
	grep "cannot connect to the PostgreSQL store" err &&
	! grep Hunter2pw err &&
	test "$(request_count)" = "$n" &&
	test_must_fail aptix -C ws log 2>err &&
	grep "PostgreSQL" err &&
	start_pg &&
	aptix -C ws log --all --format=%H >after &&
	test_cmp before after &&
	aptix -C ws continue -q --no-rag --no-stream -m "after the restart" &&
	subject_is "after the restart" &&
	aptix -C ws fsck
'

test_expect_success 'the server restarted during a turn: the turn commits' '
	bg_turn "{\"kind\":\"slow\",\"delay\":4}" "across a restart" &&
	stop_pg &&
	start_pg &&
	wait $pid &&
	subject_is "across a restart" &&
	aptix -C ws fsck
'

test_expect_success 'a turn killed -9 holds a lease row; the next command recovers it' '
	head=$(aptix -C ws rev-parse HEAD) &&
	bg_turn "{\"kind\":\"hang\",\"max\":30}" killed &&
	app_sql acme "SELECT count(*) FROM aptix_claims" >n &&
	echo 1 >expect &&
	test_cmp expect n &&
	kill -9 $pid &&
	{ wait $pid; true; } &&
	aptix -C ws continue -q --no-rag --no-stream -m "after the kill" &&
	app_sql acme "SELECT count(*) FROM aptix_claims" >n &&
	echo 0 >expect &&
	test_cmp expect n &&
	aptix -C ws log --all --oneline >log &&
	grep "\[failed\] killed$" log &&
	test "$(aptix -C ws rev-parse HEAD~1)" = "$head" &&
	aptix -C ws fsck
'

test_expect_success 'a user name in the URL (user@) is accepted, for a store and a remote' '
	mkdir named &&
	url=$(printf "%s" "$PG_APP_URL" |
	      sed -e "s|postgresql://|postgresql://aptix_app@|" -e "s|&user=aptix_app||") &&
	case "$url" in *user=*) false ;; *aptix_app@*) : ;; *) false ;; esac &&
	env -u PGUSER aptix -C named init --backend "$url" --org userat >out &&
	grep "Initialized empty aptix store" out &&
	aptix -C named config --get postgresql.url >actual &&
	echo "$url" >expect &&
	test_cmp expect actual &&
	env -u PGUSER aptix -C named log --all &&
	mkdir local &&
	aptix -C local init -q &&
	aptix -C local remote add --org userat origin "$url" &&
	aptix -C local config --get remote.origin.url >actual &&
	test_cmp expect actual &&
	pw=$(printf "%s" "$url" | sed -e "s|aptix_app@|aptix_app:Hunter2pw@|") &&
	test_must_fail aptix -C local remote add --org userat other "$pw" 2>err &&
	! grep Hunter2pw err &&
	test_must_fail aptix -C local config remote.other.url "$pw" 2>err &&
	! grep Hunter2pw err &&
	test_must_fail aptix -C local config --get remote.other.url
'

test_expect_success 'HEAD is the user'"'"'s (the role'"'"'s), not the org'"'"'s' '
	pg_sql -c "CREATE ROLE aptix_bob LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE aptix_app" &&
	bob_url=$(printf "%s" "$PG_APP_URL" | sed -e "s/user=aptix_app/user=aptix_bob/") &&
	mkdir alice bob &&
	aptix -C alice init -q --backend "$PG_APP_URL" --org heads &&
	aptix -C bob init -q --backend "$bob_url" --org heads &&
	aptix -C alice continue -q --no-rag --no-stream -m "alice turn" &&
	aptix -C bob continue -q --no-rag --no-stream -m "bob turn" &&
	a=$(aptix -C alice symbolic-ref HEAD) &&
	b=$(aptix -C bob symbolic-ref HEAD) &&
	test "$a" != "$b" &&
	aptix -C alice log -1 --format=%s >actual &&
	echo "alice turn" >expect &&
	test_cmp expect actual &&
	aptix -C bob log -1 --format=%s >actual &&
	echo "bob turn" >expect &&
	test_cmp expect actual &&
	aptix -C alice share HEAD >/dev/null &&
	aptix -C bob share HEAD >/dev/null &&
	aptix -C bob switch "${a#refs/conversations/}" &&
	test "$(aptix -C bob symbolic-ref HEAD)" = "$a" &&
	aptix -C alice switch "${b#refs/conversations/}" &&
	test "$(aptix -C alice symbolic-ref HEAD)" = "$b" &&
	test "$(aptix -C bob symbolic-ref HEAD)" = "$a" &&
	aptix -C bob for-each-ref >refs &&
	aptix -C bob reflog HEAD >reflog &&
	! grep "HEAD@{aptix" refs reflog &&
	aptix -C bob fsck
'

test_expect_success 'a store made before: the org'"'"'s HEAD stands in until the user'"'"'s is written' '
	mkdir old1 old2 &&
	aptix -C old1 init -q --backend "$PG_APP_URL" --org legacy &&
	aptix -C old1 continue -q --no-rag --no-stream -m "legacy turn" &&
	pg_sql -c "UPDATE aptix_refs SET name = '\''HEAD'\'' WHERE org = '\''legacy'\'' AND name = '\''HEAD@{aptix_app}'\''" &&
	h=$(aptix -C old1 symbolic-ref HEAD) &&
	aptix -C old2 init -q --backend "$bob_url" --org legacy &&
	test "$(aptix -C old2 symbolic-ref HEAD)" = "$h" &&
	aptix -C old2 switch -c "bob-new" &&
	test "$(aptix -C old2 symbolic-ref HEAD)" = refs/conversations/bob-new &&
	test "$(aptix -C old1 symbolic-ref HEAD)" = "$h"
'

test_lazy_prereq STRACE '
	strace -f -e trace=sendto -o /dev/null true
'

Q="'"

# round_trips <command>: the messages aptix sends the server (libpq
# sends a pipeline in one sendto) beyond one per transaction the server
# logged; 3 are the startup packet, the schema version and the goodbye.
round_trips () {
	from=$(($(wc -l <pg.log) + 1)) &&
	# LeakSanitizer does not run under ptrace
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -e trace=sendto -o st aptix -C ws $1 >/dev/null &&
	sends=$(grep -c "^[0-9]* *sendto(" st) &&
	begins=$(tail -n "+$from" pg.log | grep -c -E "(statement|execute [^:]*): BEGIN") &&
	echo "$1: $sends sends, $begins transactions" &&
	test "$begins" -gt 0 &&
	test $((sends - begins)) -le 3
}

test_expect_success STRACE 'a transaction of one statement is one round trip' '
	pg_sql -c "ALTER ROLE aptix_app SET log_statement = ${Q}all$Q" &&
	test_when_finished "pg_sql -c \"ALTER ROLE aptix_app RESET log_statement\"" &&
	round_trips show &&
	round_trips "rev-parse HEAD" &&
	round_trips "log --oneline" &&
	aptix -C ws continue -q --no-rag --no-stream -m "after the round trips" &&
	subject_is "after the round trips"
'

# words_md <turns> <seed>: a session-md transcript of that many turns,
# each of 150 words of a vocabulary of 2,000 (words in many sessions
# leave their blocks for keys of their own, blocks fill and split)
words_md () {
	python3 - "$1" "$2" <<-\PY
	import random, sys
	rnd = random.Random(int(sys.argv[2]))
	print("---\nprovider: openai\nmodel: gpt-5\ncreated_at: 2026-11-28T10:0%s:00Z\n---" % sys.argv[2])
	for t in range(int(sys.argv[1])):
	    for role in ("User", "Assistant"):
	        w = " ".join("w%x" % (rnd.randrange(40) if rnd.random() < 0.3 else rnd.randrange(2000)) for _ in range(150))
	        print("\n## %s\n\n%s" % (role, w))
	PY
}

# search_rows <org>: the search index records of the org
search_rows () {
	pg_sql -At -c "SELECT encode(key, ${Q}hex$Q), encode(val, ${Q}hex$Q) FROM aptix_index WHERE org = $Q$1$Q AND tbl = 4 ORDER BY key"
}

test_expect_success 'the search index read ahead is the index read a word at a time' '
	words_md 24 1 >a.md &&
	words_md 12 2 >b.md &&
	for org in ahead oneby
	do
		mkdir $org &&
		aptix -C $org init -q --backend "$PG_APP_URL" --org $org || return 1
	done &&
	aptix -C ahead import -q session-md "$PWD/a.md" &&
	aptix -C ahead import -q session-md "$PWD/b.md" &&
	APTIX_TEST_NO_PREFETCH=1 aptix -C oneby import -q session-md "$PWD/a.md" &&
	APTIX_TEST_NO_PREFETCH=1 aptix -C oneby import -q session-md "$PWD/b.md" &&
	search_rows ahead >ahead.rows &&
	search_rows oneby >oneby.rows &&
	test $(wc -l <ahead.rows) -gt 150 &&
	test_cmp oneby.rows ahead.rows &&
	aptix -C ahead fsck --full &&
	aptix -C ahead log --all -S w1a --format=%H >ahead.log &&
	aptix -C oneby log --all -S w1a --format=%H >oneby.log &&
	test_line_count -gt 0 ahead.log &&
	test_cmp oneby.log ahead.log
'

test_expect_success STRACE 'a turn of a hundred words: its search records in a few round trips' '
	msg=$(for i in $(seq 1 100); do printf "word%d " $i; done) &&
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -e trace=sendto -o st aptix -C ws continue -q \
		--no-rag --no-stream -m "$msg" &&
	sends=$(grep -c "^[0-9]* *sendto(.*\(aptix_\|BEGIN\|COMMIT\)" st) &&
	echo "$sends sends to the server" &&
	test "$sends" -lt 150 &&
	aptix -C ws log -1 -S word57 --format=%s >out &&
	test_line_count = 1 out
'

test_expect_success 'stop' '
	stop_standin &&
	stop_pg
'

test_done
