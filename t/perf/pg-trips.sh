#!/bin/sh
# t/perf/pg-trips.sh - round trips to a PostgreSQL store: the messages
# aptix sends the server (strace's sendto calls: libpq sends a pipeline
# at once, then waits for its answers) for a turn of a few words, of 100
# and of 1,000 new words, and for show, log --oneline and sessions, on a
# store of 20 turns. Each message is one wait for the network: on a
# server 1 ms away a turn of 1,000 words spends that many ms waiting.
# Prints figures; never asserts.
#
#	sh t/perf/pg-trips.sh    APTIX=path/to/aptix
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
. "$PERF_DIR/lib-pg.sh"
pg_bench_dir pg-trips
PG='' SI=''
trap 'set +e; kill $SI 2>/dev/null; [ -z "$PG" ] || pg_bench_stop; rm -rf "$W"' EXIT
if ! command -v strace >/dev/null 2>&1; then
	echo "pg-trips: skipped (strace is not installed: make deps)"
	exit 0
fi
pg_bench_start || { echo "pg-trips: skipped"; exit 0; }
bench_standin

# words N SEED: N words no turn used before
words() {
	awk -v n="$1" -v s="$2" 'BEGIN { for (i = 1; i <= n; i++) printf "w%s_%d ", s, i }'
}

# sends ARGS...: the messages of one aptix command on the store
sends() {
	strace -f -e trace=sendto -o "$W/st" "$APTIX" -C "$W/ws" "$@" >/dev/null
	grep -c 'sendto(' "$W/st"
}

mkdir "$W/ws"
"$APTIX" -C "$W/ws" init -q --backend "$URL" --org trips
i=0
while [ $i -lt 20 ]; do
	"$APTIX" -C "$W/ws" continue -q --no-rag --no-stream \
		-m "turn $i: $(words 30 "t$i")" >/dev/null
	i=$((i + 1))
done

echo "messages sent to the PostgreSQL server (a wait each), store of 20 turns:"
row() { printf '  %-44s %6s\n' "$1" "$2"; }
row "continue -m 'a short one'" "$(sends continue -q --no-rag --no-stream -m 'a short one')"
row "continue, 100 new words" "$(sends continue -q --no-rag --no-stream -m "$(words 100 a)")"
row "continue, 1,000 new words" "$(sends continue -q --no-rag --no-stream -m "$(words 1000 b)")"
row "show" "$(sends show)"
row "log --oneline" "$(sends log --oneline)"
row "sessions" "$(sends sessions)"
