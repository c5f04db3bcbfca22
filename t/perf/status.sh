#!/bin/sh
# t/perf/status.sh - `aptix status` and `aptix sessions` against the size
# of the store (issue 10): both commands on a store of 1,000 sessions and
# on one of SESSIONS (default 100,000), both in the same 100
# conversations (t/perf/build-store.sh 100 N), measured in one run, as
# instructions (callgrind: stable on a noisy machine) and wall time
# (hyperfine -N), with the ratio big/1k of each (goal: <= 1.5). Then
# `aptix status` against `git status` on the same work tree (goal:
# within 2x). Prints figures; never asserts.
#
# The work tree: FILES (default 2,000) committed text files of about 2
# KB in 40 directories, a mid-sized project (aptix itself has about 450
# files, git about 4,500), with three files modified and two untracked,
# as during real work. A store's own directory would not do: it holds
# no work files, and git status there would measure nothing but process
# start; a project of this size is where a history of 100,000 sessions
# grows. git status's cost grows with the files, aptix's own part of
# status with the dirty ones only, so a smaller tree (FILES=200) makes
# the aptix/git ratio worse. Each store goes in that tree's git directory
# (.git/aptix, where `aptix init` puts it in a work tree), so `aptix
# status` sees the same files as `git status`: it runs one `git status`
# itself and plans the dirty files against the head's chain. The
# store-size rows are measured outside any work tree (the store alone,
# no git process); the aptix/git rows inside it. There, the aptix
# figures count everything the command costs: wall time includes the
# git process aptix starts, and the instructions are summed over every
# process (callgrind --trace-children=yes; git's instructions too, so
# the git column is measured the same way).
#
# Wall times on this shared machine are noisy: the commands compared
# are timed in turn, ROUNDS (3) rounds of RUNS (20) runs each, and each
# keeps its best round. Instructions are the figures to trust.
#
# The stores are built on tmpfs by build-store.sh and cached in
# t/perf/results/ (gitignored), keyed by size, by build-store.sh's
# content and by the store format; each run works on copies.
#
#	sh t/perf/status.sh      APTIX=path/to/aptix SESSIONS=100000 FILES=2000
#	                         ROUNDS=3 RUNS=20
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
SESSIONS=${SESSIONS:-100000}
FILES=${FILES:-2000}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-status-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat GIT_PAGER=cat
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY OPENAI_API_KEY
. "$PERF_DIR/lib.sh"
command -v valgrind >/dev/null || { echo "status: valgrind is needed"; exit 0; }
command -v hyperfine >/dev/null || { have_hyperfine; exit 0; }

# store N: the cached store of N sessions in 100 conversations (its
# directory holds .aptix/), built when missing
RES=$PERF_DIR/results
HASH=$(sha256sum <"$PERF_DIR/build-store.sh" | cut -c1-12)-f$(store_format)
store() {
	_s=$RES/status-c100-s$1-$HASH
	if ! [ -d "$_s" ] ||
	   ! "$APTIX" -C "$_s" log --oneline -n 1 >/dev/null 2>&1; then
		build_cached "$_s" "$RES/status-c100-s$1-" 100 "$1" @ ||
			return 1
	fi
	echo "$_s"
}

