#!/bin/sh
# t/perf/fixed.sh - the fixed cost of one turn (issue 10, item 4):
# instructions (callgrind) of a whole `aptix continue --no-stream`
# against an instant responder, over those of a minimal libcurl client
# (t/perf/curl-post.c) posting the same request to the same responder;
# and of commands that make no network call (--version, log, status).
# Prints figures; never asserts.
#
#	sh t/perf/fixed.sh        APTIX=path/to/aptix  CC=cc
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
curl=$(count "$W/curl-post" "$OPENAI_BASE_URL/responses" "$W/body.json")
cont=$(count "$APTIX" continue -q --no-stream -m "second turn")
printf '%-44s %12s\n' "minimal libcurl client, one POST" "$curl"
printf '%-44s %12s  (%s x the client)\n' "aptix continue --no-stream (turn 2)" \
	"$cont" "$(awk -v a="$cont" -v b="$curl" 'BEGIN { printf "%.2f", a / b }')"
for cmd in "--version" "log --oneline" "status" "sessions"; do
	# shellcheck disable=SC2086
	printf '%-44s %12s\n' "aptix $cmd" "$(count "$APTIX" $cmd)"
done
