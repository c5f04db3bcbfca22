#!/bin/sh
# t/perf/store.sh - what a turn costs on disk and on the wire (issue 10,
# item 5): a scripted 50-turn session against the instant responder
# (each turn a new instruction of about 300 bytes and an answer of about
# 2 KB, 4 active files, one of them edited every 5th turn). Prints the
# store's growth per turn (data.mdb's size and LMDB's used pages, over
# turns 11-50, so that init and the first turn's files do not count)
# against a JSONL transcript of the same session (one line per turn:
# instruction, answer, usage, file hashes), and data.mdb's growth over
# the second half of the turns, once LMDB's free pages hold, and the
# bytes sent per turn
# against a full resend of the history and the files, and what the
# model holds through the response chain after the last turn against a
# full resend of the current state (history and current files), and the
# size of the session records (the session index) along the way. Never
# asserts.
#
#	sh t/perf/store.sh       APTIX=path/to/aptix TURNS=50
#	RAG=1 sh t/perf/store.sh  the same with local RAG over 40 more files
#	                          and instructions drawn from their words,
#	                          so that every turn retrieves other chunks
#	CONVS=10 sh t/perf/store.sh  the turns go round 10 conversations
#	                          (turn n to conversation n mod 10), so that
#	                          each table's keys are written as a store
#	                          with many conversations writes them
#	KEEP=dir sh t/perf/store.sh  copy the store to dir at the end (for
#	                          mdb_stat -a)
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
TURNS=${TURNS:-50}
RAG=${RAG:-0}
CONVS=${CONVS:-1}
KEEP=${KEEP:-}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-store-bench.XXXXXX")
export GIT_CONFIG_NOSYSTEM=1 HOME="$W" LC_ALL=C APTIX_PAGER=cat
unset APTIX_DIR QDRANT_URL QDRANT_API_KEY
python3 "$PERF_DIR/instant-responses.py" --port-file "$W/port" \
	--answer-bytes 2000 >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; [ -z "$KEEP" ] || [ -z "${STORE:-}" ] ||
	cp -a "$STORE" "$KEEP"; rm -rf "$W"' EXIT
while [ ! -s "$W/port" ]; do sleep 0.1; done
OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/port")/v1"
export OPENAI_BASE_URL
export OPENAI_API_KEY=sk-bench-0123456789abcdef

mkdir "$W/ws"
cd "$W/ws"
python3 - "$RAG" <<'PY'
import random, sys
rnd = random.Random(3)
words = ["parse", "config", "buffer", "network", "cache", "index", "chunk",
         "token", "query", "score", "stream", "retry", "lock", "store"]
for n in range(1, 5):
    with open("src%02d.c" % n, "w") as f:
        for i in range(60):
            f.write("int %s_%s_%d(void) { return %d; }\n" % (
                rnd.choice(words), rnd.choice(words), i, rnd.randint(0, 99)))
# RAG=1: a corpus of 40 files over 400 words
vocab = ["w%03d" % i for i in range(400)]
for n in range(40 if sys.argv[1] == "1" else 0):
    with open("rag%02d.c" % n, "w") as f:
        for i in range(120):
            f.write("int %s_%s_%d(void) { return %d; }\n" % (
                rnd.choice(vocab), rnd.choice(vocab), i, rnd.randint(0, 99)))
PY
"$APTIX" init -q
[ "$RAG" != 1 ] || "$APTIX" index >/dev/null
STORE=$("$APTIX" rev-parse --aptix-dir)
FILES="--file src01.c --file src02.c --file src03.c --file src04.c"
# store_size: data.mdb's size and the bytes of the pages LMDB uses
# (pages used: the file's pages less those on LMDB's free list), and
# the pages of each table
store_size() {
	printf '%s %s\n' "$(stat -c %s "$STORE/data.mdb")" \
		"$(mdb_stat -ef "$STORE" | awk '/Page size/ { p = $3 }
			/Number of pages used/ { u = $5 }
			/Free pages/ { f = $3 }	END { print p * (u - f) }')"
	# the exact record bytes of each table (keys, values, 10 bytes of
	# node header and index a record)
	mdb_dump -a "$STORE" | awk '/^database=/ { t = substr($0, 10) }
		/^HEADER=END/ { d = 1; next } /^DATA=END/ { d = 0; t = ""; next }
		d && /^ / { b[t] += (length($0) - 1) / 2; n[t]++ }
		END { for (t in b) print "rec:" t, b[t] + n[t] / 2 * 10 }'
	mdb_stat -a "$STORE" | awk '/^Status of/ { t = $3 }
		/pages:/ { n[t] += $3 } END { for (t in n) print t, n[t] }'
}
: >"$W/turns"
n=0
while [ "$n" -lt "$TURNS" ]; do
	n=$((n + 1))
	if [ $((n % 5)) = 0 ]; then
		echo "/* edit $n */" >>"src0$(( (n / 5) % 4 + 1 )).c"
	fi
	msg=$(python3 -c 'import random, sys
n = int(sys.argv[1]); rnd = random.Random(n)
w = "parse the config buffer and retry the network query so that".split()
if sys.argv[2] == "1": w = ["w%03d" % i for i in range(400)]
s = "turn %d:" % n
while len(s) < 300: s += " " + rnd.choice(w)
print(s)' "$n" "$RAG")
	conv='' head=HEAD
	if [ "$CONVS" != 1 ]; then
		head=$(printf '0000c0de-0000-4000-8000-%012d' $((n % CONVS)))
		conv="--create --conversation $head"
		head=refs/conversations/$head
	fi
	# shellcheck disable=SC2086
	"$APTIX" continue -q --no-stream $FILES $conv -m "$msg" >/dev/null
	[ "$n" != 10 ] || store_size >"$W/size10"
	[ "$n" != $((TURNS / 2)) ] || store_size >"$W/sizehalf"
	"$APTIX" rev-parse "$head" >>"$W/turns"
done
store_size >"$W/size50"
"$APTIX" fsck --full >/dev/null
python3 - "$APTIX" "$W" "$TURNS" "$STORE" "$PERF_DIR/../lib-store.py" "$RAG" <<'PY'
import hashlib, importlib.util, json, subprocess, sys
aptix, w, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.spec_from_file_location("lib_store", sys.argv[5])
lib_store = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib_store)

