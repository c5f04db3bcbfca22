#!/bin/bash

test_description='a shared store on PostgreSQL: a user'"'"'s conversations are private unless shared

Each conversation of a shared store has an owner (the aptix.user of the
transaction that started it: postgresql.user, else the role logged in
as); row-level security shows its refs, reflogs, index records and
claims to its owner alone until it is shared (aptix share). Another user
of the org can neither see, read, fork nor move a private conversation,
and is told "not found" exactly as for a conversation that does not
exist. Run as the application role, which owns no table.'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"
. "$TEST_DIRECTORY/lib-standin.sh"

pg_require standin

# app_sql <org> <user> <sql>: as aptix_app, with aptix.org and
# aptix.user set by SET LOCAL as aptix sets them (an empty one unset).
app_sql () {
	{
		echo "BEGIN;"
		test -z "$1" || echo "SET LOCAL aptix.org = '$1';"
		test -z "$2" || echo "SET LOCAL aptix.\"user\" = '$2';"
		echo "$3;"
		echo "COMMIT;"
	} | psql -X -q -v ON_ERROR_STOP=1 -At "$PG_APP_URL"
}

# rows_of <org> <user> <conv>: the rows of conversation conv that a
# session of that org and user sees, in every table that holds some.
rows_of () {
	app_sql "$1" "$2" "SELECT (SELECT count(*) FROM aptix_refs WHERE conv = '$3') + (SELECT count(*) FROM aptix_reflog WHERE conv = '$3') + (SELECT count(*) FROM aptix_index WHERE conv = '$3') + (SELECT count(*) FROM aptix_claims WHERE conv = '$3') + (SELECT count(*) FROM aptix_owners WHERE conv = '$3')"
}

# same_error <id> <other-id> <command...>: the command of bob (or of
# $who) fails for both conversation ids with the same message, but for
# the id itself.
same_error () {
	local a=$1 b=$2
	shift 2 &&
	test_must_fail aptix -C "${who:-bob}" "$@" "$a" 2>err.a &&
	test_must_fail aptix -C "${who:-bob}" "$@" "$b" 2>err.b &&
	sed -e "s|$a|<id>|g" err.a >err.a.n &&
	sed -e "s|$b|<id>|g" err.b >err.b.n &&
	test_cmp err.b.n err.a.n
}

