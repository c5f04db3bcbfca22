#!/usr/bin/env python3
"""A seeded corpus of Codex and Claude Code transcripts, for t/perf/import.sh.

usage: gen-transcripts.py <fixtures/import> <out> <megabytes> [<seed>]

Each session is one of the real files of the fixtures (Codex 0.169 and
0.171 rollouts, Claude Code 2.1.328 transcripts with their subagent),
record for record, with its own ids (every UUID of the file replaced, so
each session is new to the store), its own times (moved by a random
offset, milliseconds kept), and its own text: every instruction, answer,
reasoning, tool output and message text is replaced by text drawn from
a seeded pool of prose, code and shell output, of a length drawn from a
long-tailed distribution (most a few hundred bytes, some tool outputs
tens of KB), so that the store cannot deduplicate one session against
another as it would exact copies. The same seed gives the same corpus.
Sessions are written until the corpus holds <megabytes> MB of .jsonl.
"""
import json
import os
import random
import re
import sys

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                  r"[0-9a-f]{12}")
TIME = re.compile(r"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z")
# the keys whose strings are what people and models wrote
CONTENT = {"text", "content", "output", "message", "last_agent_message",
           "thinking", "stdout", "stderr", "aggregated_output",
           "formatted_output", "body"}

WORDS = ("the a to of and in is that for it with as on this be are by "
         "file function return value error test build commit branch "
         "parser buffer struct pointer memory index query request "
         "response model token session import export store object "
         "config option command output input line column cache thread "
         "lock write read open close check fix update refactor add "
         "remove rename move call result status exit code main README "
         "Makefile src lib include tests docs we should could would "
         "because when then first next after before so also only "
         "which where there here not yes no maybe really quite").split()
CODE = ["static int %s(struct %s *p, size_t n)\n{\n\tint r = 0;\n",
        "\tif (!p || n == 0)\n\t\treturn -1;\n",
        "\tfor (i = 0; i < n; i++)\n\t\tr += p->v[i];\n",
        "def %s(self, %s):\n    return self.%s\n",
        "$ make -j2 %s\n", "  CC src/%s.o\n", "  LINK %s\n",
        "%s.c:%d:%d: warning: unused variable '%s'\n",
        "ok %d - %s %s\n", "not ok %d - %s\n",
        "diff --git a/%s.c b/%s.c\n", "@@ -%d,%d +%d,%d @@\n",
        "-\told = %s;\n", "+\tnew = %s(%s);\n"]


def pool(rnd, size):
    """A few MB of mixed prose, code and tool output."""
    out, n = [], 0
    while n < size:
        kind = rnd.random()
        if kind < 0.55:
            s = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(8, 40)))
            s = s[0].upper() + s[1:] + ".\n" if s else s
        else:
            t = rnd.choice(CODE)
            args = tuple(rnd.choice(WORDS) if c == "s" else rnd.randint(1, 999)
                         for c in re.findall(r"%([sd])", t))
            s = t % args
        out.append(s)
        n += len(s)
    return "".join(out)


def length(rnd):
    """Bytes of one text: long-tailed (median ~350, a few of 20 KB+)."""
    return min(int(rnd.lognormvariate(5.9, 1.3)) + 8, 200000)


def text(rnd, p):
    n = length(rnd)
    at = rnd.randrange(0, len(p) - n - 1) if len(p) > n + 1 else 0
    return p[at:at + n]


def rewrite(v, rnd, p, key=None):
    if isinstance(v, dict):
        return {k: rewrite(x, rnd, p, k) for k, x in v.items()}
    if isinstance(v, list):
        return [rewrite(x, rnd, p, key) for x in v]
    if isinstance(v, str) and key in CONTENT and len(v) >= 8 \
            and not UUID.fullmatch(v):
        return text(rnd, p)
    return v


def templates(fix):
    out = []
    for sub in ("codex-0.169", "codex-0.171-toolcall",
                "claude-code-2.1.328/projects/-home-user-proj"):
        base = os.path.join(fix, sub)
        kind = sub.split("-")[0]
        for root, _, files in sorted(os.walk(base)):
            for f in sorted(files):
                if f.endswith(".jsonl") or f.endswith(".meta.json"):
                    path = os.path.join(root, f)
                    out.append((kind, os.path.relpath(path, base),
                                open(path).read()))
    return out


def session(rnd, p, n, tmpl, out):
    """One copy of every template, as session n; its .jsonl bytes."""
    ids = {}
    shift = rnd.randint(0, 86400 * 300)

    def new_id(m):
        old = m.group(0)
        if old not in ids:
            ids[old] = "%08x-%04x-%04x-%04x-%012x" % (
                rnd.getrandbits(32), rnd.getrandbits(16),
                0x7000 | rnd.getrandbits(12), 0x8000 | rnd.getrandbits(14),
                rnd.getrandbits(48))
        return ids[old]

    def new_time(m):
        import datetime
        t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
        t -= datetime.timedelta(seconds=shift)
        return t.strftime("%Y-%m-%dT%H:%M:%S") + "." + m.group(2) + "Z"

    size = 0
    for kind, rel, body in tmpl:
        # a subagent's id (its file's name) is the session's own too
        path = os.path.join(out, kind, "s%05d" % (n // 500),
                            re.sub(r"agent-[0-9a-f]{17}",
                                   "agent-%017x" % n, UUID.sub(new_id, rel)))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lines = []
        for line in body.splitlines():
            if rel.endswith(".jsonl"):
                rec = rewrite(json.loads(line), rnd, p)
                line = json.dumps(rec, ensure_ascii=False,
                                  separators=(",", ":"))
            lines.append(TIME.sub(new_time, UUID.sub(new_id, line)))
        data = "\n".join(lines) + "\n"
        with open(path, "w") as f:
            f.write(data)
        if rel.endswith(".jsonl"):
            size += len(data.encode("utf-8"))
    return size


def main():
    fix, out, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rnd = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 25)
    p = pool(rnd, 8 << 20)
    tmpl = templates(fix)
    total, n = 0, 0
    while total < mb * 1048576:
        total += session(rnd, p, n, tmpl, out)
        n += 1
    print("%d sessions, %d bytes of .jsonl" % (n, total))


main()
