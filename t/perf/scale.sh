#!/bin/sh
# t/perf/scale.sh - history at any size (issue 28): what the commands
# that show a screen cost on a store ten times larger, and fsck against
# git's on the same history shape. Prints figures; never asserts.
#
# Two stores built by build-store.sh --git: SMALL sessions (default
# 10,000) in SMALL/100 conversations and LARGE (default 100,000) in
# LARGE/100, each with an equivalent git repository. For each command:
# instructions (callgrind, summed over the processes of a pipeline:
# stable on a loaded machine) on both, and the ratio large/small (goal
# of the issue: <= 1.5). Then peak memory of `log --all`,
# `log --graph --all | head -50`, `fsck --connectivity-only` (and git's)
# and `reindex` (on a copy; with the store's LMDB pages after it over
# before, goal <= 1.2) on both, each as max RSS, the process's own
# memory (peak RssAnon) and the store's pages mapped (peak RssFile:
# t/perf/mem.py), and the ratios; `log --all` against `git log --all` (CPU time, user +
# system, best of ROUNDS), and `fsck --connectivity-only` against
# `git fsck --connectivity-only` on both pairs (goal: <= 2), and
# `fsck --full` against `git fsck` (no goal yet). The page's
# views are measured through app-server (the same code as serve's HTTP
# routes): the graph of 20 snapshots, and the newest conversation's
# newest 20 turns and its every turn (up to 1,000).
#
# `log --all --since` takes the hour before the store's newest session.
# The stores are cached in t/perf/results/ (gitignored), keyed by size,
# by build-store.sh's content and by the store format.
#
# Then the search index (issue 28, item 1): `log --all -S` and `log -S`
# (from HEAD) of a word in one session in ten and of a text in one
# session, --grep and -i, instructions on both stores (and per match)
# and CPU time against `git log -S` and `git log --grep` (-i, -F for
# the text) on both pairs; and
# the bytes of the search table per session against those of the whole
# store (LMDB pages in use, mdb_stat; goal <= 25%). ONLY=search runs
# this part alone.
#
#	sh t/perf/scale.sh     APTIX=path/to/aptix SMALL=10000 LARGE=100000
#	                       ROUNDS=3 ONLY=search
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
SMALL=${SMALL:-10000}
LARGE=${LARGE:-100000}
ROUNDS=${ROUNDS:-3}
ONLY=${ONLY:-}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-scale-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat GIT_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY OPENAI_API_KEY
. "$PERF_DIR/lib.sh"
command -v valgrind >/dev/null || { echo "scale: valgrind is needed"; exit 0; }

RES=$PERF_DIR/results
GIT_CEILING_DIRECTORIES=$RES
export GIT_CEILING_DIRECTORIES
# -r5: session records of version 5 (they carry usage); older caches
# would measure the fallback that reads turns. -s1: stores made since
# turns keep the search index (an older one has none, and log -S would
# measure the scan); -s2: with its marks of skewed sessions (without,
# log --all -S walks every session)
HASH=$(sha256sum <"$PERF_DIR/build-store.sh" | cut -c1-12)-f$(store_format)-r5-s2

# store N [C]: the cached pair (aptix/, git/) of N sessions in C
# conversations (default N/100), built when missing
store() {
	_c=${2:-$(($1 / 100))}
	[ $_c -ge 1 ] || _c=1
	_s=$RES/history-c$_c-s$1-$HASH
	if ! [ -d "$_s" ] ||
	   ! "$APTIX" -C "$_s/aptix" log --oneline -n 1 >/dev/null 2>&1 ||
	   ! git -C "$_s/git" rev-parse -q --verify HEAD >/dev/null 2>&1; then
		build_cached "$_s" "$RES/history-c$_c-s$1-" --git @/git "$_c" \
			"$1" @/aptix || return 1
	fi
	echo "$_s"
}

