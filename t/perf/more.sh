#!/bin/sh
# t/perf/more.sh: the issue 3 part of `make bench`, run by run.sh (which
# sets APTIX, W, PERF_DIR and the environment).
#
#  - the cost of a turn outside the network: whole-command time of
#    `aptix continue` against a stand-in that answers at once
#    (instant-responses.py), next to the process-start floor, and the
#    server's own time per request measured alone;
#  - history commands (log, show, cat-object -p) over a store of
#    BENCH_SESSIONS sessions (default 100,000) in BENCH_SESSIONS/100
#    conversations with forks, against git log over the same history
#    built with git fast-import (build-store.sh --git), with a
#    commit-graph file; and the size of both on disk.
#
# The stores are cached in t/perf/results/ (gitignored), keyed by size,
# by the builder's content and by the store format, so only the first
# run builds them.
set -eu
: "${APTIX:?}" "${W:?}" "${PERF_DIR:?}"
. "$PERF_DIR/lib.sh"
command -v hyperfine >/dev/null 2>&1 || { echo; have_hyperfine; exit 0; }

msd() { # file of seconds, one a line -> "mean ± sd" in ms
	python3 -c 'import statistics, sys
v = [float(x) * 1e3 for x in open(sys.argv[1]).read().split()]
print("%.2f ± %.2f" % (statistics.mean(v), statistics.stdev(v)))' "$1"
}
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", a - b }'; }

echo
echo "== Cost of a turn outside the network (issue 3) =="
echo
mkdir "$W/srv" "$W/turn"
python3 "$PERF_DIR/instant-responses.py" --port-file "$W/srv/port" &
srv=$!
trap 'kill "$srv" 2>/dev/null || true' EXIT
i=0
while [ ! -s "$W/srv/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$W/srv/port")
OPENAI_BASE_URL=http://127.0.0.1:$port/v1 OPENAI_API_KEY=sk-bench-not-a-key
export OPENAI_BASE_URL OPENAI_API_KEY
# Templates: a conversation of 1 turn and one of $long turns; each timed
# run starts from a fresh copy (hyperfine --prepare), so every run costs
# the same.
long=100
t1=$W/turn-1 tl=$W/turn-$long
mkdir "$t1" "$tl"
(cd "$t1" && "$APTIX" init -q &&
	"$APTIX" continue -q -m "first turn" --no-stream >/dev/null 2>"$W/turn.err") ||
	echo "(the first 'aptix continue' failed: $(head -n 2 "$W/turn.err" | tr '\n' ' '))"
cp -Rp "$t1/.aptix" "$tl/.aptix"
i=1
while [ $i -lt $long ]; do
	(cd "$tl" && "$APTIX" continue -q -m "turn $i" --no-stream >/dev/null 2>&1) || break
	i=$((i + 1))
done
reset() { echo "sh -c 'rm -rf $W/turn/.aptix && cp -Rp $1/.aptix $W/turn/.aptix'"; }
cp -Rp "$t1/.aptix" "$W/turn/.aptix"

runs=200 cruns=100
echo "whole-command time, process start included: hyperfine -N, 10 warmup runs, $runs runs ($cruns for"
echo "continue), in a store on $(df --output=fstype "$W" | tail -n 1) (durable commits). Before each continue run the store is"
echo "reset to a conversation of 1 (or $long) turns (hyperfine --prepare, not timed)."
printf '%-50s %17s %8s %13s %13s\n' "command" "wall ms" "cpu ms" "vs --version" "vs rev-parse"
hf "$W/turn" 10 $runs "$APTIX --version"; floor=$HF_MEAN
printf '%-50s %s %8s\n' "aptix --version (process-start floor)" "$(padr 17 "$HF")" "$HF_CPU"
hf "$W/turn" 10 $runs "$APTIX rev-parse HEAD"; rp=$HF_MEAN
printf '%-50s %s %8s %13s\n' "aptix rev-parse HEAD (floor + opening the store)" "$(padr 17 "$HF")" "$HF_CPU" "$(diff_ms "$rp" "$floor")"
crow() { # label template args
	hf "$W/turn" 10 $cruns "$APTIX continue -m x $3" "$(reset "$2")"
	if [ "$HF_MEAN" = failed ]; then
		printf '%-50s %s\n' "$1" "failed: $HF_ERR"
	else
		printf '%-50s %s %8s %13s %13s\n' "$1" "$(padr 17 "$HF")" "$HF_CPU" "$(diff_ms "$HF_MEAN" "$floor")" "$(diff_ms "$HF_MEAN" "$rp")"
	fi
}
crow "continue -m x --no-stream, 1-turn conversation" "$t1" --no-stream
crow "continue -m x (SSE stream), 1-turn conversation" "$t1" ""
crow "continue -m x --dry-run (no request, no commit)" "$t1" --dry-run
crow "continue -m x --no-stream, $long-turn conversation" "$tl" --no-stream
crow "continue -m x (SSE stream), $long-turn conversation" "$tl" ""

