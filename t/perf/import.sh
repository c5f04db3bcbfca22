#!/bin/sh
# t/perf/import.sh - `aptix import` (issue 25): MB of source imported per
# second on a corpus made by multiplying the fixtures (each copy with its
# own session ids), against the time to merely read and parse the same
# lines with Jansson (t/perf/jsonl-parse.c); store bytes against source
# bytes; peak memory at three corpus sizes (it should not grow with the
# corpus: files are read line by line, a directory's files listed at a
# time, turns written in batches). A second import of the same
# corpus (which writes nothing) is timed too, then `aptix export --all`
# of the store (json, markdown) and `aptix import json` of that export
# into an empty store, which must then hold the same objects.
#
# Last, the issue's 1 GB: a corpus of Codex and Claude Code transcripts
# generated with a seed (t/perf/gen-transcripts.py: the fixtures' records
# with their own ids, times and text of realistic, long-tailed lengths,
# so that sessions do not deduplicate as copies do), imported: MB of
# source per second (wall and CPU), the Jansson parse of the same lines,
# peak memory, store bytes against source bytes, and a second import.
#
#	sh t/perf/import.sh    APTIX=path/to/aptix  [CC=cc]
#	BENCH_IMPORT_COPIES=N  copies of the fixtures (default 400, ~30 MB;
#	                       the issue's 1 GB is about 13,000)
#	BENCH_IMPORT_MB="N..." MB of the generated corpus (default 1024; 0:
#	                       not run); several sizes: the peak anonymous
#	                       memory (RssAnon, t/perf/mem.py) of the
#	                       largest over the smallest
#	BENCH_IMPORT_KEEP=DIR  keep the generated corpora there (g<MB>-<seed>)
#	                       and take them from there the next time
#	BENCH_IMPORT_SEED=N    its seed (default 25)
#	BENCH_IMPORT_ONLY=gen  only the generated corpus
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
FIX=$PERF_DIR/../fixtures/import
COPIES=${BENCH_IMPORT_COPIES:-400}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-bench-import.XXXXXX")
trap 'rm -rf "$W"' EXIT
export HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR
. "$PERF_DIR/lib.sh"

${CC:-cc} -O2 -o "$W/jsonl-parse" "$PERF_DIR/jsonl-parse.c" \
	$(pkg-config --cflags --libs jansson 2>/dev/null || echo -ljansson)

# corpus DIR COPIES: the Codex and Claude Code fixtures, COPIES times,
# every session and subagent id changed per copy (so each copy is new to
# the store)
corpus() {
	python3 - "$FIX" "$1" "$2" <<'PY'
import os, re, sys
fix, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
uuid = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
                  r'|agent-[0-9a-f]{17}')	# and subagents' ids
srcs = []
for sub in ('codex-0.169', 'codex-0.171-toolcall',
            'claude-code-2.1.328/projects/-home-user-proj'):
    base = os.path.join(fix, sub)
    for root, _, files in os.walk(base):
        for f in files:
            if f.endswith('.jsonl') or f.endswith('.meta.json'):
                p = os.path.join(root, f)
                srcs.append((sub.split('/')[0], os.path.relpath(p, base),
                             open(p).read()))
for i in range(copies):
    tag = '%012x' % (0xc0ffee000000 + i)
    swap = lambda m: m.group(0)[:24] + tag
    for kind, rel, text in srcs:
        p = os.path.join(out, kind, uuid.sub(swap, rel))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(uuid.sub(swap, text))
PY
}

peak_kb() { # command...: its peak resident memory in KB (- if unknown)
	if /usr/bin/time -f %M true >/dev/null 2>&1; then
		/usr/bin/time -f %M -o "$W/rss" "$@" >/dev/null 2>&1 || true
		tail -n 1 "$W/rss"
	else
		"$@" >/dev/null 2>&1 || true
		echo -
	fi
}

# cpu_of FILE: user + system seconds of a mem.py line
cpu_of() { awk '{ printf "%.1f", $4 + $5 }' "$1"; }

