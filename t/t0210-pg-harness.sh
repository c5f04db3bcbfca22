#!/bin/bash

test_description='the PostgreSQL server of lib-pg.sh: private socket, a role that owns nothing'

. ./test-lib.sh
. "$TEST_DIRECTORY/lib-pg.sh"

if ! test_have_prereq POSTGRES
then
	skip_all='PostgreSQL is not installed (make deps)'
	test_done
fi

test_expect_success 'start a server of our own' '
	start_pg &&
	test -S "$PGHOST/.s.PGSQL.$PGPORT" &&
	pg_sql -c "SHOW listen_addresses" >addr &&
	echo >expect &&
	test_cmp expect addr
'

test_expect_success 'the application role is no superuser and bypasses no RLS' '
	pg_sql -c "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = '\''aptix_app'\''" >actual &&
	echo "f|f" >expect &&
	test_cmp expect actual
'

test_expect_success 'libpq URLs reach it as either role' '
	psql -X -At "$PG_APP_URL" -c "SELECT current_user" >actual &&
	echo aptix_app >expect &&
	test_cmp expect actual
'

test_expect_success 'stop it by PID' '
	pid=$(cat pg.pid) &&
	stop_pg &&
	! kill -0 "$pid" 2>/dev/null &&
	! pg_isready -q -h "$PGHOST" -p "$PGPORT"
'

test_done
