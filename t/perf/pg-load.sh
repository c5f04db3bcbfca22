#!/bin/sh
# t/perf/pg-load.sh - the load run of issue 26: CLIENTS clients (default
# 16), each a process of its own, turning against the OpenAI stand-in
# for DURATION seconds (default 60) on one throwaway PostgreSQL cluster
# (t/perf/lib-pg.sh), all in one org:
#
#  - half of them have a local (LMDB) store of their own with the
#    cluster as their remote: a push after every turn, a fetch after
#    every fifth;
#  - the others use the shared store directly (stores that are
#    PostgreSQL), two of them on one conversation, whose ref they move
#    by compare-and-swap against each other.
#
# Then, from a store of the org opened afresh: turns per second, objects
# pushed per second, the turns' p50/p99 latency, lost turns (a turn
# acknowledged, exit 0 with its session id, that is not in the shared
# store afterwards; the local clients push once more first), lost
# updates (an acknowledged move of a ref that is not in its history: the
# contended conversation's, and each local conversation's ref against
# the remote's), and fsck of the shared store. Prints figures; never
# asserts.
#
#	sh t/perf/pg-load.sh    APTIX=path/to/aptix CLIENTS=16 DURATION=60
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
CLIENTS=${CLIENTS:-16}
DURATION=${DURATION:-60}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
. "$PERF_DIR/lib-pg.sh"
pg_bench_dir pg-load
export APTIX
PG= SI= PIDS=
trap 'set +e; kill $PIDS $SI 2>/dev/null; [ -z "$PG" ] || pg_bench_stop; rm -rf "$W"' EXIT
PG_MAX_CONNECTIONS=$((CLIENTS * 6 + 20))
pg_bench_start || { echo "pg-load: skipped"; exit 0; }

bench_standin

nlocal=$((CLIENTS / 2))
ndirect=$((CLIENTS - nlocal))
echo "== Load on one PostgreSQL cluster (issue 26): $CLIENTS clients for $DURATION s: $nlocal with local stores pushing and fetching, $ndirect on the shared store ($([ "$ndirect" -ge 2 ] && echo 2 || echo 0) of them on one conversation) =="
i=1
while [ $i -le "$ndirect" ]; do
	"$APTIX" init -q --backend "$URL" --org load "$W/d$i"
	conv=direct-$i
	[ "$ndirect" -lt 2 ] || [ $i -gt 2 ] || conv=contended
	echo "direct $W/d$i $conv" >>"$W/clients"
	i=$((i + 1))
done
i=1
while [ $i -le "$nlocal" ]; do
	"$APTIX" init -q "$W/l$i"
	"$APTIX" -C "$W/l$i" remote add --org load origin "$URL"
	echo "local $W/l$i local-$i" >>"$W/clients"
	i=$((i + 1))
done

until=$(($(date +%s) + DURATION))
n=0
while read -r kind dir conv; do
	n=$((n + 1))
	sh "$PERF_DIR/pg-load-client.sh" "$kind" "$dir" "$conv" "$until" \
		"$W/log.$n" &
	PIDS="$PIDS $!"
done <"$W/clients"
for p in $PIDS; do wait "$p" || true; done
PIDS=

# the local clients' last turns: pushed
while read -r kind dir conv; do
	[ "$kind" = local ] || continue
	"$APTIX" -C "$dir" push -q origin "$conv" 2>>"$W/final-push.err" ||
		echo "final push of $conv failed: $(head -n 1 "$W/final-push.err")"
done <"$W/clients"

cat "$W"/log.* >"$W/all"
"$APTIX" init -q --backend "$URL" --org load "$W/v" 2>/dev/null
"$APTIX" -C "$W/v" log --all --format=%H >"$W/remote.ids"
turns=$(awk '$1 == "turn" && $4 == 0' "$W/all" | wc -l)
failed=$(awk '$1 == "turn" && $4 != 0' "$W/all" | wc -l)
moved=$(awk '$1 == "turn" && $4 == 0 && $6 == 1' "$W/all" | wc -l)
pushes=$(awk '$1 == "push" && $4 == 0' "$W/all" | wc -l)
pfail=$(awk '$1 == "push" && $4 != 0' "$W/all" | wc -l)
fetches=$(awk '$1 == "fetch" && $4 == 0' "$W/all" | wc -l)
objs=$(awk '$1 == "push" && $4 == 0 { n += $5 } END { print n + 0 }' "$W/all")

