# t/perf/lib-pg.sh: a throwaway PostgreSQL cluster for a benchmark
# (sourced, after lib.sh, which it sources; needs $PERF_DIR): initdb and postgres from Debian's
# postgresql, a Unix socket in $W/run, no TCP; the database aptix with
# contrib/postgresql/schema.sql made for the role aptix_app.
#
#	pg_bench_start || exit 0   sets PG (the postmaster's pid), PGBIN,
#	                           URL (aptix_app's libpq URL) and exports
#	                           PGHOST, PGPORT, PGUSER (the admin)
#	pg_bench_stop              fast shutdown, waited for

. "$PERF_DIR/lib.sh"

# pg_bench_dir NAME: W, a scratch directory of the run (its HOME), and a
# clean environment
pg_bench_dir() {
	W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-$1.XXXXXX")
	chmod 755 "$W"
	export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat
	unset APTIX_DIR
}

pg_bench_start() {
	PGBIN=
	for _d in "$(pg_config --bindir 2>/dev/null || true)" /usr/lib/postgresql/*/bin; do
		if [ -x "$_d/initdb" ] && [ -x "$_d/postgres" ]; then PGBIN=$_d; break; fi
	done
	if [ -z "$PGBIN" ]; then
		echo "PostgreSQL is not installed (make deps): skipped"; return 1
	fi
	# postgres refuses to run as root: as the system user postgres then
	_as=
	if [ "$(id -u)" = 0 ]; then
		_as="setpriv --reuid=postgres --regid=postgres --init-groups --"
	fi
	mkdir "$W/pg" "$W/run"
	[ -n "$_as" ] && chown postgres:postgres "$W/pg" "$W/run"
	$_as "$PGBIN/initdb" -D "$W/pg/data" -U aptix_admin -A trust -E UTF8 \
		--locale=C.UTF-8 --no-sync >"$W/initdb.log" 2>&1
	$_as "$PGBIN/postgres" -D "$W/pg/data" -k "$W/run" -p 5432 \
		-c listen_addresses= -c max_connections=${PG_MAX_CONNECTIONS:-40} \
		>"$W/pg.log" 2>&1 &
	PG=$!
	_i=0
	until pg_isready -q -h "$W/run" -p 5432 2>/dev/null; do
		_i=$((_i + 1)); [ $_i -lt 300 ] || { cat "$W/pg.log"; return 1; }
		sleep 0.1
	done
	export PGHOST="$W/run" PGPORT=5432 PGUSER=aptix_admin
	psql -X -q -d postgres -c "CREATE DATABASE aptix" \
		-c "CREATE ROLE aptix_app LOGIN NOSUPERUSER NOBYPASSRLS"
	psql -X -q -d aptix -v app_role=aptix_app \
		-f "$PERF_DIR/../../contrib/postgresql/schema.sql"
	URL="postgresql:///aptix?host=$W/run&port=5432&user=aptix_app"
}

# bench_standin: the OpenAI stand-in started (SI its pid), answering at
# once; OPENAI_BASE_URL and OPENAI_API_KEY point at it
bench_standin() {
	python3 "$PERF_DIR/../standin/openai_standin.py" --port-file "$W/si.port" \
		--log-dir "$W/si.log" >/dev/null 2>&1 &
	SI=$!
	while [ ! -s "$W/si.port" ]; do sleep 0.1; done
	export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/si.port")/v1"
	export OPENAI_API_KEY=sk-bench-0123456789abcdef
}

pg_bench_stop() {
	kill -INT "$PG" 2>/dev/null
	wait "$PG" 2>/dev/null
}
