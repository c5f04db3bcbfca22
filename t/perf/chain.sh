#!/bin/sh
# t/perf/chain.sh - the cost of a turn against the length of its
# conversation (issue 10): instructions (callgrind, stable on a noisy
# machine) of `continue --dry-run` with four active files and local RAG
# at chain lengths 1, 10, 100 and LENGTH (default 1000), and of status
# and sessions at the same points, and of a dry run whose chain has
# expired (a restart: the window and the rolling summary), with the
# size of that rehydrated request against its budget (window-chars plus
# summary-chars). Every fifth turn edits one of the files. Prints
# figures and the ratio to length 1; never asserts.
#
#	sh t/perf/chain.sh       APTIX=path/to/aptix LENGTH=1000
#	APTIX_OLD=path/to/other/aptix   then the same on another build,
#	                                on a chain of its own (stores of
#	                                different formats): instruction
#	                                counts do not need alternating
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
LENGTH=${LENGTH:-1000}
if [ -n "${APTIX_OLD:-}" ]; then
	APTIX_OLD='' sh "$0"
	old=$APTIX_OLD
	echo "the other build ($old):"
	APTIX=$old APTIX_OLD='' exec sh "$0"
fi
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-chain-bench.XXXXXX")
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY
python3 "$PERF_DIR/instant-responses.py" --port-file "$W/port" \
	>/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$W"' EXIT
while [ ! -s "$W/port" ]; do sleep 0.1; done
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/port")/v1"
export OPENAI_API_KEY=sk-bench-0123456789abcdef

if ! command -v valgrind >/dev/null; then
	echo "chain: valgrind is needed"; exit 0
fi

. "$PERF_DIR/lib.sh"

mkdir "$W/ws"
cd "$W/ws"
git init -q
python3 - <<'PY'
import random
rnd = random.Random(3)
words = ["parse", "config", "buffer", "network", "cache", "index", "chunk",
         "token", "query", "score", "stream", "retry", "lock", "store"]
for n in range(40):
    with open("src%02d.c" % n, "w") as f:
        for i in range(60):
            f.write("int %s_%s_%d(void) { return %d; }\n" % (
                rnd.choice(words), rnd.choice(words), i, rnd.randint(0, 99)))
PY
git add . && git -c user.name=b -c user.email=b@b commit -qm init
"$APTIX" init -q
"$APTIX" index >/dev/null 2>&1
FILES="--file src01.c --file src02.c --file src03.c --file src04.c"
turn() {
	"$APTIX" continue -q --no-stream $FILES -m "turn $1: parse the config \
buffer and retry the network query" >/dev/null
}

# a clock 100 days on: every chain has expired (openai.chain-ttl)
LATER=$(( $(date +%s) + 100 * 86400 ))
# the defaults of context.window-chars and context.summary-chars
BUDGET=$((24000 + 4000))
printf '%-8s %14s %12s %12s %14s %14s %14s\n' length "dry-run" status \
	sessions "dry-run/len1" restart "size/budget"
done_turns=0
base=
for at in $(printf '%s\n' 1 10 100 "$LENGTH" | sort -nu); do
	while [ "$done_turns" -lt "$at" ]; do
		done_turns=$((done_turns + 1))
		if [ $((done_turns % 5)) = 0 ]; then
			echo "/* edit $done_turns */" >>"src0$(( (done_turns / 5) % 4 + 1 )).c"
		fi
		turn "$done_turns"
	done
	# planning alone: no restart for the chain's size at this turn
	d=$(count "$APTIX" -c context.chain-max-chars=0 continue --dry-run \
		$FILES -m "parse the config buffer and retry the network query")
	s=$(count "$APTIX" status)
	l=$(count "$APTIX" sessions)
	rs=$(APTIX_TEST_DATE=$LATER count "$APTIX" continue --dry-run \
		$FILES -m "parse the config buffer and retry the network query")
	size=$(cd "$W/ws" && APTIX_TEST_DATE=$LATER "$APTIX" continue \
		--dry-run $FILES -m "parse the config buffer and retry the \
network query" 2>/dev/null | python3 -c 'import json, sys
t = sys.stdin.read()
body = json.loads(t[t.find("{"):])
print(sum(len(m["content"].encode()) for m in body["input"]))')
	base=${base:-$d}
	printf '%-8s %14s %12s %12s %14s %14s %14s\n' "$at" "$d" "$s" "$l" \
		"$(awk -v a="$d" -v b="$base" 'BEGIN { printf "%.2f", a / b }')" \
		"$rs" "$(awk -v a="$size" -v b="$BUDGET" \
			'BEGIN { printf "%.2f", a / b }')"
done