test_expect_success 'setup: a server, its schema, alice and bob of one org' '
	start_pg &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	pg_sql -c "CREATE ROLE aptix_bob LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE aptix_app" &&
	bob_url=$(printf "%s" "$PG_APP_URL" | sed -e "s/user=aptix_app/user=aptix_bob/") &&
	start_standin &&
	mkdir alice bob &&
	aptix -C alice init -q --backend "$PG_APP_URL" --org acme &&
	aptix -C bob init -q --backend "$bob_url" --org acme &&
	aptix -C alice continue -q --no-rag --no-stream -m "alice secret plan" &&
	aptix -C alice continue -q --no-rag --no-stream -m "alice second turn" &&
	A=$(aptix -C alice symbolic-ref HEAD) &&
	A=${A#refs/conversations/} &&
	echo "$A" >A &&
	aptix -C bob continue -q --no-rag --no-stream -m "bob own turn" &&
	B=$(aptix -C bob symbolic-ref HEAD) &&
	B=${B#refs/conversations/} &&
	echo "$B" >B &&
	# an id of the same shape that nobody uses
	N=00000000-0000-4000-8000-000000000000 &&
	echo "$N" >N
'
A=$(cat A 2>/dev/null)
B=$(cat B 2>/dev/null)
N=$(cat N 2>/dev/null)

test_expect_success 'share lists what the user sees, with its owner' '
	aptix -C alice share >actual &&
	echo "$A private aptix_app" >expect &&
	test_cmp expect actual &&
	aptix -C bob share >actual &&
	echo "$B private aptix_bob" >expect &&
	test_cmp expect actual
'

test_expect_success 'bob sees none of alice'"'"'s private conversation' '
	aptix -C bob sessions >out &&
	! grep "${A%%-*}" out &&
	! grep "alice" out &&
	aptix -C bob log --all --format=%s >out &&
	echo "bob own turn" >expect &&
	test_cmp expect out &&
	aptix -C bob for-each-ref >out &&
	! grep "$A" out &&
	aptix -C bob search secret >out 2>&1 &&
	! grep "alice" out
'

test_expect_success 'as the application role: 0 rows of it for bob, all for alice' '
	rows_of acme aptix_bob "$A" >n &&
	echo 0 >expect &&
	test_cmp expect n &&
	rows_of acme aptix_app "$A" >n &&
	! test_cmp expect n
'

test_expect_success 'no aptix.user: 0 private rows; another org: 0 rows' '
	rows_of acme "" "$A" >n &&
	echo 0 >expect &&
	test_cmp expect n &&
	rows_of acme "" "$B" >n &&
	test_cmp expect n &&
	rows_of other aptix_app "$A" >n &&
	test_cmp expect n
'

test_expect_success 'bob cannot read, fork, switch to or share it: "not found", as for none' '
	same_error "$A" "$N" log &&
	same_error "$A" "$N" show &&
	same_error "$A" "$N" fork -q --no-rag --no-stream -m "steal" &&
	same_error "$A" "$N" switch &&
	same_error "$A" "$N" share &&
	same_error "$A" "$N" share --unshare &&
	same_error "refs/conversations/$A" "refs/conversations/$N" rev-parse &&
	same_error "refs/conversations/$A" "refs/conversations/$N" reflog
'

test_expect_success 'bob cannot move it' '
	h=$(aptix -C alice rev-parse HEAD) &&
	hb=$(aptix -C bob rev-parse HEAD) &&
	test_must_fail aptix -C bob update-ref "refs/conversations/$A" "$hb" "$h" 2>err.a &&
	test_must_fail aptix -C bob update-ref "refs/conversations/$N" "$hb" "$h" 2>err.b &&
	sed -e "s/$A/<id>/g" err.a >err.a.n &&
	sed -e "s/$N/<id>/g" err.b >err.b.n &&
	test_cmp err.b.n err.a.n &&
	test_must_fail aptix -C bob update-ref -d "refs/conversations/$A" "$h" 2>err.a &&
	test_must_fail aptix -C bob update-ref -d "refs/conversations/$N" "$h" 2>err.b &&
	sed -e "s/$A/<id>/g" err.a >err.a.n &&
	sed -e "s/$N/<id>/g" err.b >err.b.n &&
	test_cmp err.b.n err.a.n &&
	test "$(aptix -C alice rev-parse "refs/conversations/$A")" = "$h"
'

test_expect_success 'shared: bob sees, reads, forks and continues it' '
	aptix -C alice share "$A" >out &&
	echo "Shared conversation '\''$A'\''" >expect &&
	test_cmp expect out &&
	aptix -C bob sessions >out &&
	grep "${A%%-*}  .*alice secret plan" out &&
	aptix -C bob log --format=%s "$A" >actual &&
	printf "alice second turn\nalice secret plan\n" >expect &&
	test_cmp expect actual &&
	aptix -C bob share >actual &&
	sort >expect <<-EOF &&
	$A shared aptix_app
	$B private aptix_bob
	EOF
	test_cmp expect actual &&
	aptix -C bob fork -q --no-rag --no-stream -m "bob forked" "$A" &&
	F=$(aptix -C bob symbolic-ref HEAD) &&
	test "$F" != "refs/conversations/$A" &&
	aptix -C bob switch "$A" &&
	aptix -C bob continue -q --no-rag --no-stream -m "bob in alice" &&
	aptix -C alice log -1 --format=%s "$A" >actual &&
	echo "bob in alice" >expect &&
	test_cmp expect actual &&
	aptix -C bob fsck
'

test_expect_success 'only its owner unshares it' '
	test_must_fail aptix -C bob share --unshare "$A" 2>err &&
	grep "is another user" err &&
	aptix -C bob share --json >out &&
	grep "\"shared\": true" out
'

test_expect_success 'unshared: hidden from bob again; alice keeps it all' '
	aptix -C alice share --unshare "$A" >out &&
	aptix -C bob switch "$B" &&
	aptix -C bob sessions >out &&
	! grep "${A%%-*}" out &&
	aptix -C bob log --all --format=%s >out &&
	! grep "alice" out &&
	same_error "$A" "$N" log &&
	rows_of acme aptix_bob "$A" >n &&
	echo 0 >expect &&
	test_cmp expect n &&
	aptix -C alice log --format=%s "$A" >actual &&
	printf "bob in alice\nalice second turn\nalice secret plan\n" >expect &&
	test_cmp expect actual &&
	aptix -C alice fsck
'

test_expect_success 'postgresql.user: one role, two users' '
	mkdir carol &&
	aptix -C carol init -q --backend "$PG_APP_URL" --org acme --user carol &&
	aptix -C carol config --get postgresql.user >actual &&
	echo carol >expect &&
	test_cmp expect actual &&
	aptix -C carol sessions >out &&
	! grep "${A%%-*}" out &&
	same_error "$A" "$N" log &&
	aptix -C carol continue -q --no-rag --no-stream -m "carol turn" &&
	aptix -C carol share >out &&
	grep " private carol$" out &&
	aptix -C alice share >out &&
	! grep carol out
'

# downgrade_to_2: the database as schema 2 left it (every conversation
# the org's), its rows kept: what an upgrade starts from.
downgrade_to_2 () {
	pg_sql <<-\EOF
	BEGIN;
	DO $$
	DECLARE
		t text;
	BEGIN
		FOREACH t IN ARRAY ARRAY['aptix_refs', 'aptix_reflog',
					 'aptix_index', 'aptix_claims']
		LOOP
			EXECUTE format('DROP POLICY aptix_owned ON %I', t);
			EXECUTE format('DROP TRIGGER aptix_own ON %I', t);
			EXECUTE format('CREATE POLICY aptix_org ON %I '
				'USING (org = current_setting(''aptix.org'', true)) '
				'WITH CHECK (org = current_setting(''aptix.org'', true))',
				t);
		END LOOP;
	END
	$$;
	ALTER TABLE aptix_refs DROP COLUMN conv;
	ALTER TABLE aptix_reflog DROP COLUMN conv;
	ALTER TABLE aptix_index DROP COLUMN conv;
	DROP TABLE aptix_owners;
	CREATE OR REPLACE FUNCTION aptix_refs_notify() RETURNS trigger
	LANGUAGE plpgsql AS $$
	DECLARE
		r aptix_refs;
	BEGIN
		IF TG_OP = 'DELETE' THEN
			r := OLD;
		ELSE
			r := NEW;
		END IF;
		PERFORM pg_notify('aptix_' || substr(encode(sha256(
			convert_to(r.org, 'UTF8')), 'hex'), 1, 32), r.name);
		RETURN NULL;
	END
	$$;
	DROP FUNCTION aptix_own(), aptix_sees(text, text),
		aptix_owners_notify(),
		aptix_index_conv(text, smallint, bytea, bytea),
		aptix_conv_of_index(smallint, bytea, bytea),
		aptix_conv_of_ref(text);
	DELETE FROM aptix_schema WHERE version = 3;
	COMMIT;
	EOF
}

test_expect_success 'a store of schema 2: upgrade asked for; after it, what was there is shared' '
	downgrade_to_2 &&
	test_must_fail aptix -C alice log -1 2>err &&
	grep "of version 2, older than this aptix needs (3)" err &&
	grep "schema.sql again" err &&
	pg_sql -v app_role=aptix_app -f "$SCHEMA" &&
	aptix -C bob log --format=%s "$A" >actual &&
	printf "bob in alice\nalice second turn\nalice secret plan\n" >expect &&
	test_cmp expect actual &&
	aptix -C bob share >actual &&
	grep "^$A shared -$" actual &&
	grep "^$B shared -$" actual &&
	test_must_fail aptix -C alice share --unshare "$A" 2>err &&
	grep "is another user" err &&
	# an administrator names its owner; then the owner unshares it
	pg_sql -c "UPDATE aptix_owners SET owner = '\''aptix_app'\'' WHERE conv = '\''$A'\''" &&
	aptix -C alice share --unshare "$A" &&
	same_error "$A" "$N" log &&
	aptix -C bob switch -c &&
	aptix -C bob continue -q --no-rag --no-stream -m "bob after the upgrade" &&
	C=$(aptix -C bob symbolic-ref HEAD) &&
	C=${C#refs/conversations/} &&
	aptix -C bob share >actual &&
	grep "^$C private aptix_bob$" actual &&
	who=alice same_error "$C" "$N" log &&
	aptix -C alice fsck &&
	aptix -C bob fsck
'

test_expect_success 'a store of one user (LMDB) has no one to share with' '
	aptix init -q solo &&
	test_must_fail aptix -C solo share 2>err &&
	grep "no users to share with" err &&
	test_must_fail aptix -C solo share HEAD 2>err
'

test_expect_success 'stop' '
	stop_standin &&
	stop_pg
'

test_done
