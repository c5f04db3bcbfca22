#!/bin/sh
# t/perf/serve-load.sh: a load run of `aptix serve` (issue 14), for make
# bench; it measures and prints, never asserts.
#
# 32 clients (keep-alive connections) for SERVE_LOAD_SECONDS (60) against
# one server, over 16 conversations: 80% reads (list, graph, a
# conversation, a turn's full view), 20% turns (POST execute, JSON)
# against t/perf/instant-responses.py. Reports requests per second, p50
# and p99 latency, errors other than the expected 409s (goal: 0), the
# server's resident memory at the start, after 1,000 and 10,000 requests
# and at the end (goal: flat; anonymous memory apart from the file-backed
# pages of the store's map, which grow with the store), and fsck after.
#
#	APTIX=/path/to/aptix  SERVE_LOAD_SECONDS=60  SERVE_LOAD_CLIENTS=32
set -eu
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
PERF_DIR=$(cd "$(dirname "$0")" && pwd)
SECONDS_=${SERVE_LOAD_SECONDS:-60}
CLIENTS=${SERVE_LOAD_CLIENTS:-32}
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-serve-load.XXXXXX")
SPID= RPID=
cleanup() {
	for p in $SPID $RPID; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || :
	done
	rm -rf "$W"
}
trap cleanup EXIT
export HOME="$W" LC_ALL=C
unset APTIX_DIR

python3 "$PERF_DIR/instant-responses.py" --port-file "$W/openai.port" \
	>"$W/openai.log" 2>&1 &
RPID=$!
for _ in $(seq 100); do [ -s "$W/openai.port" ] && break; sleep 0.1; done
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/openai.port")/v1"
export OPENAI_API_KEY=sk-bench-not-a-key

mkdir "$W/store" && cd "$W/store"
"$APTIX" init -q
"$APTIX" serve --port 0 --max-connections 128 >"$W/serve.out" \
	2>"$W/serve.err" &
SPID=$!
for _ in $(seq 100); do [ -s .aptix/serve.token ] && break; sleep 0.1; done
URL=$(sed -n 's/^url //p' "$W/serve.out")

echo "aptix serve under load: $CLIENTS clients, ${SECONDS_} s, 80% reads," \
	"20% turns over 16 conversations (instant responder)"
python3 - "$URL" "$(cat .aptix/serve.token)" "$SPID" "$SECONDS_" \
	"$CLIENTS" <<'PY'
import http.client, json, random, sys, threading, time
url, token, pid, seconds, nclients = sys.argv[1:6]
seconds, nclients = float(seconds), int(nclients)
host, port = url[len("http://"):].rstrip("/").split(":")
H = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

def rss_kib():
    """Resident KiB: all, anonymous (the heap, stacks) and file-backed
    (mostly the store's LMDB map, which grows with the store)."""
    v = {}
    for line in open("/proc/%s/status" % pid):
        k = line.split(":")[0]
        if k in ("VmRSS", "RssAnon", "RssFile"):
            v[k] = int(line.split()[1])
    return "%d (anon %d, file %d)" % (v["VmRSS"], v.get("RssAnon", 0),
                                      v.get("RssFile", 0))

def conn():
    return http.client.HTTPConnection(host, int(port), timeout=60)

# 16 conversations, one turn each
c, convs, sessions = conn(), [], []
for i in range(16):
    c.request("POST", "/api/ai/agent/execute",
              json.dumps({"instruction": "seed %d" % i, "files": False,
                          "rag": False}), H)
    r = json.loads(c.getresponse().read())
    convs.append(r["conversation"])
    sessions.append(r["session"])
c.close()

lock = threading.Lock()
lat, codes, count = [], {}, [0]
kinds = {}
rss = {"start": rss_kib()}
stop = time.time() + seconds

def client(seed):
    rnd = random.Random(seed)
    c = conn()
    while time.time() < stop:
        x = rnd.random()
        if x < 0.2:
            m, path, what = "POST", "/api/ai/agent/execute", "turn"
            body = json.dumps({"conversation": rnd.choice(convs),
                               "instruction": "load", "files": False,
                               "rag": False})
        else:
            m, body = "GET", None
            what, path = rnd.choice([
                ("list", "/api/conversations?limit=20"),
                ("graph", "/api/graph?limit=20"),
                ("conversation", "/api/conversations/" + rnd.choice(convs)),
                ("full turn", "/api/turns/%s/full" % rnd.choice(sessions))])
        t0 = time.time()
        try:
            c.request(m, path, body, H)
            r = c.getresponse()
            r.read()
            code = r.status
        except Exception as e:
            code = type(e).__name__
            c.close()
            c = conn()
        dt = time.time() - t0
        with lock:
            lat.append(dt)
            kinds.setdefault(what, []).append(dt)
            codes[code] = codes.get(code, 0) + 1
            count[0] += 1
            if count[0] == 1000:
                rss["after 1,000 requests"] = rss_kib()
            if count[0] == 10000:
                rss["after 10,000 requests"] = rss_kib()
    c.close()

t0 = time.time()
ts = [threading.Thread(target=client, args=(i,)) for i in range(nclients)]
for t in ts:
    t.start()
for t in ts:
    t.join()
elapsed = time.time() - t0
rss["end"] = rss_kib()
lat.sort()
n = len(lat)
errors = sum(v for k, v in codes.items() if k not in (200, 409))
print("requests      %d in %.1f s: %.0f per second" % (n, elapsed, n / elapsed))
print("latency       p50 %.1f ms, p99 %.1f ms" % (lat[n // 2] * 1e3,
                                                    lat[int(n * .99)] * 1e3))
for k, v in sorted(kinds.items()):
    v.sort()
    print("  %-12s %5d: p50 %.1f ms, p99 %.1f ms" % (
        k, len(v), v[len(v) // 2] * 1e3, v[int(len(v) * .99)] * 1e3))
print("statuses      %s" % ", ".join("%s: %d" % kv for kv in
                                       sorted(codes.items(), key=str)))
print("errors        %d (not counting the expected 409s)" % errors)
for k, v in rss.items():
    print("RSS (KiB)     %-22s %s" % (k, v))
PY
kill "$SPID" && wait "$SPID" || :
SPID=
if "$APTIX" fsck >"$W/fsck.out" 2>&1; then
	echo "fsck          clean"
else
	echo "fsck          FAILED: $(head -n 3 "$W/fsck.out" | tr '\n' ' ')"
fi
