# shellcheck shell=bash
#
# lib-pg.sh -- a PostgreSQL server of the test's own, for the tests of
# the shared store (issue 26). Debian's postgresql (15) is enough: the
# server runs from its binaries, its data directory and its socket in
# the trash directory, reachable only through that Unix socket (no TCP
# port is opened), and it is stopped by PID at the end of the test.
#
#	. "$TEST_DIRECTORY/lib-pg.sh"     (after test-lib.sh)
#
#	test_have_prereq POSTGRES       initdb and postgres are installed
#	start_pg                        initdb (once) and start the server;
#	                                exports PGHOST (the socket's
#	                                directory), PGPORT, PGDATABASE
#	                                (aptix), PGUSER (the admin role) and
#	                                PG_ADMIN_URL / PG_APP_URL (libpq URLs
#	                                of the admin role and of aptix_app,
#	                                a role that owns nothing and is not a
#	                                superuser, as issue 26 asks)
#	stop_pg                         fast shutdown (SIGINT), then as
#	                                test_stop_server
#	pg_sql [<psql args>...]         run psql as the admin role on the
#	                                test's database (-X -q -v
#	                                ON_ERROR_STOP=1 -At)
#
# When the tests run as root, the server runs as the system user
# postgres (it refuses to run as root): its directories are given to
# that user.

pg_bindir_ () {
	local d
	if command -v pg_config >/dev/null 2>&1 &&
	   d=$(pg_config --bindir 2>/dev/null) && test -x "$d/initdb"
	then
		echo "$d"
		return 0
	fi
	for d in /usr/lib/postgresql/*/bin
	do
		if test -x "$d/initdb" && test -x "$d/postgres"
		then
			echo "$d"
			return 0
		fi
	done
	return 1
}

test_lazy_prereq POSTGRES '
	d=$(pg_bindir_) &&
	test -x "$d/postgres" &&
	command -v psql >/dev/null &&
	{ test "$(id -u)" != 0 || id postgres >/dev/null; }
'

# Run a command as the user the server runs as.
pg_as_owner_ () {
	if test "$(id -u)" = 0
	then
		setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
	else
		"$@"
	fi
}

start_pg () {
	local bin dir sock
	bin=$(pg_bindir_) || {
		echo "start_pg: no PostgreSQL binaries" >&2
		return 1
	}
	dir=$TRASH_DIRECTORY/pg
	sock=$dir/run
	# A Unix socket's path has at most 107 bytes.
	if test "${#sock}" -gt 90
	then
		sock=$(mktemp -d /tmp/aptix-pg.XXXXXX) || return 1
		test_when_finished "rm -rf '$sock'"
	fi
	mkdir -p "$dir/run" "$sock" || return 1
	if test "$(id -u)" = 0
	then
		chown -R postgres:postgres "$dir" "$sock" || return 1
	fi
	chmod 700 "$dir" "$sock" || return 1
	if ! test -f "$dir/data/PG_VERSION"
	then
		pg_as_owner_ "$bin/initdb" -D "$dir/data" -U aptix_admin \
			-A trust -E UTF8 --locale=C.UTF-8 --no-sync \
			>"$dir/initdb.log" 2>&1 || {
			cat "$dir/initdb.log" >&2
			return 1
		}
	fi
	PGHOST=$sock
	PGPORT=5432
	PGUSER=aptix_admin
	PGDATABASE=aptix
	export PGHOST PGPORT PGUSER PGDATABASE
	# No TCP listener: the socket in a directory of this test is the
	# only way in. fsync stays on: the store's durability is tested
	# against the real thing.
	# The command itself, not a shell function, so that the PID
	# test_start_server records is the postmaster's (setpriv execs).
	local as=()
	if test "$(id -u)" = 0
	then
		as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
	fi
	test_start_server pg "${as[@]}" "$bin/postgres" -D "$dir/data" \
		-k "$sock" -p "$PGPORT" -c listen_addresses= \
		-c max_connections=40 -c shared_buffers=16MB || return 1
	pg_wait_ready_ || return 1
	if ! psql -X -q -At -d postgres -c \
		"SELECT 1 FROM pg_database WHERE datname = 'aptix'" | grep -q 1
	then
		psql -X -q -v ON_ERROR_STOP=1 -d postgres <<-\EOF || return 1
		CREATE DATABASE aptix;
		CREATE ROLE aptix_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE
			NOBYPASSRLS;
		EOF
	fi
	# A URL's host parameter is percent-encoded (the trash directory
	# has a space in its name).
	sock=$(printf '%s' "$sock" | sed -e 's/%/%25/g' -e 's/ /%20/g' \
		-e 's/&/%26/g' -e 's/#/%23/g')
	PG_ADMIN_URL="postgresql:///aptix?host=$sock&port=$PGPORT&user=aptix_admin"
	PG_APP_URL="postgresql:///aptix?host=$sock&port=$PGPORT&user=aptix_app"
	export PG_ADMIN_URL PG_APP_URL
}

pg_wait_ready_ () {
	local i=0
	while test "$i" -lt 300
	do
		if pg_isready -q -h "$PGHOST" -p "$PGPORT" 2>/dev/null
		then
			return 0
		fi
		if ! kill -0 "$(cat "$TRASH_DIRECTORY/pg.pid")" 2>/dev/null
		then
			echo "start_pg: the server died:" >&2
			cat "$TRASH_DIRECTORY/pg.log" >&2
			return 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "start_pg: the server is not ready after 30 s" >&2
	cat "$TRASH_DIRECTORY/pg.log" >&2
	return 1
}

stop_pg () {
	local pid
	if test -f "$TRASH_DIRECTORY/pg.pid"
	then
		pid=$(cat "$TRASH_DIRECTORY/pg.pid")
		# SIGINT: fast shutdown (SIGTERM would wait for clients).
		kill -INT "$pid" 2>/dev/null
		test_stop_server pg
	fi
}

pg_sql () {
	psql -X -q -v ON_ERROR_STOP=1 -At "$@"
}

# pg_require [standin]: skip the whole test unless PostgreSQL (and, with
# "standin", python3 for the OpenAI stand-in) is there; SCHEMA is then
# the path of contrib/postgresql/schema.sql.
pg_require () {
	if ! test_have_prereq POSTGRES
	then
		skip_all='PostgreSQL is not installed (make deps)'
		test_done
	fi
	if test "$1" = standin && ! test_have_prereq PYTHON3
	then
		skip_all='python3 is needed to run the OpenAI stand-in'
		test_done
	fi
	SCHEMA=$TEST_DIRECTORY/../contrib/postgresql/schema.sql
}
