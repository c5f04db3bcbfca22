#!/bin/sh
# t/perf/gc.sh: the issue 28 part of `make bench` (search and gc), run by
# run.sh (which sets APTIX, W, PERF_DIR and the environment).
#
#  - `log --all -S <word>` over a store of BENCH_GC_SESSIONS sessions
#    (default 100,000) and over one a tenth of its size (the goal at 1M
#    over 10k is 1.5: a search that does not grow with history), against
#    git on the same texts (build-store.sh --git: each instruction is a
#    commit message; the commits change no file, so git's -S, which
#    searches diffs, would find nothing: git's search of the same texts
#    is `log --all -F --grep`);
#  - `aptix gc` on a copy of the large store to which a ninth as many
#    orphaned sessions are added (so a tenth of the objects is
#    unreachable; deleting conversations makes few unreachable, as their
#    forks keep what they came from), indexed (reindex: as sessions a
#    turn wrote, whose index records gc deletes in its write), then
#    `gc`: time, objects and bytes pruned,
#    data.mdb before and after, and after compaction alone (what the
#    pruning itself gave back); then fsck.
#
# The stores are cached in t/perf/results/ (gitignored), as more.sh's.
set -eu
: "${APTIX:?}" "${W:?}" "${PERF_DIR:?}"
. "$PERF_DIR/lib.sh"
command -v hyperfine >/dev/null 2>&1 || { echo; have_hyperfine; exit 0; }

N=${BENCH_GC_SESSIONS:-100000}
RES=$PERF_DIR/results
GIT_CEILING_DIRECTORIES=$RES
export GIT_CEILING_DIRECTORIES

# store <sessions>: build (or find cached) the aptix and git stores of
# that size; their directory in $S
store() {
	_c=$(($1 / 100)); [ $_c -ge 1 ] || _c=1
	key=history-c$_c-s$1-$(sha256sum <"$PERF_DIR/build-store.sh" | cut -c1-12)-f$(store_format)
	S=$RES/$key
	if [ -d "$S" ] && "$APTIX" -C "$S/aptix" log --oneline -n 1 >/dev/null 2>&1 &&
		git -C "$S/git" rev-parse -q --verify HEAD >/dev/null 2>&1; then
		return 0
	fi
	mkdir -p "$RES"
	rm -rf "$S.tmp"
	APTIX="$APTIX" sh "$PERF_DIR/build-store.sh" --git "$S.tmp/git" "$_c" "$1" \
		"$S.tmp/aptix" >"$W/build.log" 2>&1 || {
		echo "stores of $1 sessions: build failed:"
		sed 's/^/    /' "$W/build.log" | tail -n 5
		rm -rf "$S.tmp"
		return 1
	}
	mv "$S.tmp" "$S"
}

echo
echo "== Search over history: log --all -S at $N sessions against $((N / 10)) (issue 28) =="
echo
word=memory
store $((N / 10)) || exit 0
small=$S
store "$N" || exit 0
large=$S
printf '%-48s %17s %17s %9s\n' "ms (mean ± sd)" aptix git aptix/git
hfrow "log --all -S $word | --grep, $((N / 10))" "$small/aptix" \
	"$APTIX log --all --oneline -S $word" "$small/git" \
	"git log --all --oneline -F --grep=$word" 1 5
# shellcheck disable=SC2154 # set by hfrow (lib.sh)
small_ms=$_am
hfrow "log --all -S $word | --grep, $N" "$large/aptix" \
	"$APTIX log --all --oneline -S $word" "$large/git" \
	"git log --all --oneline -F --grep=$word" 1 5
echo "aptix $N over $((N / 10)): $(ratio "$_am" "$small_ms") (goal at 1M over 10k: 1.5)"
na=$("$APTIX" -C "$large/aptix" log --all --oneline -S $word | wc -l)
ng=$(git -C "$large/git" log --all --oneline -F --grep=$word | wc -l)
echo "matches: aptix $na, git $ng (the same texts)"