# cg DIR COMMAND: instructions of one run of the shell command line in
# DIR, summed over the processes it starts (not sh, head or cat)
cg() {
	rm -f "$W"/cg.out.*
	(cd "$1" && valgrind --tool=callgrind --trace-children=yes \
		--trace-children-skip='*/sh,*/dash,*/head,*/cat' \
		--callgrind-out-file="$W/cg.out.%p" sh -c "$2" >/dev/null \
		2>"$W/vg.err") || { echo failed; return 0; }
	cat "$W"/cg.out.* | sed -n 's/^summary: \([0-9]*\).*/\1/p' |
		awk '{ n += $1 } END { printf "%.0f\n", n }'
}
mi() { awk -v n="$1" 'BEGIN { if (n ~ /^[0-9]+$/) printf "%.1fM", n / 1e6; else print n }'; }
# cpu DIR COMMAND: user + system seconds, best of ROUNDS
cpu() {
	_best=
	_i=0
	while [ $_i -lt "$ROUNDS" ]; do
		(cd "$1" && /usr/bin/time -f '%U %S' -o "$W/cpu" sh -c "$2" \
			>/dev/null 2>&1) || true
		_t=$(awk '{ printf "%.3f", $1 + $2 }' "$W/cpu" | tail -n 1)
		if [ -z "$_best" ] || awk -v a="$_t" -v b="$_best" \
			'BEGIN { exit !(a < b) }'; then
			_best=$_t
		fi
		_i=$((_i + 1))
	done
	echo "$_best"
}

# against LABEL APTIX-ARGS GIT-ARGS: a row of CPU s (best of ROUNDS) of
# aptix and of git on the pair $p of $n sessions, and their ratio
against() {
	_a=$(cpu "$p/aptix" "$APTIX $2")
	_g=$(cpu "$p/git" "git $3")
	printf '%-44s %12s %12s %8s\n' "$n: $1" "$_a" "$_g" "$(ratio "$_a" "$_g")"
}

# faults DIR COMMAND: minor page faults and system seconds of one run
faults() {
	(cd "$1" && /usr/bin/time -f '%R %S' -o "$W/flt" sh -c "$2" \
		>/dev/null 2>&1) || true
	tail -n 1 "$W/flt"
}

SS=$(store "$SMALL") || exit 0
SL=$(store "$LARGE") || exit 0
# the hour before each store's newest session
since() {
	_ms=$("$APTIX" -C "$1" log -n 1 --format=%am HEAD)
	echo "@$((_ms / 1000 - 3600))"
}
since_s=$(since "$SS/aptix") since_l=$(since "$SL/aptix")

row() { # label command-small command-large
	_a=$(cg "$SS/aptix" "$2") _b=$(cg "$SL/aptix" "$3")
	printf '%-44s %12s %12s %8s\n' "$1" "$(mi "$_a")" "$(mi "$_b")" \
		"$(ratio "$_b" "$_a")"
}
same() { row "$1" "$APTIX $1" "$APTIX $1"; }
# pair N: the directory of the cached pair of N sessions
pair() { if [ "$1" = "$SMALL" ]; then echo "$SS"; else echo "$SL"; fi; }
# pages <store dir> [table]: LMDB pages in use (of the table, or all)
pages() {
	if [ -n "${2:-}" ]; then
		mdb_stat -s "$2" "$1" | awk '/pages:/ { n += $NF } END { print n + 0 }'
	else
		mdb_stat -e "$1" | awk '/Number of pages used/ { print $NF }'
	fi
}

