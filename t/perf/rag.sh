#!/bin/sh
# t/perf/rag.sh - the local retrieval index on a generated 50,000-line
# source tree: indexing speed (chunks/s), query latency (hyperfine on
# rag-query when installed, else a timed loop), index size on disk, and
# the incremental cases (nothing changed, one file changed).
# Prints figures; never asserts (speed is measured, not tested).
#
#	sh t/perf/rag.sh                 APTIX=path/to/aptix LINES=50000
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
LINES=${LINES:-50000}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-rag-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY OPENAI_API_KEY

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
per_sec() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
alloc_bytes() { du -s --block-size=1 "$1" | cut -f1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# A deterministic tree of C, Python and Markdown files, LINES lines in all,
# with code-like identifiers (camelCase, snake_case) and blank lines.
python3 - "$W/src" "$LINES" <<'PY'
import os, random, sys
root, total = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
syll = ["par", "se", "con", "fig", "buf", "fer", "net", "work", "read", "write",
        "cache", "index", "chunk", "token", "query", "score", "file", "path",
        "lock", "store", "map", "hash", "node", "tree", "list", "item", "http",
        "json", "stream", "event", "retry", "time", "out", "log", "user", "key"]
def word():
    return "".join(rnd.choice(syll) for _ in range(rnd.randint(1, 3)))
def camel():
    w = [word() for _ in range(rnd.randint(2, 3))]
    return w[0] + "".join(x.capitalize() for x in w[1:])
def snake():
    return "_".join(word() for _ in range(rnd.randint(2, 3)))
names = [camel() for _ in range(1500)] + [snake() for _ in range(1500)]
written, n = 0, 0
while written < total:
    kind = rnd.choice(["c", "c", "py", "md"])
    size = min(rnd.randint(40, 200), total - written)
    d = os.path.join(root, "mod%02d" % (n % 25))
    os.makedirs(d, exist_ok=True)
    out = []
    while len(out) < size:
        a, b, c = rnd.choice(names), rnd.choice(names), rnd.choice(names)
        if kind == "c":
            block = ["/* %s: %s the %s */" % (a, word(), word()),
                     "int %s(struct %s *%s, size_t n)" % (a, b, c), "{",
                     "\tif (!%s)" % c, "\t\treturn %s(%s, n);" % (b, c),
                     "\treturn %s->%s + n;" % (c, word()), "}", ""]
        elif kind == "py":
            block = ["def %s(%s, %s):" % (snake(), word(), word()),
                     "    \"\"\"%s %s %s.\"\"\"" % (word(), word(), word()),
                     "    return %s(%s)" % (a, b), ""]
        else:
            block = ["## %s %s" % (word().capitalize(), word()), "",
                     "The %s calls `%s` before `%s`." % (word(), a, b), ""]
        out += block
    out = out[:size]
    ext = {"c": "c", "py": "py", "md": "md"}[kind]
    with open(os.path.join(d, "f%04d.%s" % (n, ext)), "w") as f:
        f.write("\n".join(out) + "\n")
    written += len(out)
    n += 1
print("%d files" % n, file=sys.stderr)
PY
files=$(find "$W/src" -type f | wc -l | tr -d ' ')
lines=$(find "$W/src" -type f -exec cat {} + | wc -l | tr -d ' ')
bytes=$(find "$W/src" -type f -exec cat {} + | wc -c | tr -d ' ')

cd "$W/src"
"$APTIX" init -q
before=$(alloc_bytes .aptix)

echo "aptix rag bench (local backend) on $(nproc) cores, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "tree: $files files, $lines lines, $(mib "$bytes")"
echo

s=$(now); "$APTIX" index >"$W/index.out"; e=$(now)
chunks=$(sed -n 's/^chunks: \([0-9]*\) added.*/\1/p' "$W/index.out")
after=$(alloc_bytes .aptix)
printf '%-34s %s s, %s chunks, %s chunks/s, %s lines/s\n' "full index" \
	"$(secs "$s" "$e")" "$chunks" "$(per_sec "$chunks" "$s" "$e")" \
	"$(per_sec "$lines" "$s" "$e")"
printf '%-34s %s (before %s, +%s; %.2f x the source)\n' "store size on disk" \
	"$(mib "$after")" "$(mib "$before")" "$(mib $((after - before)))" \
	"$(awk -v a="$after" -v b="$before" -v s="$bytes" 'BEGIN { print (a - b) / s }')"

s=$(now); "$APTIX" index >"$W/noop.out"; e=$(now)
printf '%-34s %s s (%s)\n' "re-index, nothing changed" "$(secs "$s" "$e")" \
	"$(sed -n 's/^files: *//p' "$W/noop.out")"

one=$(find . -name '*.c' -path './mod03/*' | sort | head -n 1)
echo "int bench_appended_symbol(void);" >>"$one"
s=$(now); "$APTIX" index >"$W/one.out"; e=$(now)
printf '%-34s %s s (%s)\n' "re-index, one file changed" "$(secs "$s" "$e")" \
	"$(sed -n 's/^chunks: *\([^;]*\);.*/\1/p' "$W/one.out")"
echo

queries="parseConfig http stream retry
cache_index_chunk token query score
readBuffer write file path lock
bench_appended_symbol"
if command -v hyperfine >/dev/null 2>&1; then
	set --
	while IFS= read -r q; do
		set -- "$@" "$APTIX rag-query '$q'"
	done <<EOF
$queries
EOF
	hyperfine -N --warmup 3 --min-runs 30 --style none \
		--export-json "$W/q.json" "$@" >/dev/null 2>&1 ||
	hyperfine --warmup 3 --min-runs 30 --style none \
		--export-json "$W/q.json" "$@" >/dev/null
	echo "query latency (rag-query, whole process, hyperfine):"
	python3 - "$W/q.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    q = r["command"].split(" rag-query ", 1)[1]
    print("  %-42s mean %6.2f ms  +- %5.2f  median %6.2f  min %6.2f" % (
        q, r["mean"] * 1e3, r["stddev"] * 1e3, r["median"] * 1e3,
        r["min"] * 1e3))
PY
else
	echo "query latency (rag-query, whole process, 50 runs each):"
	while IFS= read -r q; do
		s=$(now)
		i=0
		while [ $i -lt 50 ]; do "$APTIX" rag-query "$q" >/dev/null; i=$((i + 1)); done
		e=$(now)
		printf '  %-40s %s ms\n' "$q" \
			"$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f", (b - a) * 20 }')"
	done <<EOF
$queries
EOF
fi
echo
echo "top hits for 'parseConfig http stream retry':"
"$APTIX" rag-query -k 3 'parseConfig http stream retry' | sed 's/^/  /'
