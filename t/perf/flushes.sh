#!/bin/sh
# t/perf/flushes.sh - what a turn flushes (issue 21, item 4): a turn
# needs two durable writes (its claim and instruction before the
# network, its answer after). Counts, with strace, the flushes of one
# `aptix continue --no-stream` against an instant responder
# (fdatasync, fsync, msync, and writes through an O_DSYNC or O_SYNC
# descriptor), and times 20 such turns against the floor: two appends
# of the same sizes to a file, each followed by fdatasync, in the same
# directory. APTIX_BASE: another build, measured alongside (paired:
# turns of the two builds alternate). Prints figures; never asserts.
#
#	sh t/perf/flushes.sh      APTIX=path/to/aptix  [APTIX_BASE=...]
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
TURNS=${TURNS:-20}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-flush-bench.XXXXXX")
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY
. "$PERF_DIR/lib.sh"
instant_responder

# flushes <aptix> <dir>: the flushes of one turn in the store of <dir>
flushes () {
	(cd "$2" && strace -f -e trace=openat,fdatasync,fsync,msync,write,writev,pwrite64,pwritev \
		-o "$W/trace" "$1" continue -q --no-stream -m "one more turn" \
		>/dev/null)
	awk '/openat\(.*O_(D)?SYNC/ { n = $NF; sync[n] = 1 }
		/fdatasync\(|fsync\(|msync\(/ { f++ }
		/(pwrite64|write|writev|pwritev)\(/ { split($2, a, /[(,]/)
			if (sync[a[2]]) f++ }
		END { print f + 0 }' "$W/trace"
}

builds="$APTIX"
[ -z "${APTIX_BASE:-}" ] || builds="$APTIX_BASE $APTIX"
for a in $builds; do
	d="$W/ws-$(echo "$a" | cksum | cut -d' ' -f1)"
	mkdir "$d"
	(cd "$d" && "$a" init -q && "$a" continue -q --no-stream -m first \
		>/dev/null)
	if command -v strace >/dev/null; then
		echo "  flushes per turn   $(flushes "$a" "$d")  ($a)"
	fi
done
python3 - "$W" "$TURNS" $builds <<'PY'
import os, subprocess, sys, time
w, turns, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
total = dict((b, 0.0) for b in builds)
for i in range(turns):
    for b in builds:
        d = os.path.join(w, "ws-" + subprocess.run(
            "echo '%s' | cksum | cut -d' ' -f1" % b, shell=True,
            capture_output=True, text=True).stdout.strip())
        t = time.monotonic()
        subprocess.run([b, "continue", "-q", "--no-stream", "-m",
                        "turn %d" % i], cwd=d, check=True,
                       stdout=subprocess.DEVNULL)
        total[b] += time.monotonic() - t
# the floor: two appends, each made durable
path = os.path.join(w, "floor.log")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
t = time.monotonic()
for i in range(turns):
    os.write(fd, b"x" * 400)
    os.fdatasync(fd)
    os.write(fd, b"y" * 2400)
    os.fdatasync(fd)
floor = (time.monotonic() - t) / turns
os.close(fd)
print("  floor (2 appends + fdatasync) %7.2f ms a turn" % (floor * 1000))
for b in builds:
    per = total[b] / turns
    print("  turn                          %7.2f ms  (%s)" % (per * 1000, b))
PY