search_part() {
	echo "log -S through the search index, instructions (callgrind), $SMALL against $LARGE sessions"
	printf '%-44s %12s %12s %8s\n' "command" "$SMALL" "$LARGE" "ratio"
	same "log --all -S lexer"
	row "log --all -S <one session's text>" \
		"$APTIX log --all -S 'turn $((SMALL / 2)).'" \
		"$APTIX log --all -S 'turn $((LARGE / 2)).'"
	same "log -S lexer"
	row "log -S <one session's text> (HEAD)" \
		"$APTIX log -S 'turn $((SMALL / 2)).'" \
		"$APTIX log -S 'turn $((LARGE / 2)).'"
	same "log --grep lexer"
	same "log --all --grep lexer"
	same "log -i -S LEXER"
	same "search lexer parser"
	# "lexer" is in one session in ten at every size: what it prints
	# grows with the store, so its cost per match is what must not
	_ms=$("$APTIX" -C "$SS/aptix" log --all --format=%h -S lexer | wc -l)
	_ml=$("$APTIX" -C "$SL/aptix" log --all --format=%h -S lexer | wc -l)
	_a=$(cg "$SS/aptix" "$APTIX log --all -S lexer")
	_b=$(cg "$SL/aptix" "$APTIX log --all -S lexer")
	printf '%-44s %12s %12s %8s\n' "log --all -S lexer, per match ($_ms, $_ml)" \
		"$(mi $((_a / _ms)))" "$(mi $((_b / _ml)))" \
		"$(ratio $((_b / _ml)) $((_a / _ms)))"
	_ms=$("$APTIX" -C "$SS/aptix" log --format=%h -S lexer | wc -l)
	_ml=$("$APTIX" -C "$SL/aptix" log --format=%h -S lexer | wc -l)
	_a=$(cg "$SS/aptix" "$APTIX log -S lexer")
	_b=$(cg "$SL/aptix" "$APTIX log -S lexer")
	printf '%-44s %12s %12s %8s\n' "log -S lexer (HEAD), per match ($_ms, $_ml)" \
		"$(mi $((_a / _ms)))" "$(mi $((_b / _ml)))" \
		"$(ratio $((_b / _ml)) $((_a / _ms)))"
	echo "  goal (issue 28): log --all -S <= 1.5 (at 1M over 10k): for a text in"
	echo "  one session; per match for a word in one session in ten. From HEAD the"
	echo "  walk still goes down HEAD's ancestry (one record a session), to the"
	echo "  generation of the oldest session that may match"
	echo
	echo "log --all -S against git on the same history, CPU s (best of $ROUNDS)"
	echo "  (git's commits change no file: its -S prints nothing, --grep what aptix -S does)"
	printf '%-44s %12s %12s %8s\n' "sessions" "aptix" "git" "aptix/git"
	for n in "$SMALL" "$LARGE"; do
		p=$(pair "$n")
		_t="turn $((n / 2))."
		against "log --all -S lexer" "log --all -S lexer" "log --all -S lexer"
		against "against git --grep lexer" "log --all -S lexer" \
			"log --all --grep lexer"
		against "log -S lexer (HEAD)" "log -S lexer" "log -S lexer"
		against "against git --grep lexer (HEAD)" "log -S lexer" \
			"log --grep lexer"
		against "log --grep lexer (HEAD)" "log --grep lexer" \
			"log --grep lexer"
		against "log --all --grep lexer" "log --all --grep lexer" \
			"log --all --grep lexer"
		against "log -i -S LEXER / git -i --grep" "log -i -S LEXER" \
			"log -i --grep LEXER"
		against "log -S <one session's text> (HEAD)" "log -S '$_t'" \
			"log -F --grep '$_t'"
		against "log --all -S <one session's text>" "log --all -S '$_t'" \
			"log --all -F --grep '$_t'"
	done
	echo "  goal (issue 28): aptix faster (ratio < 1)"
	echo
	echo "log -S lexer from HEAD: pages mapped (minor faults) and system s, against git log --grep lexer"
	printf '%-44s %12s %12s %8s\n' "sessions" "aptix" "git" "aptix/git"
	for n in "$SMALL" "$LARGE"; do
		p=$(pair "$n")
		set -- $(faults "$p/aptix" "$APTIX log -S lexer") \
			$(faults "$p/git" "git log --grep lexer")
		printf '%-44s %12s %12s %8s\n' "$n: minor faults" "$1" "$3" \
			"$(ratio "$1" "$3")"
		printf '%-44s %12s %12s %8s\n' "$n: system s" "$2" "$4" \
			"$(ratio "$2" "$4")"
	done
	echo "  a walk's lookups keep the store's pages mapped (the map is let go"
	echo "  only past 16 MB read in key order): at 1M sessions, 425,674 faults"
	echo "  and 2.3 s of system time before, 159,220 and 1.0 s after"
	echo
	echo "search index size per session against the store's (LMDB pages of 4 KiB in use)"
	printf '%-44s %12s %12s %8s\n' "sessions" "search B/s" "store B/s" "share"
	for n in "$SMALL" "$LARGE"; do
		p=$(pair "$n")
		_s=$(pages "$p/aptix/.aptix" search) _t=$(pages "$p/aptix/.aptix")
		printf '%-44s %12s %12s %8s\n' "$n" "$((_s * 4096 / n))" \
			"$((_t * 4096 / n))" "$(ratio "$_s" "$_t")"
	done
	echo "  goal (issue 28): <= 0.25"
}

