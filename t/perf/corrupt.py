#!/usr/bin/env python3
"""t/perf/corrupt.py - a corruption campaign against a store.

    t/perf/corrupt.py [--trials N] [--seed S] [--aptix PATH] [--keep DIR]

Builds a store (t/perf/build-store.sh: 8 conversations, 300 sessions),
then runs N trials (default 240). Each trial copies the store, damages
its data.mdb one way, and runs, in order:

    aptix status; aptix log --all; aptix fsck --full; aptix reindex;
    aptix salvage <new-dir>   (when the binary has that command)

The damage kinds, in turn:

    truncate   the file cut at a random offset
    truncpage  the file cut at a random page boundary
    bytes      1 to 4 runs of 1 to 8 random bytes at random offsets
    page       one random page (not a meta page) overwritten with noise
    zero       one random page (not a meta page) zeroed
    meta       1 to 4 random bytes of page 0 or page 1 changed

A command that dies by a signal (SIGSEGV, SIGBUS, SIGABRT, ...) is a
failure of the campaign; one that runs for more than 60 s is a hang.
An exit code is not judged (damage may well be reported as an error,
or not be noticed at all). The summary gives, per command and per kind,
the runs, the signal deaths and the hangs, and it counts the trials
where fsck --full passed a store that reindex then failed on (damage
fsck missed); the exit status is 1 when
there was any signal death or hang. Not part of make check (it runs
for minutes).
"""
import argparse
import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("truncate", "truncpage", "bytes", "page", "zero", "meta")
PAGE = 4096


def damage(path, kind, rng):
    size = os.path.getsize(path)
    pages = size // PAGE
    desc = kind
    with open(path, "r+b") as f:
        if kind == "truncate":
            n = rng.randrange(0, size)
            f.truncate(n)
            desc += " %d" % n
        elif kind == "truncpage":
            n = rng.randrange(0, pages) * PAGE
            f.truncate(n)
            desc += " %d" % n
        elif kind == "bytes":
            for _ in range(rng.randint(1, 4)):
                off = rng.randrange(0, size)
                n = rng.randint(1, 8)
                f.seek(off)
                f.write(bytes(rng.getrandbits(8) for _ in range(n)))
                desc += " %d+%d" % (off, n)
        elif kind in ("page", "zero"):
            p = rng.randrange(2, pages)
            f.seek(p * PAGE)
            if kind == "zero":
                f.write(bytes(PAGE))
            else:
                f.write(bytes(rng.getrandbits(8) for _ in range(PAGE)))
            desc += " %d" % p
        elif kind == "meta":
            p = rng.randrange(0, 2)
            for _ in range(rng.randint(1, 4)):
                off = p * PAGE + rng.randrange(0, 160)
                f.seek(off)
                old = f.read(1)[0]
                f.seek(off)
                f.write(bytes([old ^ (1 << rng.randrange(8))]))
                desc += " %d" % off
    return desc


def has_salvage(aptix):
    r = subprocess.run([aptix, "salvage", "-h"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 129


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=240)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--aptix", default=os.path.join(HERE, "..", "..",
                                                     "aptix"))
    ap.add_argument("--keep", help="copy the stores of failed trials here")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    aptix = os.path.abspath(a.aptix)
    rng = random.Random(a.seed)
    w = tempfile.mkdtemp(prefix="aptix-corrupt.")
    try:
        base = os.path.join(w, "base")
        os.mkdir(base)
        env = dict(os.environ, APTIX=aptix)
        subprocess.run(["sh", os.path.join(HERE, "build-store.sh"), "8",
                        "300", base], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        cmds = [["status"], ["log", "--all", "--oneline"],
                ["fsck", "--full"], ["reindex"]]
        if has_salvage(aptix):
            cmds.append(["salvage", "SALVAGE"])
        runs = collections.Counter()
        deaths = collections.Counter()
        hangs = collections.Counter()
        bad = []
        missed = []     # fsck --full said 0, reindex then failed
        env = dict(os.environ, APTIX_PAGER="cat", PAGER="cat")
        env.pop("APTIX_DIR", None)
        for t in range(a.trials):
            kind = KINDS[t % len(KINDS)]
            d = os.path.join(w, "t")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d, symlinks=True)
            desc = damage(os.path.join(d, ".aptix", "data.mdb"), kind, rng)
            shutil.copy(os.path.join(d, ".aptix", "data.mdb"),
                        os.path.join(w, "damaged.mdb"))
            rcs = {}
            for c in cmds:
                argv = [aptix] + [x if x != "SALVAGE" else
                                  os.path.join(w, "salvaged")
                                  for x in c]
                shutil.rmtree(os.path.join(w, "salvaged"),
                              ignore_errors=True)
                name = c[0]
                runs[name, kind] += 1
                try:
                    r = subprocess.run(argv, cwd=d, env=env,
                                       stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, timeout=60)
                    rc = r.returncode
                    rcs[name] = rc
                except subprocess.TimeoutExpired:
                    hangs[name, kind] += 1
                    bad.append((t, desc, name, "hang"))
                    continue
                if rc < 0:
                    deaths[name, kind] += 1
                    bad.append((t, desc, name,
                                signal.Signals(-rc).name))
                    if a.keep:
                        os.makedirs(a.keep, exist_ok=True)
                        shutil.copy(os.path.join(w, "damaged.mdb"),
                                    os.path.join(a.keep,
                                                 "trial-%d.mdb" % t))
                elif a.verbose:
                    sys.stderr.write("trial %d %s: %s %d %s\n" % (
                        t, desc, name, rc,
                        r.stderr.decode(errors="replace")
                        .strip().split("\n")[-1][:100]))
            if rcs.get("fsck") == 0 and rcs.get("reindex", 0) != 0:
                missed.append((t, desc))
        print("trials: %d (seed %d)" % (a.trials, a.seed))
        print("%-10s %s" % ("command", " ".join("%10s" % k for k in KINDS)
                            + "      total"))
        for c in cmds:
            n = c[0]
            cells = ["%4d/%-5d" % (deaths[n, k] + hangs[n, k], runs[n, k])
                     for k in KINDS]
            tot = sum(deaths[n, k] + hangs[n, k] for k in KINDS)
            print("%-10s %s %6d/%d" % (n, " ".join("%10s" % x
                                                    for x in cells),
                                       tot, sum(runs[n, k] for k in KINDS)))
        nd = sum(deaths.values())
        nh = sum(hangs.values())
        trials_bad = len(set(b[0] for b in bad))
        print("signal deaths: %d, hangs: %d, trials with either: %d of %d"
              % (nd, nh, trials_bad, a.trials))
        for b in bad:
            print("  trial %d (%s): %s %s" % b)
        print("fsck --full passed, reindex failed: %d" % len(missed))
        for m in missed:
            print("  trial %d (%s)" % m)
        return 1 if bad else 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