def record_size(sid):
    return len(lib_store.session_record(sys.argv[4], bytes.fromhex(sid)))

def obj(i, t="blob"):
    return subprocess.run([aptix, "cat-object", t, i], check=True,
                          capture_output=True).stdout

lines, sent, resend, links = [], [], [], []
history = 0
for sid in open(w + "/turns").read().split():
    turn = json.loads(obj(json.loads(obj(sid, "session"))["turn"], "turn"))
    instr, answer = obj(turn["instruction"]), obj(turn["answer"])
    files = {f["path"]: f["sha256"] for f in turn.get("files", [])}
    lines.append(json.dumps({"instruction": instr.decode(),
                             "answer": answer.decode(),
                             "usage": turn["usage"], "files": files}) + "\n")
    size = sum(len(obj(f["content"])) for f in turn.get("files", [])
               if "content" in f)
    sent.append(len(obj(turn["request"])))
    resend.append(history + len(instr) + size)
    history += len(instr) + len(answer)
    links.append((sent[-1] + len(answer),
                  bool(turn.get("previous_response_id")) and
                  not turn.get("chain_restarted"),
                  sum(f.get("size", 0) for f in turn.get("files", []))))
# what the model holds after the last turn: every request and answer of
# its response chain, back to the turn that started it
holds = 0
for carried, continues, _ in reversed(links):
    holds += carried
    if not continues:
        break
current = history + links[-1][2]
def sizes(f):
    lines = open(f).read().split("\n")
    a, u = map(float, lines[0].split())
    t = dict((l.split()[0], float(l.split()[1])) for l in lines[1:] if l)
    r = sum(v for k, v in t.items() if k.startswith("rec:"))
    return a, u, r, t
a10, u10, r10, t10 = sizes(w + "/size10")
a50, u50, r50, t50 = sizes(w + "/size50")
ah, uh, rh, th = sizes(w + "/sizehalf")
span = turns - 10
jsonl = sum(len(l.encode()) for l in lines[10:]) / span
file_per = (a50 - a10) / span
used_per = (u50 - u10) / span
print("turns %d; per turn over turns 11-%d:" % (turns, turns))
print("  JSONL transcript          %8.0f bytes%s" % (jsonl, "" if
      sys.argv[6] != "1" else "  (no chunk texts: the store keeps what "
      "each request sent, RAG chunks included)"))
print("  store file (data.mdb)     %8.0f bytes  %.2fx JSONL" %
      (file_per, file_per / jsonl))
# LMDB's free pages (copy-on-write keeps the pages a write replaced
# until no reader needs them) grow over the first turns, then hold: the
# file's growth over the second half is what a longer session pays
half = (a50 - ah) / (turns - turns // 2)
jsonl_half = sum(len(l.encode()) for l in lines[turns // 2:]) / \
    (turns - turns // 2)
print("%-28s%8.0f bytes  %.2fx JSONL" %
      ("  store file, turns %d-%d" % (turns // 2 + 1, turns), half,
       half / jsonl_half))
print("  store pages used          %8.0f bytes  %.2fx JSONL" %
      (used_per, used_per / jsonl))
rec_per = (r50 - r10) / span
print("  records (key, value, node) %7.0f bytes  %.2fx JSONL "
      "(exact; pages add LMDB's slack)" % (rec_per, rec_per / jsonl))
print("  pages per table: " + ", ".join(
    "%s %.0f" % (t, (t50[t] - t10.get(t, 0)) * 4096 / span)
    for t in sorted(t50) if t50[t] != t10.get(t, 0) and
    not t.startswith("rec:")))
print("  records per table: " + ", ".join(
    "%s %.0f" % (t[4:], (t50[t] - t10.get(t, 0)) / span)
    for t in sorted(t50) if t50[t] != t10.get(t, 0) and
    t.startswith("rec:")))
print("  request sent              %8.0f bytes  %.3fx a full resend (%.0f)" %
      (sum(sent) / len(sent), sum(sent) / sum(resend),
       sum(resend) / len(resend)))
print("  the model holds at turn %d %8.0f bytes  %.2fx a full resend of the "
      "current state (%.0f)" % (turns, holds, holds / current, current))
ids = open(w + "/turns").read().split()
step = max(1, turns // 5)
print("  session records (bytes)   " + ", ".join(
    "turn %d: %d" % (i + 1, record_size(ids[i]))
    for i in list(range(step - 1, turns, step))))
PY