if [ "$ONLY" = search ]; then
	search_part
	exit 0
fi

echo "instructions (callgrind), $SMALL sessions in $((SMALL / 100)) conversations against $LARGE in $((LARGE / 100))"
printf '%-44s %12s %12s %8s\n' "command" "$SMALL" "$LARGE" "ratio"
same "continue --dry-run -m x"
same "log -n 20"
row "log --graph --all | head -50" "$APTIX log --graph --all | head -50" \
	"$APTIX log --graph --all | head -50"
same "sessions -n 20"
same "sessions --json -n 20 --all-workspaces"
# the page's views, through app-server (serve's code, over stdin): the
# graph of 20 snapshots, and 20 turns of the newest conversation
rpc() { printf "printf '%%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}' | $APTIX app-server" "$1" "$2"; }
newest() { "$APTIX" -C "$1" sessions --all-workspaces -n 1 --json |
	sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' | head -n 1; }
row "serve graph, limit 20" "$(rpc thread/graph '{"all":true,"limit":20}')" \
	"$(rpc thread/graph '{"all":true,"limit":20}')"
row "serve conversation, 20 turns" \
	"$(rpc thread/read "{\"threadId\":\"$(newest "$SS/aptix")\",\"limit\":20}")" \
	"$(rpc thread/read "{\"threadId\":\"$(newest "$SL/aptix")\",\"limit\":20}")"
row "serve conversation, every turn" \
	"$(rpc thread/read "{\"threadId\":\"$(newest "$SS/aptix")\"}")" \
	"$(rpc thread/read "{\"threadId\":\"$(newest "$SL/aptix")\"}")"
same "for-each-ref"
row "log --all --since <its last hour>" "$APTIX log --all --since $since_s" \
	"$APTIX log --all --since $since_l"
same "usage"
echo "  goal (issue 28): <= 1.5 each (measured at 1M over 10k there)"
# usage between stores with the same number of conversations: it reads
# one record per conversation, whatever their length
SC=$(store "$LARGE" $((SMALL / 100))) || exit 0
_a=$(cg "$SS/aptix" "$APTIX usage --all-workspaces")
_b=$(cg "$SC/aptix" "$APTIX usage --all-workspaces")
printf '%-44s %12s %12s %8s\n' "usage, $((SMALL / 100)) conversations both" \
	"$(mi "$_a")" "$(mi "$_b")" "$(ratio "$_b" "$_a")"
_a=$(cg "$SS/aptix" "$APTIX usage --all-workspaces --forks")
_b=$(cg "$SC/aptix" "$APTIX usage --all-workspaces --forks")
printf '%-44s %12s %12s %8s\n' "usage --forks, the same" \
	"$(mi "$_a")" "$(mi "$_b")" "$(ratio "$_b" "$_a")"
echo "  goal (issue 28): <= 1.5"

echo
echo "peak memory (KB): max RSS, then the process's own (peak RssAnon) and the"
echo "store's pages it mapped (peak RssFile); large over small of each"
printf '%-30s %8s %8s %8s %8s %8s %8s %6s %6s\n' "command" "rss" "anon" "file" \
	"rss" "anon" "file" "anon" "rss"
printf '%-30s %26s %26s %13s\n' "" "$SMALL" "$LARGE" "ratio"
for c in "log --all" "log --oneline --all" "log --graph --all | head -50" \
	"fsck --connectivity-only" "git fsck --connectivity-only" "reindex"; do
	case "$c" in
	git*) _p=git _cmd=$c ;;
	*) _p=aptix _cmd="$APTIX $c" ;;
	esac
	_h=
	case "$_cmd" in *"| head -50") _h="--head 50" _cmd=${_cmd%% |*} ;; esac
	_ds=$SS/$_p _dl=$SL/$_p
	if [ "$c" = reindex ]; then
		# it writes: on copies
		rm -rf "$W/rs" "$W/rl"
		cp -a "$SS/aptix" "$W/rs" && cp -a "$SL/aptix" "$W/rl"
		_ds=$W/rs _dl=$W/rl
		_bs=$(pages "$_ds/.aptix") _bl=$(pages "$_dl/.aptix")
	fi
	# shellcheck disable=SC2046,SC2086
	set -- $(python3 "$PERF_DIR/mem.py" $_h "$_ds" $_cmd) \
		$(python3 "$PERF_DIR/mem.py" $_h "$_dl" $_cmd)
	printf '%-30s %8s %8s %8s %8s %8s %8s %6s %6s\n' "$c" "$1" "$2" "$3" \
		"$7" "$8" "$9" "$(ratio "$8" "$2")" "$(ratio "$7" "$1")"
	if [ "$c" = reindex ]; then
		_rs=$2 _rl=$8
		_as=$(pages "$_ds/.aptix") _al=$(pages "$_dl/.aptix")
	fi