echo
echo "== gc on $N sessions with a tenth of the objects unreachable (issue 28) =="
echo
G=$W/gc
# orphans <count> <dir>: that many sessions no ref, reflog or claim
# reaches (each with its turn and instruction blob, old enough for any
# grace period), as files listed in <dir>/{blob,turn,session}
orphans() {
	python3 - "$1" "$2" <<'PY'
import hashlib, json, os, sys
n, d = int(sys.argv[1]), sys.argv[2]
lists = {k: open(os.path.join(d, k), "w") for k in ("blob", "turn", "session")}
def canon(o):
    return (json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n").encode()
def put(kind, i, data):
    p = os.path.join(d, "%s-%d" % (kind, i))
    open(p, "wb").write(data)
    lists[kind].write(p + "\n")
    return hashlib.sha256(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()
t = 1600000000000
ut = {"cached_tokens": 0, "input_tokens": 0, "model_requests": 0,
      "output_tokens": 0, "reasoning_tokens": 0, "total_tokens": 0}
us = {"completion_tokens": 0, "model_requests": 0, "prompt_tokens": 0,
      "total_tokens": 0}
for i in range(n):
    conv = "0000%04x-dead-4000-8000-%012x" % (i % 65536, i)
    blob = put("blob", i, b"Orphaned instruction %d: explain the memory cache\n" % i)
    turn = put("turn", i, canon({"conversation": conv, "created_at": t + i,
        "instruction": blob, "seq": 1, "status": "completed",
        "status_at": t + i, "usage": ut, "v": 1}))
    put("session", i, canon({"conversation": conv, "created_at": t + i,
        "metadata": {"session_type": "agent"},
        "run_summary": {"duration_ms": 0, "usage": us},
        "status": "committed", "turn": turn, "v": 1}))
for f in lists.values():
    f.close()
PY
}
# compaction alone, for what the file sheds without pruning anything
rm -rf "$G" && mkdir "$G" "$W/orphans"
cp -Rp "$large/aptix/.aptix" "$G/.aptix"
orphans $((N / 9)) "$W/orphans"
for type in blob turn session; do
	"$APTIX" -C "$G" hash-object -w -t $type --stdin-paths <"$W/orphans/$type" >/dev/null
done
"$APTIX" -C "$G" reindex -q
cp -Rp "$G/.aptix" "$W/gc.copy"
"$APTIX" -C "$G" gc --prune=never >/dev/null 2>&1
compact_only=$(du_bytes "$G/.aptix/data.mdb")
rm -rf "$G/.aptix" && mv "$W/gc.copy" "$G/.aptix"
echo "store of $N sessions plus $((N / 9)) orphaned sessions (each with its turn and blob)"
before=$(du_bytes "$G/.aptix/data.mdb")
s=$(now)
"$APTIX" -C "$G" gc --prune=now --reflog-expire=now --json >"$W/gc.json" 2>"$W/gc.err" ||
	{ echo "gc failed: $(head -n 2 "$W/gc.err")"; exit 0; }
e=$(now)
after=$(du_bytes "$G/.aptix/data.mdb")
python3 - "$W/gc.json" "$before" "$after" "$compact_only" \
	"$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f", b - a }')" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
before, after, conly = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
secs = sys.argv[5]
print("objects %s, unreachable %s (%.1f%%), %s stored bytes of them; gc took %s s"
      % (format(j["objects"], ","), format(j["pruned"], ","),
         100.0 * j["pruned"] / max(1, j["objects"]),
         format(j["pruned_bytes"], ","), secs))
print("data.mdb %s -> %s bytes; compaction alone (gc --prune=never) -> %s:"
      % (format(before, ","), format(after, ","), format(conly, ",")))
print("  reclaimed %s bytes in all, %s of them by pruning; compacted: %s, rewritten: %d"
      % (format(before - after, ","), format(conly - after, ","),
         j["compacted"], j["rewritten"]))
PY
s=$(now)
if "$APTIX" -C "$G" fsck --connectivity-only --no-dangling >"$W/fsck.out" 2>&1; then
	echo "fsck --connectivity-only after gc: clean ($(awk -v a="$s" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }') s)"
else
	echo "fsck after gc: $(head -n 3 "$W/fsck.out" | tr '\n' ' ')"
fi