# cg DIR ARGS...: instructions of one run of ARGS in DIR, summed over
# every process it starts (callgrind --trace-children=yes)
cg() {
	_d=$1
	shift
	rm -f "$W"/cg.out.*
	(cd "$_d" && valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$W/cg.out.%p" "$@" >/dev/null \
		2>"$W/vg.err") || { echo failed; return 0; }
	# from the output files: a child's stderr may be a pipe to aptix
	cat "$W"/cg.out.* | sed -n 's/^summary: \([0-9]*\).*/\1/p' |
		awk '{ n += $1 } END { print n + 0 }'
}
mi() { awk -v n="$1" 'BEGIN { if (n ~ /^[0-9]+$/) printf "%.2fM", n / 1e6; else print n }'; }

S1=$(store 1000) || exit 0
SN=$(store "$SESSIONS") || exit 0

# the work tree, once, then one copy per store
python3 - "$W/tree" "$FILES" <<'PY'
import os, random, sys
top, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(10)
words = ["parse", "config", "buffer", "network", "cache", "index", "chunk",
         "token", "query", "score", "stream", "retry", "lock", "store"]
for i in range(n):
    d = os.path.join(top, "dir%02d" % (i % 40))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file%04d.c" % i), "w") as f:
        for j in range(50):
            f.write("int %s_%s_%d(void) { return %d; }\n" % (
                rnd.choice(words), rnd.choice(words), j, rnd.randint(0, 99)))
PY
(cd "$W/tree" && git init -q && git add . && git commit -qm init &&
	for f in dir01/file0001.c dir02/file0002.c dir03/file0003.c; do
		echo "/* edited */" >>"$f"
	done &&
	echo "new" >notes.txt && echo "int new(void);" >dir00/new.c &&
	# edited a minute ago: the stat cache keeps no file changed in
	# the last two seconds (racy)
	touch -d "@$(($(date +%s) - 60))" dir01/file0001.c \
		dir02/file0002.c dir03/file0003.c notes.txt dir00/new.c &&
	{ git update-index --refresh >/dev/null 2>&1 || true; })
sleep 1	# no racily clean entry in the index refreshed below
for n in 1000 "$SESSIONS"; do
	src=$S1
	[ "$n" = 1000 ] || src=$SN
	mkdir "$W/plain-$n"
	cp -Rp "$src/.aptix" "$W/plain-$n/.aptix"
	cp -Rp "$W/tree" "$W/wt-$n"
	cp -Rp "$src/.aptix" "$W/wt-$n/.git/aptix"
	# the copy's files have new inodes and times: refresh git's
	# index (aptix runs git with --no-optional-locks, which never
	# writes it); the first status writes aptix's stat cache: neither
	# is what we measure
	(cd "$W/wt-$n" && git status >/dev/null 2>&1 &&
		"$APTIX" status >/dev/null 2>&1 &&
		cd "$W/plain-$n" && "$APTIX" status >/dev/null 2>&1) || true
done

# Wall time on a shared machine: the commands compared are timed in
# turn, ROUNDS rounds of RUNS runs each (hyperfine -N, 3 warmup runs),
# and each keeps its best round (the least disturbed by other jobs).
# walls LABEL DIR COMMAND [LABEL DIR COMMAND]...: sets WALL_<label> to
# "mean ± sd" of the best round and MS_<label> to its mean.
walls() {
	_r=0
	while [ $_r -lt "$ROUNDS" ]; do
		_r=$((_r + 1))
		_a=$#
		while [ $_a -gt 0 ]; do
			hf "$2" 3 "$RUNS" "$3"
			eval "_m=\${MS_$1:-}"
			if [ "$HF_MEAN" = failed ]; then
				eval "MS_$1=failed WALL_$1=failed"
			elif [ -z "$_m" ] || [ "$_m" = failed ] ||
			   awk -v a="$HF_MEAN" -v b="$_m" \
				'BEGIN { exit !(a < b) }'; then
				eval "MS_$1=\$HF_MEAN WALL_$1=\"\$HF\""
			fi
			# rotate the three arguments to the end
			set -- "$@" "$1" "$2" "$3"
			shift 3
			_a=$((_a - 3))
		done
	done
}
ROUNDS=${ROUNDS:-3} RUNS=${RUNS:-20}
BIG="$((SESSIONS / 1000))k"
[ "$SESSIONS" -ge 1000 ] || BIG=$SESSIONS
echo "aptix status and sessions against the store's size: 1,000 and $SESSIONS sessions in the"
echo "same 100 conversations (build-store.sh), outside any work tree: instructions (callgrind) and"
echo "wall time (hyperfine -N: best of $ROUNDS alternated rounds of $RUNS runs, mean ± sd)"
printf '%-16s %10s %10s %7s %16s %16s %7s\n' command "instr 1k" \
	"instr $BIG" ratio "ms 1k" "ms $BIG" ratio
for c in status sessions; do
	i1=$(cg "$W/plain-1000" "$APTIX" $c)
	iN=$(cg "$W/plain-$SESSIONS" "$APTIX" $c)
	MS_a='' MS_b='' WALL_a='' WALL_b=''
	walls a "$W/plain-1000" "$APTIX $c" b "$W/plain-$SESSIONS" "$APTIX $c"
	printf '%-16s %10s %10s %7s %s %s %7s\n' "aptix $c" "$(mi "$i1")" \
		"$(mi "$iN")" "$(ratio "$iN" "$i1")" "$(padr 16 "$WALL_a")" \
		"$(padr 16 "$WALL_b")" "$(ratio "$MS_b" "$MS_a")"
done
echo "  goal: ratio $BIG/1k <= 1.5 for each command (issue 10)"
echo
echo "aptix status against git status in a work tree of $FILES files (3 modified, 2 untracked), the"
echo "store in its .git/aptix: instructions of every process (callgrind --trace-children=yes) and"
echo "wall time (best of $ROUNDS alternated rounds of $RUNS runs). aptix status runs one git status"
echo "itself (the second git row: its options for a store in .git), counted in both columns."
printf '%-34s %12s %7s %16s %7s\n' command instructions "vs git" "wall ms" "vs git"
GS="git --no-optional-locks status --porcelain=v2 --branch --no-ahead-behind -z --untracked-files=all"
gi=$(cg "$W/wt-1000" git status)
gi2=$(cg "$W/wt-1000" $GS)
ai1=$(cg "$W/wt-1000" "$APTIX" status)
aiN=$(cg "$W/wt-$SESSIONS" "$APTIX" status)
rm -f "$W/wt-$SESSIONS/.git/aptix/stat-cache"
aiC=$(cg "$W/wt-$SESSIONS" "$APTIX" status)
MS_g='' MS_g2='' MS_a='' MS_b='' WALL_g='' WALL_g2='' WALL_a='' WALL_b=''
walls g "$W/wt-1000" "git status" g2 "$W/wt-1000" "$GS" \
	a "$W/wt-1000" "$APTIX status" b "$W/wt-$SESSIONS" "$APTIX status"
# the first status after an edit: the dirty files hashed again (the
# stat cache removed before each run), OpenSSL loaded to do it
hf "$W/wt-$SESSIONS" 3 "$RUNS" "$APTIX status" \
	"rm -f $W/wt-$SESSIONS/.git/aptix/stat-cache"
printf '%-34s %12s %7s %s %7s\n' "git status" "$(mi "$gi")" "" \
	"$(padr 16 "$WALL_g")" ""
printf '%-34s %12s %7s %s %7s\n' "git status as aptix runs it" \
	"$(mi "$gi2")" "$(ratio "$gi2" "$gi")" "$(padr 16 "$WALL_g2")" \
	"$(ratio "$MS_g2" "$MS_g")"
printf '%-34s %12s %7s %s %7s\n' "aptix status, 1000 sessions" \
	"$(mi "$ai1")" "$(ratio "$ai1" "$gi")" "$(padr 16 "$WALL_a")" \
	"$(ratio "$MS_a" "$MS_g")"
printf '%-34s %12s %7s %s %7s\n' "aptix status, $SESSIONS sessions" \
	"$(mi "$aiN")" "$(ratio "$aiN" "$gi")" "$(padr 16 "$WALL_b")" \
	"$(ratio "$MS_b" "$MS_g")"
printf '%-34s %12s %7s %s %7s\n' "  the same, no stat cache" \
	"$(mi "$aiC")" "$(ratio "$aiC" "$gi")" "$(padr 16 "$HF")" \
	"$(ratio "$HF_MEAN" "$MS_g")"
echo "  goal: aptix status within 2x of git status (issue 10). No stat cache: the first status"
echo "  after an edit hashes the dirty files again (one round of $RUNS runs, the cache removed before each)."