# the server alone: the same requests, each on a fresh connection as
# aptix makes them, timed by curl from connect to the last byte
inst="You are a coding assistant working on the user's repository. Answer precisely; when you change code, show the complete changed files or unified diffs."
for stream in false true; do
	body='{"model":"gpt-5","instructions":"'"$inst"'","previous_response_id":"resp_000000000000000000000000000000000000000000000001","input":[{"role":"user","content":"x"}],"store":true,"stream":'$stream'}'
	: >"$W/curl-$stream"
	i=0
	while [ $i -lt $runs ]; do
		curl -s -o /dev/null -w '%{time_total}\n' -X POST \
			-H "Authorization: Bearer $OPENAI_API_KEY" \
			-H 'Content-Type: application/json' --data-binary "$body" \
			"$OPENAI_BASE_URL/responses" >>"$W/curl-$stream"
		i=$((i + 1))
	done
done
printf '%-50s %s\n' "server alone, JSON answer (curl -w time_total)" "$(padr 17 "$(msd "$W/curl-false")")"
printf '%-50s %s\n' "server alone, SSE answer (curl -w time_total)" "$(padr 17 "$(msd "$W/curl-true")")"
echo "  goal: continue under 5 ms above the floor. Nothing is subtracted: the continue rows include"
echo "  the server's time (the last two rows: connect, request and whole answer, $runs requests each"
echo "  on fresh connections). cpu ms: user + system time of the aptix process (hyperfine)."
kill "$srv" 2>/dev/null || true
wait "$srv" 2>/dev/null || true

# --- history over a large store ---------------------------------------
N=${BENCH_SESSIONS:-100000}
C=$((N / 100)); [ $C -ge 1 ] || C=1
RES=$PERF_DIR/results
# the cached stores sit in aptix's own work tree: not a user's project
GIT_CEILING_DIRECTORIES=$RES
export GIT_CEILING_DIRECTORIES
key=history-c$C-s$N-$(sha256sum <"$PERF_DIR/build-store.sh" | cut -c1-12)-f$(store_format)
S=$RES/$key
echo
echo "== History over $N sessions in $C conversations with forks (issue 3) =="
echo
valid() {
	"$APTIX" -C "$S/aptix" log --oneline -n 1 >/dev/null 2>&1 &&
	git -C "$S/git" rev-parse -q --verify HEAD >/dev/null 2>&1
}
if [ -d "$S" ] && valid; then
	echo "stores: cached in t/perf/results/$key/"
else
	mkdir -p "$RES"
	for old in "$RES/history-c$C-s$N-"*; do
		[ -e "$old" ] && rm -rf "$old"
	done
	s=$(now)
	if APTIX="$APTIX" sh "$PERF_DIR/build-store.sh" --git "$S.tmp/git" "$C" "$N" "$S.tmp/aptix" >"$W/build.log" 2>&1; then
		mv "$S.tmp" "$S"
		echo "stores: built in $(awk -v a="$s" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s by t/perf/build-store.sh --git (both from one description), cached in t/perf/results/$key/"
	else
		echo "stores: build failed:"
		sed 's/^/    /' "$W/build.log" | tail -n 5
		rm -rf "$S.tmp"
		exit 0
	fi
