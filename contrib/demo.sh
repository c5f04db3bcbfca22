#!/bin/sh
# make demo: a scripted session. Without OPENAI_API_KEY it runs against
# the local stand-in of the Responses API (t/standin); with one, the same
# commands talk to OpenAI (OPENAI_BASE_URL to point elsewhere).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="$top:$PATH"
demo=$(mktemp -d "${TMPDIR:-/tmp}/aptix-demo.XXXXXX")
pid=
cleanup() {
	test -n "$pid" && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$demo"
}
trap cleanup EXIT INT TERM

if test -z "${OPENAI_API_KEY:-}"; then
	python3 "$top/t/standin/openai_standin.py" --port-file "$demo/port" \
		--log-dir "$demo/requests" >"$demo/standin.log" 2>&1 &
	pid=$!
	i=0
	while test ! -s "$demo/port" && test $i -lt 100; do
		sleep 0.1; i=$((i + 1))
	done
	OPENAI_BASE_URL="http://127.0.0.1:$(cat "$demo/port")/v1"
	OPENAI_API_KEY=sk-demo-not-a-real-key
	export OPENAI_BASE_URL OPENAI_API_KEY
	echo "(no OPENAI_API_KEY: using the local stand-in at $OPENAI_BASE_URL)"
fi

# quote <word>: the word as a shell reads it back (single quotes when
# it holds anything but safe characters), so a line pasted from the
# demo runs as shown
quote() {
	case $1 in
	'' | *[!A-Za-z0-9_./:@%+=,-]*)
		printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" ;;
	*)
		printf '%s' "$1" ;;
	esac
}

run() {
	printf '\n$'
	for word in "$@"; do
		printf ' '
		quote "$word"
	done
	printf '\n'
	"$@"
}

cd "$demo"
mkdir work && cd work
git init -q . 2>/dev/null || true
printf 'int parse(const char *s);\n' >parser.h
run aptix init
run aptix continue -m "Explain how the parser in parser.h should handle errors"
run aptix continue -m "Now write the error type"
run aptix continue -m "Add tests for it"
first=$(aptix rev-parse HEAD~2)
run aptix fork "$first" -m "Instead: should the parser return a tree?"
run aptix rerun HEAD
run aptix log --graph --oneline --all
run aptix show HEAD
run aptix sessions
resp=$(aptix cat-object -p HEAD^{turn} | awk '$1 == "response" && NF == 2 { print $2 }')
run aptix cat-object -p "$resp"
echo
run aptix fsck
