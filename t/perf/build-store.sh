#!/bin/sh
# build-store.sh [--git GITDIR] N_CONVS N_SESSIONS DIR: a synthetic aptix
# store for timing history commands (aptix log, sessions, ...), and with
# --git an equivalent git repository for comparison.
#
# N_SESSIONS sessions in N_CONVS conversations, in time order: a few
# conversations are active at once; a new one is a fork of a session of
# a recent conversation one time in three, else a new root; about 2% of
# the turns fail (a failed snapshot, no ref moves). Every conversation
# ref points at its last committed session; HEAD at the last one
# started. Deterministic (seeded). Objects go in with plumbing only
# (hash-object --stdin-paths, one process per type; update-ref --stdin,
# symbolic-ref).
#
# --git GITDIR: the same history, generated from the same description,
# as a sha256 git repository built with git fast-import: one commit per
# session (message: the instruction, date: the session's), one branch
# per conversation (refs/heads/<conversation>), the failed sessions
# reachable through refs/failed/<n> (aptix log --all shows them too),
# refs packed, HEAD on the last conversation started, a commit-graph
# file written.
#
# Everything is built in a scratch directory on tmpfs (/dev/shm when
# writable, else $TMPDIR; BUILD_SCRATCH=<dir> chooses one, for a store
# larger than /dev/shm holds: a 1M-session store takes 1.4 GB and
# its git twin 0.4 GB, with the build's own files beside them) and copied to DIR and GITDIR at the end, so
# that durable commits cost nothing while building. DIR/.aptix and
# GITDIR must not exist yet.
#
#	t/perf/build-store.sh 1000 100000 /tmp/store
#	cd /tmp/store && time aptix log --graph --all >/dev/null
set -eu
GITDIR=
if test $# -ge 2 && test "$1" = --git
then
	GITDIR=$2
	shift 2
fi
if test $# -ne 3
then
	echo "usage: $0 [--git GITDIR] N_CONVS N_SESSIONS DIR" >&2
	exit 129
fi
# DIR and GITDIR as absolute paths: the script changes directory
abspath () {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s/%s\n' "$(pwd)" "$1" ;;
	esac
}
DIR=$(abspath "$3")
GITDIR=${GITDIR:+$(abspath "$GITDIR")}
APTIX=${APTIX:-$(cd "$(dirname "$0")/../.." && pwd)/aptix}
test -x "$APTIX" || APTIX=aptix
for d in "$DIR/.aptix" ${GITDIR:+"$GITDIR"}
do
	if test -e "$d"
	then
		echo "$0: $d exists already" >&2
		exit 128
	fi
done
scratch=${TMPDIR:-/tmp}
test -d /dev/shm && test -w /dev/shm && scratch=/dev/shm
scratch=${BUILD_SCRATCH:-$scratch}
W=$(mktemp -d "$scratch/aptix-store.XXXXXX")
trap 'rm -rf "$W"' EXIT
"$APTIX" init -q "$W/store"
python3 - "$1" "$2" "$W" "${GITDIR:+yes}" <<'PY'
import hashlib, json, os, random, sys

nconvs, nsess, w, want_git = (int(sys.argv[1]), int(sys.argv[2]),
                              sys.argv[3], sys.argv[4] == "yes")
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
fi = open(os.path.join(w, "fast-import"), "wb") if want_git else None
nfile = [0]


def store(kind, data):
    nfile[0] += 1
    d = os.path.join(w, "o%d" % (nfile[0] // 1000))
    if nfile[0] == 1 or nfile[0] % 1000 == 0:
        os.mkdir(d)
    p = os.path.join(d, "%d" % nfile[0])
    with open(p, "wb") as f:
        f.write(data)
    paths[kind].write(p + "\n")
    return oid(kind, data)


per_conv = max(1, nsess // max(1, nconvs))
# heads: conversation -> (session id, git mark, turn seq) of its last
# committed session, or of the session it was forked from before its
# first one; a turn's seq is its parent's + 1, across a fork too, as
# aptix numbers them
heads, started, active, history = {}, [], [], []
nfailed = 0
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
        heads[conv] = parent
    else:
        conv = rng.choice(active)
        parent = heads[conv]
    text = "%s the %s (#%d)\n\nDetails of turn %d.\n" % (
        rng.choice(words).capitalize(), rng.choice(words), i, i)
    blob = store("blob", text.encode())
    seq = heads[conv][2] + 1 if heads[conv] else 1
    failed = heads[conv] is not None and rng.random() < 0.02
    turn = store("turn", canon({
        "conversation": conv, "created_at": t, "instruction": blob,
        "seq": seq, "status": "failed" if failed else "completed",
        "status_at": t, "usage": ut, "v": 1}))
    s = {"conversation": conv, "created_at": t,
         "metadata": {"session_type": "agent"},
         "run_summary": {"duration_ms": 0, "usage": us},
         "status": "failed" if failed else "committed", "turn": turn,
         "v": 1}
    if parent:
        s["parent"] = parent[0]
    sid = store("session", canon(s))
    if fi:
        msg = text.encode()
        if failed:
            nfailed += 1
            ref = "refs/failed/%d" % nfailed
        else:
            ref = "refs/heads/" + conv
        fi.write(b"commit %s\nmark :%d\n"
                 b"committer Bench <bench@example.com> %d +0000\n"
                 b"data %d\n%s" % (ref.encode(), i + 1, t // 1000,
                                   len(msg), msg))
        if parent:
            fi.write(b"from :%d\n" % parent[1])
        fi.write(b"\n")
    if not failed:
        heads[conv] = (sid, i + 1, seq)
        history.append(heads[conv])
for f in paths.values():
    f.close()
if fi:
    fi.close()
with open(os.path.join(w, "refs"), "w") as f:
    for conv in started:
        if heads[conv]:
            f.write("update refs/conversations/%s %s\n" % (conv, heads[conv][0]))
with open(os.path.join(w, "head"), "w") as f:
    f.write(started[-1])
PY
conv=$(cat "$W/head")
if test -n "$GITDIR"
then
	# in parallel with the aptix import: the machine has cores to spare
	(
		git init -q --object-format=sha256 "$W/git" &&
		cd "$W/git" &&
		git fast-import --quiet <"$W/fast-import" &&
		git symbolic-ref HEAD "refs/heads/$conv" &&
		git pack-refs --all &&
		git commit-graph write --reachable --no-progress
	) >"$W/git.log" 2>&1 &
	gitpid=$!
fi
cd "$W/store"
for type in blob turn session
do
	"$APTIX" hash-object -w -t $type --stdin-paths <"$W/$type" >/dev/null
done
"$APTIX" update-ref --stdin <"$W/refs"
"$APTIX" symbolic-ref HEAD "refs/conversations/$conv"
cd /
if test -n "$GITDIR"
then
	if ! wait "$gitpid"
	then
		cat "$W/git.log" >&2
		exit 128
	fi
	mkdir -p "$(dirname "$GITDIR")"
	cp -Rp "$W/git" "$GITDIR"
fi
mkdir -p "$DIR"
cp -Rp "$W/store/.aptix" "$DIR/.aptix"
