#!/bin/sh
# build-store.sh N_CONVS N_SESSIONS DIR: a synthetic aptix store for
# timing history commands (aptix log, sessions, ...).
#
# N_SESSIONS sessions in N_CONVS conversations, in time order: a few
# conversations are active at once; a new one is a fork of a session of
# a recent conversation one time in three, else a new root; about 2% of
# the turns fail (a failed snapshot, no ref moves). Every conversation
# ref points at its last committed session; HEAD at the last one
# started. Deterministic (seeded). Objects go in with plumbing only
# (hash-object --stdin-paths, update-ref --stdin, symbolic-ref).
#
#	t/perf/build-store.sh 1000 100000 /tmp/store
#	cd /tmp/store && time aptix log --graph --all >/dev/null
set -eu
if test $# -ne 3
then
	echo "usage: $0 N_CONVS N_SESSIONS DIR" >&2
	exit 129
fi
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
test -x "$APTIX" || APTIX=aptix
"$APTIX" init -q "$3"
W=$(mktemp -d "${TMPDIR:-/tmp}/aptix-store.XXXXXX")
trap 'rm -rf "$W"' EXIT
python3 - "$1" "$2" "$W" <<'PY'
import hashlib, json, os, random, sys

nconvs, nsess, w = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(1)
ut = {"cached_tokens": 0, "input_tokens": 0, "model_requests": 0,
      "output_tokens": 0, "reasoning_tokens": 0, "total_tokens": 0}
us = {"completion_tokens": 0, "model_requests": 0, "prompt_tokens": 0,
      "total_tokens": 0}
words = ("parser lexer tests refactor explain fix bug add feature docs "
         "speed memory cache index graph log review rename split").split()


def canon(o):
    return (json.dumps(o, sort_keys=True, separators=(",", ":")) +
            "\n").encode()


def oid(kind, data):
    return hashlib.sha256(b"%s %d\0" % (kind.encode(), len(data)) +
                          data).hexdigest()


paths = {"blob": open(os.path.join(w, "blob"), "w"),
         "turn": open(os.path.join(w, "turn"), "w"),
         "session": open(os.path.join(w, "session"), "w")}
nfile = [0]


def store(kind, data):
    nfile[0] += 1
    d = os.path.join(w, "o%03d" % (nfile[0] % 1000))
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "%d" % nfile[0])
    with open(p, "wb") as f:
        f.write(data)
    paths[kind].write(p + "\n")
    return oid(kind, data)


per_conv = max(1, nsess // max(1, nconvs))
heads, seqs, started, active, history = {}, {}, [], [], []
t = 1700000000000
for i in range(nsess):
    t += rng.randrange(1000, 60000)
    if (not active or (len(started) < nconvs and
                       rng.random() < 1.0 / per_conv * 4)):
        conv = "%08x-%04x-4%03x-c%03d" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), len(started) % 1000)
        started.append(conv)
        active.append(conv)
        if len(active) > 4:
            active.pop(0)
        parent = None
        if history and rng.random() < 1.0 / 3:
            lo = max(0, len(history) - 40 * per_conv)
            parent = history[rng.randrange(lo, len(history))]
        heads[conv], seqs[conv] = parent, 0
    else:
        conv = rng.choice(active)
        parent = heads[conv]
    text = "%s the %s (#%d)\n\nDetails of turn %d.\n" % (
        rng.choice(words).capitalize(), rng.choice(words), i, i)
    blob = store("blob", text.encode())
    seqs[conv] += 1
    failed = heads[conv] is not None and rng.random() < 0.02
    turn = store("turn", canon({
        "conversation": conv, "created_at": t, "instruction": blob,
        "seq": seqs[conv], "status": "failed" if failed else "completed",
        "status_at": t, "usage": ut, "v": 1}))
    s = {"conversation": conv, "created_at": t,
         "metadata": {"session_type": "agent"},
         "run_summary": {"duration_ms": 0, "usage": us},
         "status": "failed" if failed else "committed", "turn": turn,
         "v": 1}
    if parent:
        s["parent"] = parent
    sid = store("session", canon(s))
    if not failed:
        heads[conv] = sid
        history.append(sid)
for f in paths.values():
    f.close()
with open(os.path.join(w, "refs"), "w") as f:
    for conv in started:
        if heads[conv]:
            f.write("update refs/conversations/%s %s\n" % (conv, heads[conv]))
with open(os.path.join(w, "head"), "w") as f:
    f.write(started[-1])
PY
cd "$3"
for type in blob turn session
do
	"$APTIX" hash-object -w -t $type --stdin-paths <"$W/$type" >/dev/null
done
"$APTIX" update-ref --stdin <"$W/refs"
"$APTIX" symbolic-ref HEAD "refs/conversations/$(cat "$W/head")"
