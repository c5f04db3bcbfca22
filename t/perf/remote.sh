#!/bin/sh
# t/perf/remote.sh - a local store with a remote (issue 26, part 2),
# against a throwaway PostgreSQL cluster of its own (initdb and postgres
# from Debian's postgresql, a Unix socket in a scratch directory, no TCP):
#
#  - push of N sessions (default 10,000; build-store.sh's synthetic
#    history, 3 objects a session) to an empty remote: objects per
#    second with multi-row batches (write_stored_many: one INSERT for up
#    to 1,000 objects) against one statement an object (push
#    --row-by-row), each into an org of its own;
#  - a fetch with nothing new at 1,000 and at LARGE sessions (default
#    100,000): it compares the refs of both sides and reads no object,
#    so it should cost the same (hyperfine, mean ± sd);
#  - a turn on a store that is PostgreSQL against the same turn on an
#    LMDB store (the OpenAI stand-in answering at once): wall time
#    (hyperfine) and the client's instructions (callgrind; the server's
#    work is not in them);
#  - a turn with a new 512 KiB file on a store that is PostgreSQL,
#    against the same on PostgreSQL with its large objects on S3 (npm's
#    s3rver from t/node_modules, on 127.0.0.1): wall time (hyperfine).
#
# Prints figures; never asserts.
#
#	sh t/perf/remote.sh     APTIX=path/to/aptix SESSIONS=10000 LARGE=100000
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
SESSIONS=${SESSIONS:-10000}
LARGE=${LARGE:-100000}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
. "$PERF_DIR/lib-pg.sh"
pg_bench_dir remote-bench
PG= SI=
trap 'set +e; kill $SI 2>/dev/null; [ -z "$PG" ] || pg_bench_stop; rm -rf "$W"' EXIT
pg_bench_start || { echo "remote: skipped"; exit 0; }
bin=$PGBIN

echo "== A local store with a remote (issue 26): PostgreSQL $("$bin/postgres" --version | awk '{ print $3 }'), Unix socket =="

# push_rate STORE ORG [--row-by-row]: time a push of everything to an
# empty org; sets SECS and OBJS
push_rate() {
	"$APTIX" -C "$1" remote add --org "$2" "$2" "$URL"
	_s=$(now)
	"$APTIX" -C "$1" push ${3:-} "$2" 2>"$W/push.err"
	_e=$(now)
	SECS=$(awk -v a="$_s" -v b="$_e" 'BEGIN { printf "%.2f", b - a }')
	OBJS=$(sed -n 's/^Sent \([0-9]*\) objects.*/\1/p' "$W/push.err")
}

sh "$PERF_DIR/build-store.sh" $((SESSIONS / 100)) "$SESSIONS" "$W/s" >/dev/null
push_rate "$W/s" batched
b_secs=$SECS b_objs=$OBJS
push_rate "$W/s" rows --row-by-row
r_secs=$SECS r_objs=$OBJS
b_rate=$(awk -v n="$b_objs" -v s="$b_secs" 'BEGIN { printf "%.0f", n / s }')
r_rate=$(awk -v n="$r_objs" -v s="$r_secs" 'BEGIN { printf "%.0f", n / s }')
echo "push of $SESSIONS sessions ($b_objs objects) to an empty remote:"
printf '  %-44s %8s s %9s objects/s\n' "batched (1,000 objects an INSERT)" "$b_secs" "$b_rate"
printf '  %-44s %8s s %9s objects/s\n' "one statement an object (--row-by-row)" "$r_secs" "$r_rate"
echo "  batched / row by row: $(ratio "$b_rate" "$r_rate")x the objects per second"

# noop N: a store of N sessions pushed to org noopN and cloned; the
# clone's fetch has nothing new. Sets NOOP (ms, mean ± sd).
noop() {
	sh "$PERF_DIR/build-store.sh" $(($1 / 100 > 10 ? $1 / 100 : 10)) "$1" "$W/n$1" >/dev/null
	"$APTIX" -C "$W/n$1" remote add --org "noop$1" origin "$URL"
	"$APTIX" -C "$W/n$1" push -q
	"$APTIX" clone -q --org "noop$1" "$URL" "$W/c$1"
	hf "$W/c$1" 2 15 "$APTIX fetch -q"
	NOOP=$HF NOOP_MEAN=$HF_MEAN
}
noop 1000
small=$NOOP small_mean=$NOOP_MEAN
noop "$LARGE"
echo "fetch with nothing new (refs compared, no object read):"
printf '  %-44s %14s ms\n' "1,000 sessions (10 conversations)" "$small"
printf '  %-44s %14s ms\n' "$LARGE sessions ($((LARGE / 100)) conversations)" "$NOOP"
echo "  $LARGE / 1,000: $(ratio "$NOOP_MEAN" "$small_mean")x"