fi
A=$S/aptix G=$S/git
nref=$(git -C "$G" for-each-ref | wc -l)
echo "git: $(git -C "$G" rev-list --all | wc -l) commits, $nref refs (one branch per conversation, refs/failed/* for the failed sessions), packed refs, commit-graph"
echo "aptix: $("$APTIX" -C "$A" for-each-ref | wc -l) refs; sessions, turns and instruction blobs (3 objects per session)"
echo

sess=$("$APTIX" -C "$A" rev-parse HEAD~20)
commit=$(git -C "$G" rev-parse HEAD~20)
sa=$("$APTIX" -C "$A" log -n 1 --format=%s "$sess" 2>/dev/null || echo '?')
sg=$(git -C "$G" log -1 --format=%s "$commit")
[ "$sa" = "$sg" ] || echo "(note: HEAD~20 differs: aptix '$sa', git '$sg')"

lines() { # dir command... -> number of output lines
	_d=$1; shift
	(cd "$_d" && "$@" 2>/dev/null | wc -l)
}
hfhead "command (aptix | git), hyperfine -N" "  lines aptix | git"
row() { # label aptix-args git-args warmup runs
	HF_EXTRA=$(printf '  %11s | %s' "$(lines "$A" "$APTIX" $2)" "$(lines "$G" git $3)")
	hfrow "$1" "$A" "$APTIX $2" "$G" "git $3" "$4" "$5"
	HF_EXTRA=
}
row "log --graph --all | log --graph --oneline --all" "log --graph --all" "log --graph --oneline --all" 2 10
row "log --graph --oneline --all | (same)" "log --graph --oneline --all" "log --graph --oneline --all" 2 10
row "log --oneline --all | (same)" "log --oneline --all" "log --oneline --all" 2 10
row "log --oneline (HEAD) | (same)" "log --oneline" "log --oneline" 2 10
row "log --graph --oneline --all -n 50 | (same)" "log --graph --oneline --all -n 50" "log --graph --oneline --all -n 50" 5 50
row "log --oneline -n 50 | (same)" "log --oneline -n 50" "log --oneline -n 50" 10 100
row "show <session> | show <commit>" "show $sess" "show $commit" 10 100
row "cat-object -p <session> | cat-file -p <commit>" "cat-object -p $sess" "cat-file -p $commit" 10 100
row "rev-parse HEAD | rev-parse HEAD" "rev-parse HEAD" "rev-parse HEAD" 10 100
HF_EXTRA=$(printf '  %11s | %s' "" "$(lines "$G" git -c core.commitGraph=false log --graph --oneline --all)")
hfrow "git log --graph --oneline --all, no commit-graph" "" "" "$G" "git -c core.commitGraph=false log --graph --oneline --all" 2 10
HF_EXTRA=
echo "  <session> and <commit>: HEAD~20 of each ('$sg')."
echo "  goals (issue 3): the whole graph under 200 ms, the first screen (-n 50) under 5 ms."
echo "  git's --graph implies --topo-order; aptix log --all draws in date order. aptix log --all also"
echo "  shows the failed sessions, which git reaches through refs/failed/*."

echo
ab=$(alloc_bytes "$A/.aptix") aa=$(du_bytes "$A/.aptix")
gb=$(alloc_bytes "$G/.git") ga=$(du_bytes "$G/.git")
ob=$(alloc_bytes "$G/.git/objects")
printf '%-52s %14s %10s %12s\n' "size on disk, $N sessions" "bytes" "MiB" "per session"
pr() { printf '%-52s %14s %10s %12s\n' "$1" "$2" "$(mib "$2")" "$(awk -v b="$2" -v n="$N" 'BEGIN { printf "%.0f", b / n }')"; }
pr "aptix .aptix/ (LMDB: objects, refs, index)" "$ab"
pr "git .git/ (pack, .idx, commit-graph, packed-refs)" "$gb"
pr "git .git/objects/ only" "$ob"
echo "  allocated bytes (du); apparent sizes: aptix $aa, git $ga. aptix/git: $(ratio "$ab" "$gb")x."
echo "  git stores one commit per session (message inside); aptix three objects (session, turn,"
echo "  instruction blob) and its index."
