"""lib_cdp.py -- drive headless Chromium through the Chrome DevTools
Protocol, for t8103: a minimal WebSocket client (RFC 6455, client side,
text frames) written with the standard library only.

    from lib_cdp import Browser
    b = Browser(trash_dir)            # starts chromium --headless
    b.navigate("http://127.0.0.1:PORT/#token=...")
    v = b.eval("document.title")      # Runtime.evaluate, by value
    b.wait_for("document.body.dataset.graph === 'ready'")
    b.viewport(1400, 757)             # the page's size, CSS pixels
    b.click("#fork")                  # a mouse click where the element is
    b.screenshot("page.png")
    b.close()

Every wait is bounded (TIMEOUT seconds).
"""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import urllib.request

TIMEOUT = float(os.environ.get("CDP_TIMEOUT", "20"))


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, port, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise IOError("the WebSocket handshake failed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise IOError("the WebSocket handshake failed: %r" % head)

    def _recv_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise IOError("the WebSocket closed")
            data += chunk
        return data

    def send(self, text):
        payload = text.encode()
        head = bytes([0x81])               # FIN, text
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            mask = self._recv_exact(4) if b1 & 0x80 else None
            data = self._recv_exact(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 8:
                raise IOError("the WebSocket closed")
            if op in (9, 10):              # ping, pong: ignored
                continue
            message += data
            if b0 & 0x80:
                return message.decode()


class Browser:
    def __init__(self, trash, width=1280, height=800):
        exe = find_chromium()
        self.profile = os.path.join(trash, "chromium-profile")
        self.log = open(os.path.join(trash, "chromium.log"), "ab")
        # a browser started before in this profile left its port here
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--disable-sync", "--disable-dev-shm-usage",
             "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0",
             "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=self.log, stderr=self.log)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + TIMEOUT
        while not (os.path.exists(port_file) and
                   open(port_file).read().strip()):
            if time.time() > deadline or self.proc.poll() is not None:
                raise IOError("chromium did not start (see chromium.log)")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        targets = []
        while not targets:
            with urllib.request.urlopen(
                    "http://127.0.0.1:%d/json/list" % port,
                    timeout=TIMEOUT) as r:
                targets = [t for t in json.load(r) if t["type"] == "page"]
            if not targets:
                time.sleep(0.1)
        self.ws = WebSocket(targets[0]["webSocketDebuggerUrl"])
        self.next_id = 1
        self.events = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method, **params):
        mid = self.next_id
        self.next_id += 1
        self.ws.send(json.dumps({"id": mid, "method": method,
                                 "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise IOError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise IOError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while True:
            try:
                if self.eval(expr):
                    return
            except IOError:
                pass
            if time.time() > deadline:
                raise IOError("timed out waiting for: " + expr)
            time.sleep(0.05)

    def viewport(self, width, height, mobile=False):
        """Make the page's viewport width x height CSS pixels."""
        self.call("Emulation.setDeviceMetricsOverride", width=width,
                  height=height, deviceScaleFactor=1, mobile=mobile)

    def click(self, selector):
        """Click the middle of the element, as a mouse does."""
        r = self.eval("(() => { const e = document.querySelector(%s);"
                      " const r = e.getBoundingClientRect();"
                      " return [r.left + r.width / 2, r.top + r.height / 2];"
                      " })()" % json.dumps(selector))
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=r[0], y=r[1],
                      button="left", clickCount=1)

    def type_text(self, text):
        """Type into the focused element."""
        self.call("Input.insertText", text=text)

    def console_errors(self):
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(e["params"]["exceptionDetails"])
            if (e.get("method") == "Runtime.consoleAPICalled" and
                    e["params"]["type"] == "error"):
                out.append(e["params"]["args"])
        return out

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close")
        except IOError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
