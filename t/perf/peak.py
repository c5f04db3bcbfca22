#!/usr/bin/env python3
"""t/perf/peak.py OUT COMMAND...: run COMMAND (its stdout and stderr to
/dev/null), sampling its /proc/PID/status every 20 ms, and write to OUT
one line: "<user s> <system s> <peak RSS KB> <peak RssAnon KB> <exit>".

The peak RSS (the kernel's, from wait4) counts the file pages of the
store mapped while reading it; RssAnon is the memory the process itself
allocated, which is what must stay flat as the corpus grows. A sample
every 20 ms can miss a peak shorter than that."""
import os
import sys
import time


def anon_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    out, argv = sys.argv[1], sys.argv[2:]
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execvp(argv[0], argv)
    peak = 0
    while True:
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            break
        peak = max(peak, anon_kb(pid))
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        f.write("%.2f %.2f %d %d %d\n" % (ru.ru_utime, ru.ru_stime,
                                          ru.ru_maxrss, peak, code))


main()