# lost turns: acknowledged and not in the shared store (a turn whose
# conversation moved under it is kept off the ref: it must still exist)
lost=0
for id in $(awk '$1 == "turn" && $4 == 0 && $6 == 0 { print $5 }' "$W/all"); do
	grep -qx "$id" "$W/remote.ids" || lost=$((lost + 1))
done
for id in $(awk '$1 == "turn" && $4 == 0 && $6 == 1 { print $5 }' "$W/all"); do
	"$APTIX" -C "$W/v" cat-object -e "$id" 2>/dev/null || lost=$((lost + 1))
done

# lost updates: a move acknowledged and not in the ref's history
lostu=0
if [ "$ndirect" -ge 2 ]; then
	"$APTIX" -C "$W/v" log --format=%H refs/conversations/contended >"$W/chain"
	for id in $(awk '$1 == "turn" && $4 == 0 && $6 == 0 { print $5 }' \
			"$W/log.1" "$W/log.2"); do
		grep -qx "$id" "$W/chain" || lostu=$((lostu + 1))
	done
fi
while read -r kind dir conv; do
	[ "$kind" = local ] || continue
	a=$("$APTIX" -C "$dir" rev-parse "refs/conversations/$conv" 2>/dev/null || echo none)
	b=$("$APTIX" -C "$W/v" rev-parse "refs/conversations/$conv" 2>/dev/null || echo none)
	[ "$a" = "$b" ] || lostu=$((lostu + 1))
done <"$W/clients"

fsck_rc=0
"$APTIX" -C "$W/v" fsck >"$W/fsck.out" 2>&1 || fsck_rc=$?
fsck_findings=$(grep -cv -e '^dangling ' -e '^notice: ' "$W/fsck.out" || true)

lat() {
	awk '$1 == "'"$1"'" && $4 == 0 { print $3 - $2 }' "$W/all" | sort -n >"$W/lat"
	_n=$(wc -l <"$W/lat")
	if [ "$_n" -eq 0 ]; then echo "- -"; return; fi
	_p50=$(sed -n "$(( (_n + 1) / 2 ))p" "$W/lat")
	_p99=$(sed -n "$(( (_n * 99 + 99) / 100 ))p" "$W/lat")
	echo "$_p50 $_p99"
}
set -- $(lat turn)
t50=$1 t99=$2
set -- $(lat push)
p50=$1 p99=$2
printf '  %-40s %s (%s refused or failed, %s kept off a ref that moved)\n' "turns acknowledged" "$turns" "$failed" "$moved"
if [ "$failed" -gt 0 ]; then
	echo "  why turns failed (the most common):"
	cat "$W"/*.err 2>/dev/null | grep -v '^aptix: .*retrying' |
		sed -e 's/[0-9a-f]\{8\}-[0-9a-f-]\{27\}/<id>/g' \
		    -e 's/[0-9a-f]\{64\}/<id>/g' -e 's/ (pid .*)$//' -e 's/turn [0-9a-f]\{12\} is/turn <id> is/' |
		sort | uniq -c | sort -rn | head -n 3 | sed 's/^/    /'
fi
printf '  %-40s %s/s\n' "turns per second" "$(awk -v n="$turns" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }')"
printf '  %-40s %s ms / %s ms\n' "turn latency p50 / p99" "$t50" "$t99"
printf '  %-40s %s (%s failed), %s objects\n' "pushes" "$pushes" "$pfail" "$objs"
printf '  %-40s %s/s\n' "objects pushed per second" "$(awk -v n="$objs" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }')"
printf '  %-40s %s ms / %s ms\n' "push latency p50 / p99" "$p50" "$p99"
printf '  %-40s %s\n' "fetches" "$fetches"
printf '  %-40s %s\n' "lost turns" "$lost"
printf '  %-40s %s\n' "lost updates (compare-and-swap)" "$lostu"
printf '  %-40s %s\n' "fsck of the shared store" "$([ "$fsck_rc" = 0 ] && [ "$fsck_findings" = 0 ] && echo clean || echo "exit $fsck_rc, $fsck_findings findings")"
[ "$fsck_findings" = 0 ] || grep -v -e '^dangling ' -e '^notice: ' "$W/fsck.out" | head -n 5
