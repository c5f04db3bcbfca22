#!/bin/sh
# make bench: aptix against git on the same work, on this machine.
# Prints tables; never asserts (speed is measured, not tested).
#
# This part (issue 2, the object store): write and read rates for 1 KB,
# 16 KB and 256 KB blobs, zlib level 1 against 6 (APTIX_ZLIB_LEVEL),
# bytes on disk, and the latency of one small read with process start
# included (hyperfine -N). Then t/perf/more.sh (issue 3: the cost of a
# turn, and history commands over a 100,000-session store).
#
#	APTIX=/path/to/aptix   the binary to measure (default: ./aptix)
#	BENCH_SESSIONS=N       size of more.sh's history store (100000)
#	BENCH_STATUS_SESSIONS=N  status.sh's large store (100000; 0: skip it)
#	BENCH_GC_SESSIONS=N    gc.sh's large store (100000): log -S, gc
#	PG_LOAD_SECONDS=N      how long pg-load.sh's 16 clients run (60)
#
# Needs python3, git, hyperfine and curl.
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C GIT_PAGER=cat APTIX_PAGER=cat
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset APTIX_DIR APTIX_ZLIB_LEVEL
. "$PERF_DIR/lib.sh"
REPS=3		# write and read timings: best of REPS

# deterministic, partly compressible content: text-like lines
gen_files() { # dir count size
	python3 - "$1" "$2" "$3" <<'PY'
import os, random, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rnd = random.Random(42)
words = [''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz_') for _ in range(rnd.randint(2, 10))) for _ in range(2000)]
for i in range(n):
    out, ln = [], 0
    while ln < size:
        line = ' '.join(rnd.choice(words) for _ in range(rnd.randint(3, 12))) + '\n'
        out.append(line); ln += len(line)
    with open(os.path.join(d, '%06d' % i), 'w') as f:
        f.write(''.join(out)[:size])
PY
}

# best NAME SECONDS: keep the smallest time seen under NAME
best() {
	eval "_old=\${best_$1:-}"
	if [ -z "$_old" ] || awk -v a="$2" -v b="$_old" 'BEGIN { exit !(a < b) }'; then
		eval "best_$1=$2"
	fi
}
# timed NAME COMMAND...: run, and keep the best time under NAME
timed() {
	_n=$1; shift
	_s=$(now); "$@"; _e=$(now)
	best "$_n" "$(awk -v a="$_s" -v b="$_e" 'BEGIN { printf "%.6f", b - a }')"
}
aptix_write() { # dir paths [level]
	rm -rf "$1" && mkdir "$1" && (cd "$1" && "$APTIX" init -q)
	if [ -n "${3:-}" ]; then
		timed "$4" sh -c 'cd "$1" && APTIX_ZLIB_LEVEL=$3 "$2" hash-object -w --stdin-paths <"$4" >/dev/null' - "$1" "$APTIX" "$3" "$2"
	else
		timed "$4" sh -c 'cd "$1" && "$2" hash-object -w --stdin-paths <"$3" >/dev/null' - "$1" "$APTIX" "$2"
	fi
}
git_write() { # dir paths name
	rm -rf "$1" && git init -q --object-format=sha256 "$1"
	timed "$3" sh -c 'cd "$1" && git hash-object -w --stdin-paths <"$2" >/dev/null' - "$1" "$2"
}
git_fastimport() { # dir stream name
	rm -rf "$1" && git init -q --object-format=sha256 "$1"
	timed "$3" sh -c 'cd "$1" && git fast-import --quiet <"$2"' - "$1" "$2"
}

echo "aptix bench: $("$APTIX" --version 2>&1 | head -n1), $(git --version), $(hyperfine --version 2>/dev/null || echo 'no hyperfine')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "(shared machine: other jobs run alongside, so figures are noisy; writes and batch reads are best of $REPS, latencies mean ± sd)"
echo
echo "== Object store (issue 2): aptix against git, sha256 repositories =="
echo
for spec in 1024:4000 16384:2000 262144:200; do
	size=${spec%%:*} n=${spec##*:}
	gen_files "$W/in-$size" "$n" "$size"
	ls "$W/in-$size"/* >"$W/paths-$size"
	python3 - "$W/paths-$size" >"$W/fi-$size" <<'PY'
import sys
out = sys.stdout.buffer
for i, p in enumerate(open(sys.argv[1]).read().split()):
    data = open(p, 'rb').read()
    out.write(b'blob\nmark :%d\ndata %d\n' % (i + 1, len(data)) + data + b'\n')
PY
	rep=0
	while [ $rep -lt $REPS ]; do
		rep=$((rep + 1))
		aptix_write "$W/a" "$W/paths-$size" "" "wa_$size"
		aptix_write "$W/a1" "$W/paths-$size" 1 "wa1_$size"
		aptix_write "$W/a6" "$W/paths-$size" 6 "wa6_$size"
		git_write "$W/g" "$W/paths-$size" "wg_$size"
		git_fastimport "$W/f" "$W/fi-$size" "wf_$size"
	done
	total=$(cat "$W/in-$size"/* | wc -c)
	# what zlib itself makes of the content, without page rounding
	eval "$(python3 - "$W/paths-$size" "$size" <<'PY'
import sys, zlib
paths, size = open(sys.argv[1]).read().split(), sys.argv[2]
data = [open(p, 'rb').read() for p in paths]
raw = sum(map(len, data))
for level in (1, 6):
    z = sum(len(zlib.compress(d, level)) for d in data)
    print("zr%d_%s=%.3f" % (level, size, z / raw))
PY
)"
	eval "total_$size=$total n_$size=$n"
	for s in a a1 a6; do
		eval "disk_${s}_$size=$(ratio "$(alloc_bytes "$W/$s/.aptix")" "$total")"
	done
	eval "disk_g_$size=$(ratio "$(alloc_bytes "$W/g/.git/objects")" "$total")"
	eval "disk_f_$size=$(ratio "$(alloc_bytes "$W/f/.git/objects")" "$total")"

	# reads: every object through one batch process
	(cd "$W/a" && "$APTIX" cat-object --batch-check --batch-all-objects | cut -d' ' -f1 >"$W/ids-$size")
	rep=0
	while [ $rep -lt $REPS ]; do
		rep=$((rep + 1))
		timed "ra_$size" sh -c 'cd "$1" && "$2" cat-object --batch <"$3" >/dev/null' - "$W/a" "$APTIX" "$W/ids-$size"
		timed "rg_$size" sh -c 'cd "$1" && git cat-file --batch <"$2" >/dev/null' - "$W/g" "$W/ids-$size"
		timed "rf_$size" sh -c 'cd "$1" && git cat-file --batch <"$2" >/dev/null' - "$W/f" "$W/ids-$size"
	done
	# the latency fixture below uses one small blob
	if [ "$size" = 1024 ]; then cp "$W/in-1024/000000" "$W/small-blob"; fi
done

r() { eval "rate \$n_$1 0 \$best_$2"; }	# size name -> objects/s
printf '%-34s %12s %12s %12s %8s %8s\n' "write (objects/s)" aptix "git h-o" "git f-i" "vs h-o" "vs f-i"
for size in 1024 16384 262144; do
	eval "n=\$n_$size"
	a=$(r $size wa_$size) g=$(r $size wg_$size) f=$(r $size wf_$size)
	printf '%-34s %12s %12s %12s %8s %8s\n' "$n x $size B blobs" "$a" "$g" "$f" \
		"$(ratio "$a" "$g")x" "$(ratio "$a" "$f")x"
done
echo "  aptix: one 'aptix hash-object -w --stdin-paths'; git h-o: one 'git hash-object -w --stdin-paths';"
echo "  git f-i: 'git fast-import' of the same blobs (a stream prepared beforehand)"
echo
printf '%-34s %12s %12s %12s %8s %8s\n' "read, cat --batch (objects/s)" aptix "git loose" "git pack" "vs loose" "vs pack"
for size in 1024 16384 262144; do
	a=$(r $size ra_$size) g=$(r $size rg_$size) f=$(r $size rf_$size)
	printf '%-34s %12s %12s %12s %8s %8s\n' "$size B blobs" "$a" "$g" "$f" "$(ratio "$a" "$g")x" "$(ratio "$a" "$f")x"
done
echo "  every object once through 'aptix cat-object --batch' / 'git cat-file --batch'"
echo
printf '%-34s %12s %12s %12s\n' "disk bytes per byte stored" aptix "git loose" "git pack"
for size in 1024 16384 262144; do
	eval "a=\$disk_a_$size g=\$disk_g_$size f=\$disk_f_$size"
	printf '%-34s %12s %12s %12s\n' "$size B blobs" "$a" "$g" "$f"
done
echo "  allocated bytes (du) of .aptix/ and of .git/objects/ over the content's bytes"
echo
printf '%-20s %10s %10s %8s %9s %9s %9s %9s %9s\n' "zlib level (aptix)" "L1 obj/s" "L6 obj/s" "L6 vs L1" "disk L1" "disk L6" "L6 vs L1" "zlib L1" "zlib L6"
for size in 1024 16384 262144; do
	a1=$(r $size wa1_$size) a6=$(r $size wa6_$size)
	eval "d1=\$disk_a1_$size d6=\$disk_a6_$size z1=\$zr1_$size z6=\$zr6_$size"
	printf '%-20s %10s %10s %8s %9s %9s %9s %9s %9s\n' "$size B blobs" "$a1" "$a6" \
		"$(ratio "$a6" "$a1")x" "$d1" "$d6" "$(ratio "$d6" "$d1")x" "$z1" "$z6"
done
echo "  aptix hash-object -w --stdin-paths with APTIX_ZLIB_LEVEL=1 and =6: objects written per second,"
echo "  disk bytes per byte stored (du, whole LMDB pages), and zlib's own output per input byte"
echo "  (the build's default level is $(sed -n 's/^int aptix_zlib_level = \([0-9]*\);.*/\1/p' "$PERF_DIR/../../src/object/zstream.c"))"

# process start included: one small blob and one session, in a fresh
# store and a fresh repository
echo
if have_hyperfine; then
	mkdir "$W/lat" "$W/lat-git"
	(
		cd "$W/lat" && "$APTIX" init -q &&
		"$APTIX" hash-object -w "$W/small-blob" >"$W/small-id" &&
		t=$("$APTIX" write-turn --conversation bench --seq 1 \
			--status completed --instruction-text "hello" \
			--answer-text "world") &&
		s=$("$APTIX" commit-session "$t") &&
		"$APTIX" update-ref refs/conversations/bench "$s" &&
		"$APTIX" symbolic-ref HEAD refs/conversations/bench
	) >/dev/null
	(
		cd "$W/lat-git" && git init -q --object-format=sha256 &&
		git hash-object -w "$W/small-blob" >/dev/null &&
		c=$(git commit-tree -m hello "$(git mktree </dev/null)") &&
		git update-ref refs/heads/main "$c" &&
		git symbolic-ref HEAD refs/heads/main
	) >/dev/null
	id=$(cat "$W/small-id")
	echo "latency, process start included: hyperfine -N, 10 warmup runs, 300 runs; same blob id in both"
	hfhead "command (aptix | git)"
	hfrow "cat-object -p <1 KB blob> | cat-file -p" "$W/lat" "$APTIX cat-object -p $id" "$W/lat-git" "git cat-file -p $id" 10 300
	hfrow "rev-parse HEAD | rev-parse HEAD" "$W/lat" "$APTIX rev-parse HEAD" "$W/lat-git" "git rev-parse HEAD" 10 300
	hfrow "--version | --version (process floor)" "$W/lat" "$APTIX --version" "$W/lat-git" "git --version" 10 300
fi

if [ -f "$PERF_DIR/more.sh" ]; then
	APTIX="$APTIX" W="$W" PERF_DIR="$PERF_DIR" sh "$PERF_DIR/more.sh"
fi
echo
APTIX="$APTIX" sh "$PERF_DIR/serve-load.sh"
echo
echo "store growth of a 50-turn session (t/perf/store.sh)"
APTIX="$APTIX" sh "$PERF_DIR/store.sh"
echo
echo "a turn's cost against the length of its conversation (t/perf/chain.sh)"
APTIX="$APTIX" sh "$PERF_DIR/chain.sh" 2>/dev/null
echo
echo "the fixed cost of a turn against a minimal libcurl client (t/perf/fixed.sh)"
APTIX="$APTIX" sh "$PERF_DIR/fixed.sh"
echo
echo "import throughput, store size and memory (t/perf/import.sh)"
APTIX="$APTIX" sh "$PERF_DIR/import.sh"
echo
echo "a turn with 10 tool results against one without; a call's bytes against Codex's (t/perf/tools.sh)"
APTIX="$APTIX" sh "$PERF_DIR/tools.sh"
echo
echo "the flushes of a turn, and its time against two durable appends (t/perf/flushes.sh)"
APTIX="$APTIX" sh "$PERF_DIR/flushes.sh"
echo
echo "history at any size: 100k over 10k sessions, fsck against git (t/perf/scale.sh)"
APTIX="$APTIX" sh "$PERF_DIR/scale.sh"
echo
echo "push and fetch against a PostgreSQL remote (t/perf/remote.sh)"
APTIX="$APTIX" sh "$PERF_DIR/remote.sh"
echo
echo "round trips to a PostgreSQL store: messages a command sends (t/perf/pg-trips.sh)"
APTIX="$APTIX" sh "$PERF_DIR/pg-trips.sh"
echo
echo "16 clients turning, pushing and fetching on one PostgreSQL cluster (t/perf/pg-load.sh; PG_LOAD_SECONDS, default 60)"
APTIX="$APTIX" DURATION="${PG_LOAD_SECONDS:-60}" sh "$PERF_DIR/pg-load.sh"
if [ "${BENCH_STATUS_SESSIONS:-100000}" != 0 ]; then
	echo
	echo "status and sessions against the store's size, status against git status (t/perf/status.sh)"
	APTIX="$APTIX" SESSIONS="${BENCH_STATUS_SESSIONS:-100000}" sh "$PERF_DIR/status.sh"
fi
echo
echo "log -S at two sizes against git, and gc with a tenth unreachable (t/perf/gc.sh)"
APTIX="$APTIX" W="$W" PERF_DIR="$PERF_DIR" sh "$PERF_DIR/gc.sh"
echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