# generated MB SEED: the seeded corpus of MB MB, imported (see the top);
# the corpus kept in $BENCH_IMPORT_KEEP/g<MB>-<SEED> when that is set
# (and taken from there when it is there already)
generated() {
	c=$W/c
	[ -n "${BENCH_IMPORT_KEEP:-}" ] && c=$BENCH_IMPORT_KEEP/g$1-$2
	rm -rf "$W/s" && mkdir -p "$W/s"
	echo
	echo "aptix import: a generated corpus of $1 MB (seed $2)"
	if [ ! -f "$c/.done" ]; then
		rm -rf "$c"
		python3 "$PERF_DIR/mem.py" . python3 \
			"$PERF_DIR/gen-transcripts.py" "$FIX" "$c" "$1" "$2" \
			>"$W/gen"
		touch "$c/.done"
		echo "generated in $(cpu_of "$W/gen") s of CPU"
	fi
	(cd "$W/s" && "$APTIX" init -q)
	src=$(find "$c" -name '*.jsonl' -exec cat {} + | wc -c)
	printf '%-28s %9s %8s %8s %8s %8s %10s %10s\n' "" "source MB" \
		"seconds" "MB/s" "CPU s" "MB/CPU s" "peak RSS" "peak anon"
	find "$c" -name '*.jsonl' | sort >"$W/files"
	s=$(now)
	python3 "$PERF_DIR/mem.py" . xargs "$W/jsonl-parse" <"$W/files" >"$W/pk"
	e=$(now)
	t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
	cpu=$(cpu_of "$W/pk")
	printf '%-28s %9s %8s %8s %8s %8s\n' "parse the lines (Jansson)" \
		"$(mib "$src")" "$t" "$(awk -v b="$src" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')" \
		"$cpu" "$(awk -v b="$src" -v t="$cpu" 'BEGIN { printf "%.1f", b / 1048576 / t }')"
	anon_max=0
	for pass in first again; do
		cpu=0 peak=0 anon=0
		s=$(now)
		for tool in codex claude; do
			python3 "$PERF_DIR/mem.py" "$W/s" \
				"$APTIX" import -q $tool "$c/$tool" >"$W/pk"
			set -- $(cat "$W/pk")
			[ "$6" -le 1 ] || echo "aptix import $tool: exit $6" >&2
			cpu=$(awk -v c="$cpu" -v u="$4" -v y="$5" 'BEGIN { printf "%.1f", c + u + y }')
			[ "$1" -gt "$peak" ] && peak=$1
			[ "$2" -gt "$anon" ] && anon=$2
		done
		e=$(now)
		t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
		printf '%-28s %9s %8s %8s %8s %8s %10s %10s\n' "aptix import ($pass)" \
			"$(mib "$src")" "$t" \
			"$(awk -v b="$src" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')" \
			"$cpu" "$(awk -v b="$src" -v t="$cpu" 'BEGIN { printf "%.1f", b / 1048576 / t }')" \
			"${peak} KB" "${anon} KB"
		[ "$anon" -gt "$anon_max" ] && anon_max=$anon
	done
	store=$(alloc_bytes "$W/s/.aptix")
	turns=$(cd "$W/s" && "$APTIX" log --all --format=%H | wc -l)
	echo "store: $(mib "$store") MB on disk for $(mib "$src") MB of source" \
		"($(ratio "$store" "$src") of it), $turns snapshots"
	echo "load average while it ran: $(cut -d' ' -f1-3 /proc/loadavg)"
	ANON="${ANON:-} $anon_max"	# of both passes
	[ -n "${BENCH_IMPORT_KEEP:-}" ] || rm -rf "$c"
}

