"""lib_jsonrpc.py -- a small JSON-RPC 2.0 client of `aptix app-server`
for the shell tests (t8101), over a pipe, standard library only.

    from lib_jsonrpc import AppServer
    srv = AppServer()                      # runs `aptix app-server`
    r = srv.request("thread/list", {})     # the response (a dict)
    srv.send_raw("not json")               # any bytes, then a newline
    m = srv.next_message()                 # the next line, as a dict
    n = srv.wait_notification("turn/completed")
    srv.close()                            # end of input, then wait

Every message read is kept in srv.seen; notifications that arrive while
a response is awaited are queued for wait_notification(). Every wait
has a timeout (TIMEOUT seconds): a server that hangs fails the test
instead of hanging it.
"""
import json
import os
import queue
import subprocess
import sys
import threading

TIMEOUT = float(os.environ.get("JSONRPC_TIMEOUT", "20"))


class Timeout(Exception):
    pass


class AppServer:
    def __init__(self, args=(), env=None, command="app-server"):
        self.proc = subprocess.Popen(
            ["aptix", command] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(command + ".err", "ab"), env=env)
        self.lines = queue.Queue()
        self.pending = []          # messages read but not yet consumed
        self.seen = []
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj))

    def _get(self):
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise Timeout("no message within %s s" % TIMEOUT)
        if line is None:
            raise EOFError("the server closed its output")
        msg = json.loads(line)
        self.seen.append(msg)
        return msg

    def next_message(self):
        if self.pending:
            return self.pending.pop(0)
        return self._get()

    def wait_for(self, pred):
        for i, m in enumerate(self.pending):
            if pred(m):
                return self.pending.pop(i)
        while True:
            m = self._get()
            if pred(m):
                return m
            self.pending.append(m)

    def response(self, rid):
        return self.wait_for(lambda m: "method" not in m and
                             m.get("id") == rid)

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.response(rid)

    def wait_notification(self, method, pred=lambda m: True):
        return self.wait_for(lambda m: m.get("method") == method and
                             pred(m))

    def close(self, timeout=TIMEOUT):
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)


def check(cond, what):
    if not cond:
        sys.stderr.write("check failed: %r\n" % (what,))
        sys.exit(1)
