#!/usr/bin/env python3
# t/perf/mem.py [--head N] DIR COMMAND...: the memory of one process,
# split. Runs COMMAND (no shell) in DIR, its stdout read and thrown away
# (with --head N: closed after N lines, as `| head -N` does), and
# samples /proc/PID/status every 2 ms. Prints one line (sizes in KB):
#	<max RSS> <peak RssAnon> <peak RssFile> <user s> <system s> <exit>
# (CPU and max RSS include the children it waited for, as xargs's).
# Max RSS (getrusage) counts the file pages an LMDB store's reads map
# (the page cache, given back under pressure); RssAnon is the process's
# own memory (heap, stacks, dirty pages of a write transaction). A
# sample can miss a peak shorter than 2 ms; these are peaks of commands
# that run for seconds.
import resource, subprocess, sys, time

args = sys.argv[1:]
head = None
if args and args[0] == '--head':
    head, args = int(args[1]), args[2:]
d, cmd = args[0], args[1:]
p = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
anon = filep = 0
lines = 0
import os, fcntl
fcntl.fcntl(p.stdout, fcntl.F_SETFL,
            fcntl.fcntl(p.stdout, fcntl.F_GETFL) | os.O_NONBLOCK)


def sample():
    global anon, filep
    try:
        with open('/proc/%d/status' % p.pid) as f:
            for l in f:
                if l.startswith('RssAnon:'):
                    anon = max(anon, int(l.split()[1]))
                elif l.startswith('RssFile:'):
                    filep = max(filep, int(l.split()[1]))
    except (OSError, ValueError):
        pass


while p.poll() is None:
    sample()
    if p.stdout is not None:
        try:
            b = p.stdout.read(1 << 16)
        except BlockingIOError:
            b = None
        if b and head is not None:
            lines += b.count(b'\n')
            if lines >= head:
                p.stdout.close()
                p.stdout = None
        if b:
            continue
    time.sleep(0.002)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print('%d %d %d %.2f %.2f %d' % (ru.ru_maxrss, anon, filep, ru.ru_utime,
                                 ru.ru_stime, p.returncode))