done
rm -rf "$W/rs" "$W/rl"
echo "  reindex: its own memory (peak RssAnon, KB) $_rs at $SMALL, $_rl at $LARGE"
echo "  (goal: bounded, tens of MB whatever the sessions); LMDB pages in use after"
echo "  it over before: $(ratio "$_as" "$_bs") at $SMALL, $(ratio "$_al" "$_bl") at $LARGE (goal: <= 1.2)"
echo "  goal (issue 28): under 64 MB at 1M sessions (log --all, fsck). An LMDB store"
echo "  is mapped: the pages a command reads count in its max RSS (RssFile), and"
echo "  the kernel takes them back under pressure; RssAnon is the process's own"

echo
echo "log --all against git log --all on the same history, CPU s (user + system, best of $ROUNDS)"
printf '%-44s %12s %12s %8s\n' "sessions" "aptix" "git" "aptix/git"
for c in "log --oneline --all" "log --graph --all | head -50"; do
	for n in "$SMALL" "$LARGE"; do
		p=$(pair "$n")
		_a=$(cpu "$p/aptix" "$APTIX $c")
		_g=$(cpu "$p/git" "git $c")
		printf '%-44s %12s %12s %8s\n' "$n: $c" "$_a" "$_g" \
			"$(ratio "$_a" "$_g")"
	done
done
echo "  goal (issue 28): the first screen costs the same at any size"

echo
echo "fsck --connectivity-only against git's on the same history, CPU s (user + system, best of $ROUNDS)"
printf '%-44s %12s %12s %8s\n' "sessions" "aptix" "git" "aptix/git"
for n in "$SMALL" "$LARGE"; do
	p=$(pair "$n")
	_a=$(cpu "$p/aptix" "$APTIX fsck --connectivity-only")
	_g=$(cpu "$p/git" "git fsck --connectivity-only")
	printf '%-44s %12s %12s %8s\n' "$n" "$_a" "$_g" "$(ratio "$_a" "$_g")"
done
echo "  goal (issue 28): <= 2"
# every object read and checked, hashes included, against git's default
# fsck (which hashes and parses every object too)
for n in "$SMALL" "$LARGE"; do
	p=$(pair "$n")
	_a=$(cpu "$p/aptix" "$APTIX fsck --full")
	_g=$(cpu "$p/git" "git fsck")
	printf '%-44s %12s %12s %8s\n' "$n: fsck --full / git fsck" "$_a" "$_g" \
		"$(ratio "$_a" "$_g")"
done

echo
search_part
