#!/bin/bash

test_description='the PostgreSQL backend passes the backend conformance suite'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"

if ! test_have_prereq POSTGRES
then
	skip_all='PostgreSQL is not installed (make deps)'
	test_done
fi

UNIT=${APTIX_BUILD_DIR:-$TEST_DIRECTORY/..}/t/unit/aptix-unit
if ! test -x "$UNIT"
then
	skip_all='t/unit/aptix-unit is not built (make t/unit/aptix-unit)'
	test_done
fi

# The suite named, against the server; its output shown when it fails.
run_unit_ () {
	APTIX_TEST_PG_URL=$PG_APP_URL "$UNIT" "$1" >out 2>&1 ||
	{
		cat out
		return 1
	}
}

test_expect_success 'start a server and create the schema as its admin' '
	start_pg &&
	pg_sql -v app_role=aptix_app \
		-f "$TEST_DIRECTORY/../contrib/postgresql/schema.sql" &&
	pg_sql -c "SELECT max(version) FROM aptix_schema" >actual &&
	echo 3 >expect &&
	test_cmp expect actual
'

test_expect_success 'the schema script run again only grants' '
	pg_sql -v app_role=aptix_app \
		-f "$TEST_DIRECTORY/../contrib/postgresql/schema.sql"
'

test_expect_success 'the application role owns no table' '
	pg_sql -c "SELECT count(*) FROM pg_tables WHERE tableowner = '\''aptix_app'\''" >actual &&
	echo 0 >expect &&
	test_cmp expect actual
'

test_expect_success 'the domain conformance suite, as aptix_app' '
	run_unit_ backend &&
	grep -q "100%" out
'

test_expect_success 'the suite ran more tests with the server than without' '
	env -u APTIX_TEST_PG_URL "$UNIT" backend >plain 2>&1 &&
	with=$(sed -n "s/.*Checks: \([0-9]*\),.*/\1/p" out) &&
	without=$(sed -n "s/.*Checks: \([0-9]*\),.*/\1/p" plain) &&
	test "$with" -gt "$without"
'

test_expect_success 'the suite ran on PostgreSQL (its orgs left rows)' '
	pg_sql -c "SET aptix.org = x; SELECT count(DISTINCT org) > 3 FROM aptix_refs" >/dev/null &&
	psql -X -At "$PG_ADMIN_URL" -c "ALTER TABLE aptix_refs NO FORCE ROW LEVEL SECURITY" &&
	pg_sql -c "SELECT count(DISTINCT org) >= 3 FROM aptix_refs WHERE org LIKE '\''conformance-%'\''" >actual &&
	echo t >expect &&
	test_cmp expect actual &&
	psql -X -At "$PG_ADMIN_URL" -c "ALTER TABLE aptix_refs FORCE ROW LEVEL SECURITY"
'

test_expect_success 'stop the server' '
	stop_pg
'

test_done
