#!/bin/sh
# t/perf/tools.sh - tool calls (issue 24): instructions (callgrind) of a
# turn that sends 10 tool results against a turn that sends none (goal:
# within 1.2x, plus what the outputs' bytes cost: a third turn carries
# the same bytes as its instruction, to say what bytes alone cost), and
# the store bytes
# one call takes (its call, result and blobs, as stored) against the
# JSONL lines a Codex rollout spends on the same call (the fixture
# codex-0.171-toolcall: function_call, item_completed, function_call_output).
# Prints figures; never asserts.
#
#	sh t/perf/tools.sh     APTIX=path/to/aptix  [FIXTURES=../shared/fixtures]
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
FIXTURES=${FIXTURES:-$PERF_DIR/../../../shared/fixtures}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-tools-bench.XXXXXX")
export HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY
command -v valgrind >/dev/null || { echo "tools: valgrind is needed"; exit 0; }
python3 "$PERF_DIR/../standin/openai_standin.py" --port-file "$W/port" \
	--log-dir "$W/log" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$W"' EXIT
while [ ! -s "$W/port" ]; do sleep 0.1; done
PORT=$(cat "$W/port")
export OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1"
export OPENAI_API_KEY=sk-bench-0123456789abcdef
. "$PERF_DIR/lib.sh"

control() {
	curl -sS -f -X POST -H 'Content-Type: application/json' \
		--data-binary "$1" "http://127.0.0.1:$PORT/__control" >/dev/null
}

mkdir "$W/ws"
cd "$W/ws"
"$APTIX" init -q
echo '[{"type":"function","name":"shell","parameters":{"type":"object"}}]' \
	>"$W/tools.json"
# ten calls, and ten outputs of about 1 KB each (a build log's lines)
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
calls = [{"name": "shell", "arguments": json.dumps({"cmd": "make -C dir%d" % i}),
          "call_id": "call_%02d" % i} for i in range(10)]
json.dump({"faults": [{"kind": "tool_calls", "calls": calls}]},
          open(w + "/fault.json", "w"))
line = "cc -O2 -Wall -c src/module.c -o build/module.o\n"
json.dump([{"call_id": c["call_id"], "output": line * 21, "stdout": line * 21,
            "exit_code": 0, "duration_ms": 1200, "cwd": "/src",
            "argv": ["sh", "-c", "make"]} for c in calls],
          open(w + "/results.json", "w"))
PY
"$APTIX" continue -q --no-stream --no-files --no-rag --tools "$W/tools.json" \
	-m "first turn" >/dev/null
plain=$(count "$APTIX" continue -q --no-stream --no-files --no-rag \
	-m "a turn without tools")
# the same bytes as the outputs, as an instruction: what the bytes alone
# cost a turn (hashed, scanned, compressed, sent, stored)
python3 -c 'import json,sys; print("".join(r["output"] for r in json.load(open(sys.argv[1]))), end="")' \
	"$W/results.json" >"$W/outputs.txt"
sized=$(count "$APTIX" continue -q --no-stream --no-files --no-rag \
	-F "$W/outputs.txt")
control "$(cat "$W/fault.json")"
"$APTIX" continue -q --no-stream --no-files --no-rag -m "build it" >/dev/null
bytes=$(python3 -c 'import json,sys; print(sum(len(r["output"]) for r in json.load(open(sys.argv[1]))))' "$W/results.json")
tools=$(count "$APTIX" continue -q --no-stream --no-files --no-rag \
	--tool-results "$W/results.json")
printf '%-44s %12s\n' "" "instructions"
printf '%-44s %12s\n' "continue, no tool results" "$plain"
printf '%-44s %12s\n' "continue, 10 tool results ($bytes bytes)" "$tools"
printf '%-44s %12s\n' "  ratio" "$(ratio "$tools" "$plain")x"
printf '%-44s %12s\n' "continue, the same bytes as the instruction" "$sized"
printf '%-44s %12s\n' "  ratio (10 results / same bytes)" \
	"$(ratio "$tools" "$sized")x"
printf '%-44s %12s\n' "  extra instructions per output byte" \
	"$(awk -v a="$tools" -v b="$plain" -v n="$bytes" \
		'BEGIN { printf "%.1f", (a - b) / n }')"

# one call's bytes in the store against Codex's JSONL
rollout=$(ls "$FIXTURES"/codex-0.171-toolcall/rollout-*.jsonl 2>/dev/null |
	head -n 1) || true
if [ -z "$rollout" ]; then
	echo "(no Codex fixture under $FIXTURES: the comparison is skipped)"
	exit 0
fi
codex=$(grep -c call_fake0003 "$rollout")
codex_bytes=$(grep call_fake0003 "$rollout" | wc -c)
args=$(python3 - "$rollout" "$W" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line).get("payload", {})
    if p.get("type") == "function_call_output" and p.get("call_id") == "call_fake0003":
        out = p["output"]
    if p.get("type") == "function_call" and p.get("call_id") == "call_fake0003":
        args = p["arguments"]
    if p.get("type") == "item_completed" and p.get("item", {}).get("id") == "call_fake0003":
        item = p["item"]
json.dump({"args": args, "out": out, "code": item.get("exit_code"),
           "agg": item.get("aggregated_output", "")},
          open(sys.argv[2] + "/codex.json", "w"))
print(args)
PY
)
mkdir "$W/one" && cd "$W/one" && "$APTIX" init -q
control "$(python3 -c 'import json,sys; print(json.dumps({"faults": [{"kind": "tool_calls", "calls": [{"name": "exec_command", "arguments": sys.argv[1], "call_id": "call_fake0003"}]}]}))' "$args")"
echo '[{"type":"function","name":"exec_command","parameters":{"type":"object"}}]' \
	>"$W/tools1.json"
"$APTIX" continue -q --no-stream --no-files --no-rag --tools "$W/tools1.json" \
	-m "RUN: echo fixture-out; ls; exit 3" >/dev/null
python3 - "$W/one/results.json" "$W/codex.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[2]))
json.dump([{"call_id": "call_fake0003", "output": c["out"], "stdout": c["agg"],
            "exit_code": c["code"], "cwd": "/home/user/proj",
            "argv": ["/bin/bash", "-lc", "echo fixture-out; ls; exit 3"]}],
          open(sys.argv[1], "w"))
PY
"$APTIX" continue -q --no-stream --no-files --no-rag \
	--tool-results "$W/one/results.json" >/dev/null
turn=$("$APTIX" cat-object -p HEAD | sed -n 's/^turn  *//p')
call=$("$APTIX" cat-object -p HEAD^ | sed -n 's/^turn  *//p')
call=$("$APTIX" cat-object -p "$call" | sed -n 's/^tool call  *//p')
result=$("$APTIX" cat-object -p "$turn" | sed -n 's/^tool result  *//p')
ids="$call $result $("$APTIX" cat-object -p "$result" |
	sed -n 's/^\(stdout\|stderr\|output\)  *[0-9]* bytes \([0-9a-f]*\)$/\2/p' |
	sort -u)"
stored=0
for id in $ids; do
	n=$(python3 "$PERF_DIR/../lib-store.py" .aptix value objects "hex:$id" |
		tr -d '\n' | wc -c)
	stored=$((stored + n / 2))
done
printf '%-44s %12s\n' "" "bytes"
printf '%-44s %12s\n' "Codex rollout: the call's $codex JSONL lines" \
	"$codex_bytes"
printf '%-44s %12s\n' "aptix: call, result and blobs, as stored" "$stored"
printf '%-44s %12s\n' "  ratio" "$(ratio "$stored" "$codex_bytes")x"