# a turn on each backend, against the stand-in
bench_standin
"$APTIX" init -q "$W/t-lmdb"
"$APTIX" init -q --backend "$URL" --org turns "$W/t-pg"
turn="$APTIX continue -q --no-stream --no-files --no-rag -m x"
for b in lmdb pg; do
	(cd "$W/t-$b" && $turn >/dev/null && $turn >/dev/null)
	hf "$W/t-$b" 2 20 "$turn"
	eval "wall_$b=\$HF wall_mean_$b=\$HF_MEAN"
	(cd "$W/t-$b" && valgrind --tool=callgrind \
		--callgrind-out-file="$W/cg.$b" $turn >/dev/null 2>"$W/vg.$b")
	eval "ins_$b=\$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$W/vg.$b")"
done
echo "a turn (continue, stand-in answering at once):"
printf '  %-30s %16s %14s\n' "" "wall ms" "instructions"
printf '  %-30s %16s %14s\n' "LMDB store" "$wall_lmdb" "$ins_lmdb"
printf '  %-30s %16s %14s\n' "PostgreSQL store (socket)" "$wall_pg" "$ins_pg"
echo "  PostgreSQL / LMDB: $(ratio "$wall_mean_pg" "$wall_mean_lmdb")x wall," \
	"$(ratio "$ins_pg" "$ins_lmdb")x instructions (client only)"

# a turn with a large file (512 KiB that zlib cannot shrink much, new at
# each run): PostgreSQL alone, and PostgreSQL with S3 (npm's s3rver from
# t/node_modules, on 127.0.0.1, its data in the scratch directory)
S3RVER_JS=$PERF_DIR/../standin/s3rver.js
if command -v node >/dev/null 2>&1 &&
   [ -f "$PERF_DIR/../node_modules/s3rver/package.json" ]; then
	node "$S3RVER_JS" --directory "$W/s3" --bucket aptix-bench \
		--port-file "$W/s3.port" --log "$W/s3.log" >/dev/null 2>&1 &
	S3=$!
	trap 'kill $S3 $SI 2>/dev/null; kill -INT $PG 2>/dev/null; wait $PG 2>/dev/null; rm -rf "$W"' EXIT
	i=0
	while [ ! -s "$W/s3.port" ]; do
		i=$((i + 1)); [ $i -lt 200 ] || { echo "s3rver did not start"; exit 1; }
		sleep 0.1
	done
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	"$APTIX" init -q --backend "$URL" --org bigpg "$W/b-pg"
	"$APTIX" -c s3.url="http://127.0.0.1:$(cat "$W/s3.port")" \
		-c s3.bucket=aptix-bench -c s3.threshold=64k \
		init -q --backend "$URL" --org bigs3 "$W/b-s3"
	big="$APTIX -c files.max-size=1m -c files.max-total=2m continue -q --no-stream --no-rag --file big.txt -m x"
	mkbig="sh -c 'od -An -v -tx1 -N 262144 /dev/urandom | tr -d \" \\\\n\" >big.txt'"
	for b in pg s3; do
		(cd "$W/b-$b" && eval "$mkbig" && $big >/dev/null)
		hf "$W/b-$b" 1 15 "$big" "$mkbig"
		eval "bwall_$b=\$HF bwall_mean_$b=\$HF_MEAN"
	done
	puts=$(grep -c '"method":"PUT"' "$W/s3.log" 2>/dev/null || true)
	echo "a turn with a new 512 KiB file (stand-in answering at once):"
	printf '  %-30s %16s\n' "" "wall ms"
	printf '  %-30s %16s\n' "PostgreSQL alone" "$bwall_pg"
	printf '  %-30s %16s\n' "PostgreSQL + S3 (s3rver)" "$bwall_s3"
	echo "  PostgreSQL + S3 / PostgreSQL alone: $(ratio "$bwall_mean_s3" "$bwall_mean_pg")x wall ($puts objects put on S3)"
else
	echo "a turn with a large file on S3: s3rver is not installed (make deps)"
fi