# each size of BENCH_IMPORT_MB, then the peak anonymous memory of the
# largest over that of the smallest (flat: about 1)
all_generated() {
	ANON=
	for mb in $1; do
		generated "$mb" "$2"
	done
	set -- $ANON
	for last in "$@"; do :; done
	[ $# -gt 1 ] &&
		echo "peak anonymous memory, largest corpus over smallest:" \
			"$(ratio "$last" "$1")"
	return 0
}

if [ "${BENCH_IMPORT_ONLY:-}" = gen ]; then
	all_generated "${BENCH_IMPORT_MB:-1024}" "${BENCH_IMPORT_SEED:-25}"
	exit 0
fi

echo
echo "aptix import: $COPIES copies of the Codex and Claude Code fixtures"
printf '%-34s %10s %10s %10s\n' "" "source MB" "seconds" "MB/s"
for n in $COPIES; do
	rm -rf "$W/c" "$W/s" && mkdir -p "$W/s" && corpus "$W/c" "$n"
	(cd "$W/s" && "$APTIX" init -q)
	src=$(find "$W/c" -name '*.jsonl' -exec cat {} + | wc -c)
	files=$(find "$W/c" -name '*.jsonl' | sort)
	s=$(now); "$W/jsonl-parse" $files >/dev/null; e=$(now)
	t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
	printf '%-34s %10s %10s %10s\n' "parse the lines (Jansson)" \
		"$(mib "$src")" "$t" "$(awk -v b="$src" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')"
	for pass in first again; do
		s=$(now)
		(cd "$W/s" && "$APTIX" import -q codex "$W/c/codex-0.169" \
			"$W/c/codex-0.171-toolcall" >/dev/null &&
		 "$APTIX" import -q claude "$W/c/claude-code-2.1.328" >/dev/null)
		e=$(now)
		t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
		printf '%-34s %10s %10s %10s\n' "aptix import ($pass)" \
			"$(mib "$src")" "$t" "$(awk -v b="$src" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')"
	done
	store=$(alloc_bytes "$W/s/.aptix")
	echo "store: $(mib "$store") MB on disk for $(mib "$src") MB of source" \
		"($(ratio "$store" "$src") of it)"
done

# aptix export of that store, and the lossless JSON read back into an
# empty store (which must hold the same objects afterwards)
echo
echo "aptix export --all of that store, and import json of it"
printf '%-34s %10s %10s %10s\n' "" "output MB" "seconds" "MB/s"
for fmt in json markdown; do
	s=$(now)
	(cd "$W/s" && "$APTIX" export --all --format=$fmt -o "$W/all.$fmt")
	e=$(now)
	t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
	out=$(wc -c <"$W/all.$fmt")
	printf '%-34s %10s %10s %10s\n' "aptix export --format=$fmt" \
		"$(mib "$out")" "$t" "$(awk -v b="$out" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')"
done
rm -rf "$W/r" && mkdir -p "$W/r" && (cd "$W/r" && "$APTIX" init -q)
out=$(wc -c <"$W/all.json")
s=$(now)
(cd "$W/r" && "$APTIX" import -q json "$W/all.json" >/dev/null)
e=$(now)
t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }')
printf '%-34s %10s %10s %10s\n' "aptix import json (empty store)" \
	"$(mib "$out")" "$t" "$(awk -v b="$out" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')"
a=$(cd "$W/s" && "$APTIX" cat-object --batch-check --batch-all-objects | sort | cksum)
b=$(cd "$W/r" && "$APTIX" cat-object --batch-check --batch-all-objects | sort | cksum)
test "$a" = "$b" && echo "round trip: the same objects" ||
	echo "round trip: the objects DIFFER"

# peak memory at three corpus sizes (the run keeps no state that grows
# with the corpus: a batch of turns, the conversations of the file being
# read, the keys a later file may look up), and the largest over the
# smallest
echo
echo "peak memory of an import (KB), by corpus size:"
printf '%-34s %10s %10s\n' "" "codex" "claude"
peaks=
for n in $((COPIES / 4)) $((COPIES / 2)) $COPIES; do
	rm -rf "$W/c" "$W/s" && mkdir -p "$W/s" && corpus "$W/c" "$n"
	(cd "$W/s" && "$APTIX" init -q)
	a=$(cd "$W/s" && peak_kb "$APTIX" import -q codex "$W/c/codex-0.169" \
		"$W/c/codex-0.171-toolcall")
	b=$(cd "$W/s" && peak_kb "$APTIX" import -q claude "$W/c/claude-code-2.1.328")
	printf '%-34s %10s %10s\n' "$n copies ($(mib "$(find "$W/c" -name '*.jsonl' -exec cat {} + | wc -c)") MB)" "$a" "$b"
	peaks="$peaks $a $b"
done
echo "$peaks" | awk '{ for (i = 1; i <= 2; i++) if ($i > 0 && $(i + 4) > 0)
	printf "%s", (i == 1 ? "peak at 4x the corpus: codex " : ", claude ") \
		sprintf("%.2f", $(i + 4) / $i) "x" } END { print "" }'

if [ "${BENCH_IMPORT_MB:-1024}" != 0 ]; then
	all_generated "${BENCH_IMPORT_MB:-1024}" "${BENCH_IMPORT_SEED:-25}"
fi
