#!/bin/sh
# t/perf/workspace.sh: the cost of the active files (issue 4).
#
# A git work tree of BENCH_FILES files (10,000; about 2 KB of text each,
# in 100 directories) with BENCH_DIRTY of them dirty (200: three in four
# modified, the rest untracked), and an aptix store. Times, with process
# start included:
#
#	git status                      what a person runs
#	git status --porcelain=v2 -z    the dirty check aptix runs
#	  --untracked-files=all
#	aptix status                    the dirty check, then reading and
#	                                hashing the 200 files, and planning
#	                                them against the head's chain
#	aptix status --json             the same, as JSON
#	aptix status outside git        the store alone (no active files):
#	                                the difference is the scan's cost
#	aptix continue --dry-run        the request of the next turn with
#	  --no-rag [--no-files]         and without the active files: the
#	                                difference is their phase of a turn
#
# and prints mean ± sd in ms (hyperfine -N when there is one, else the
# mean of BENCH_RUNS runs). Never asserts: speed is measured, not tested.
#
#	APTIX=/path/to/aptix   the binary to measure (default: ./aptix at
#	                       the top of the source tree)
#	BENCH_FILES=N BENCH_DIRTY=N BENCH_RUNS=N
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
FILES=${BENCH_FILES:-10000}
DIRTY=${BENCH_DIRTY:-200}
RUNS=${BENCH_RUNS:-30}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-bench-ws.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C GIT_PAGER=cat APTIX_PAGER=cat
unset APTIX_DIR APTIX_WORKSPACE GIT_DIR GIT_WORK_TREE

if ! [ -x "$APTIX" ]; then
	echo "no aptix at $APTIX (build it, or set APTIX)" >&2
	exit 1
fi

T=$W/tree
mkdir "$T"
# deterministic text files: FILES of them in 100 directories
awk -v n="$FILES" -v dir="$T" 'BEGIN {
	srand(42);
	for (d = 0; d < 100; d++)
		system("mkdir -p " dir "/d" sprintf("%02d", d));
	for (i = 0; i < n; i++) {
		f = dir "/d" sprintf("%02d", i % 100) "/file" sprintf("%05d", i) ".c";
		s = "";
		while (length(s) < 2000)
			s = s "int v" int(rand() * 100000) " = " int(rand() * 1000) "; /* line of file " i " */\n";
		printf "%s", s > f;
		close(f);
	}
}'
(
	cd "$T"
	git init -q .
	git -c user.name=B -c user.email=b@example.com add -A
	git -c user.name=B -c user.email=b@example.com commit -q -m base
	"$APTIX" init -q
	# the store is not the project's: keep it out of git status too
	echo /.aptix/ >>.git/info/exclude
	# dirty: 3 in 4 modified (spread over the tree), the rest untracked
	modified=$((DIRTY * 3 / 4))
	i=0
	while [ $i -lt $modified ]; do
		n=$((i * FILES / modified))
		f=d$(printf %02d $((n % 100)))/file$(printf %05d $n).c
		echo "/* edited */" >>"$f"
		i=$((i + 1))
	done
	i=0
	while [ $i -lt $((DIRTY - modified)) ]; do
		echo "int fresh$i;" >"d$(printf %02d $((i % 100)))/new$i.c"
		i=$((i + 1))
	done
	git status >/dev/null	# a fresh index for everyone
)

# the same store cost without a work tree: what the scan adds
mkdir "$W/plain"
(cd "$W/plain" && "$APTIX" init -q)

dirty=$(cd "$T" && git status --porcelain | wc -l | tr -d ' ')
active=$(cd "$T" && "$APTIX" status --json | python3 -c 'import json, sys
print(len(json.load(sys.stdin)["files"]))' 2>/dev/null || echo "?")

# timing NAME COMMAND...: mean ± sd in ms of COMMAND run in the tree
timing() {
	_name=$1
	shift
	if command -v hyperfine >/dev/null 2>&1; then
		rm -f "$W/hf.json"
		if ! (cd "$T" && hyperfine -N -w 3 -r "$RUNS" --style none \
			--export-json "$W/hf.json" -- "$*") >/dev/null 2>&1; then
			printf "  %-46s failed\n" "$_name"
			return 0
		fi
		python3 - "$W/hf.json" "$_name" <<-'PY'
		import json, sys
		r = json.load(open(sys.argv[1]))["results"][0]
		print("  %-46s %8.2f ± %5.2f ms  (min %.2f, %d runs)" % (
		    sys.argv[2], r["mean"] * 1e3, r["stddev"] * 1e3,
		    r["min"] * 1e3, len(r["times"])))
		PY
	else
		(cd "$T" && for _i in 1 2 3; do "$@" >/dev/null 2>&1; done
		 _s=$(date +%s.%N)
		 _i=0
		 while [ $_i -lt "$RUNS" ]; do "$@" >/dev/null 2>&1; _i=$((_i + 1)); done
		 _e=$(date +%s.%N)
		 awk -v a="$_s" -v b="$_e" -v n="$RUNS" -v name="$_name" \
			'BEGIN { printf "  %-46s %8.2f ms  (mean of %d runs)\n", name, (b - a) * 1e3 / n, n }')
	fi
}

echo "aptix workspace bench: $("$APTIX" --version), $(git --version), $(hyperfine --version 2>/dev/null || echo 'no hyperfine')"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "work tree: $FILES files, $dirty dirty ($active active files listed by aptix status)"
echo
timing "git status" git status
timing "git status --porcelain=v2 -z -uall" git status --porcelain=v2 -z --untracked-files=all
timing "aptix status" "$APTIX" status
timing "aptix status --json" "$APTIX" status --json
timing "aptix status, a store outside git" "$APTIX" -C "$W/plain" status
# the active-file phase of continue: a dry run with and without the files
# (no network: --dry-run builds the request and changes nothing)
if OPENAI_API_KEY=sk-bench "$APTIX" -C "$T" continue --dry-run --no-rag \
	-m x >/dev/null 2>&1; then
	export OPENAI_API_KEY=sk-bench
	timing "aptix continue --dry-run --no-rag" \
		"$APTIX" continue --dry-run --no-rag -m x
	timing "aptix continue --dry-run --no-rag --no-files" \
		"$APTIX" continue --dry-run --no-rag --no-files -m x
else
	echo "  (aptix continue --dry-run --no-rag not available: skipped)"
fi
