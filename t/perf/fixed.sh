#!/bin/sh
# t/perf/fixed.sh - the fixed cost of one turn (issue 10, item 4):
# instructions (callgrind) of a whole `aptix continue --no-stream`
# against an instant responder, over those of a minimal libcurl client
# (t/perf/curl-post.c) posting the same request to the same responder;
# and of commands that make no network call (--version, log, status,
# continue --dry-run), with the git processes each starts (a logging git
# on PATH). APTIX_BASE: another build (the one before a change), whose
# figures are printed alongside, measured in the same run.
# Prints figures; never asserts.
#
#	sh t/perf/fixed.sh        APTIX=path/to/aptix  CC=cc  [APTIX_BASE=...]
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-fixed-bench.XXXXXX")
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY
command -v valgrind >/dev/null || { echo "fixed: valgrind is needed"; exit 0; }
${CC:-cc} -O2 -o "$W/curl-post" "$PERF_DIR/curl-post.c" \
	$(pkg-config --cflags --libs libcurl)
python3 "$PERF_DIR/instant-responses.py" --port-file "$W/port" \
	>/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$W"' EXIT
while [ ! -s "$W/port" ]; do sleep 0.1; done
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/port")/v1"
export OPENAI_API_KEY=sk-bench-0123456789abcdef

. "$PERF_DIR/lib.sh"
mkdir "$W/ws"
cd "$W/ws"
git init -q
"$APTIX" init -q
"$APTIX" continue -q --no-stream -m "first turn" >/dev/null
"$APTIX" continue --dry-run --no-stream -m "second turn" 2>/dev/null |
	sed -n '/^{/,$p' >"$W/body.json"
test -s "$W/body.json" || echo '{"model":"m","input":"second turn"}' >"$W/body.json"
# A git that logs its calls: gitcalls CMD... prints how many CMD starts
mkdir "$W/bin"
real_git=$(command -v git)
printf '#!/bin/sh\necho "$*" >>"%s/git-calls"\nexec "%s" "$@"\n' \
	"$W" "$real_git" >"$W/bin/git"
chmod +x "$W/bin/git"
gitcalls() {
	rm -f "$W/git-calls"
	(cd "$W/ws" && PATH="$W/bin:$PATH" "$@" >/dev/null 2>&1)
	if [ -f "$W/git-calls" ]; then wc -l <"$W/git-calls"; else echo 0; fi
}
# row LABEL ARGS...: instructions of aptix (and of APTIX_BASE), git calls
row() {
	_l=$1
	shift
	_n=$(count "$APTIX" "$@")
	_b=
	[ -z "${APTIX_BASE:-}" ] || _b=$(count "$APTIX_BASE" "$@")
	printf '%-36s %12s %12s %6s\n' "$_l" "$_n" "$_b" \
		"$(gitcalls "$APTIX" "$@")"
}
curl=$(count "$W/curl-post" "$OPENAI_BASE_URL/responses" "$W/body.json")
printf '%-36s %12s %12s %6s\n' "" "instructions" \
	"${APTIX_BASE:+base build}" "git"
printf '%-36s %12s\n' "minimal libcurl client, one POST" "$curl"
for cmd in "--version" "log -n1" "log --oneline" "status" "sessions" \
	"continue --dry-run -m x"; do
	# shellcheck disable=SC2086
	row "aptix $cmd" $cmd
done
cont=$(count "$APTIX" continue -q --no-stream -m "second turn")
base=
[ -z "${APTIX_BASE:-}" ] ||
	base=$(count "$APTIX_BASE" continue -q --no-stream -m "second turn")
printf '%-36s %12s %12s %6s\n' "aptix continue --no-stream (turn 2+)" \
	"$cont" "$base" "$(gitcalls "$APTIX" continue -q --no-stream -m x)"
printf '%-36s %12s %12s\n' "  over the libcurl client" \
	"$(ratio "$cont" "$curl")x" "${base:+$(ratio "$base" "$curl")x}"
