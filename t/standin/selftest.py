#!/usr/bin/env python3
"""Self-test for openai_standin.py.  Prints TAP; exit status 0 when all pass.

    python3 t/standin/selftest.py [-v]

Starts the stand-in as subprocesses (port file in a temp dir), exercises every
endpoint and every fault kind over real sockets (http.client for plain
requests, a raw socket reader for SSE/chunked streams), then stops them.
"""

import base64
import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "openai_standin.py")
API_KEY = "sk-test-selftest-0123456789"
QKEY = "qdrant-selftest-key"
VERBOSE = "-v" in sys.argv
ID_RE = re.compile(r"^resp_[0-9a-f]{48}$")
MSG_RE = re.compile(r"^msg_[0-9a-f]{48}$")
UUIDS = ["6f0d5a8e-1c2b-4d3e-8f9a-0b1c2d3e4f50", "0a6c1f4e-9b8d-4e2f-a1b3-c5d7e9f1a2b4",
         "f47ac10b-58cc-4372-a567-0e02b2c3d479"]


# --------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------

class Srv(object):
    def __init__(self, name, tmp, extra=(), state=None, logdir=None):
        self.name = name
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port_file = os.path.join(self.dir, "port")
        self.log_dir = logdir or os.path.join(self.dir, "logs")
        self.state = state
        self.extra = list(extra)
        self.stderr_path = os.path.join(self.dir, "stderr.txt")
        self.proc = None
        self.port = None

    def start(self):
        cmd = [sys.executable, SERVER, "--port-file", self.port_file, "--log-dir", self.log_dir]
        if self.state:
            cmd += ["--state", self.state]
        cmd += self.extra
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.time() + 15
        while time.time() < deadline:
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    txt = f.read()
                if txt.endswith("\n"):
                    self.port = int(txt.strip())
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError("server %s exited early rc=%s" % (self.name, self.proc.returncode))
            time.sleep(0.05)
        raise RuntimeError("server %s did not write its port file" % self.name)

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            rc = "killed(%s)" % rc
        self.stderr.close()
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Resp(object):
    def __init__(self, status, headers, data):
        self.status = status
        self.headers = headers
        self.data = data
        try:
            self.json = json.loads(data.decode("utf-8"))
        except Exception:
            self.json = None

    def __repr__(self):
        return "<Resp %s %r>" % (self.status, self.data[:300])


def hreq(srv, method, path, body=None, headers=None, timeout=10, auth=True, raw=None):
    hdrs = {}
    if auth is True:
        if path.startswith("/v1"):
            hdrs["Authorization"] = "Bearer " + API_KEY
        elif not path.startswith("/__control"):
            hdrs["api-key"] = QKEY
    elif isinstance(auth, dict):
        hdrs.update(auth)
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        out = r.read()
        return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, out)
    finally:
        conn.close()


def ctl(srv, body=None):
    if body is None:
        r = hreq(srv, "GET", "/__control")
    else:
        r = hreq(srv, "POST", "/__control", body)
    assert r.status == 200, r
    return r.json


def raw_http(srv, method, path, body=b"", headers=None, timeout=10):
    """Send one request over a raw socket and read until EOF; decode chunked
    transfer by hand so truncated streams are visible."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    hdr = {"Host": "127.0.0.1:%d" % srv.port, "Content-Length": str(len(body)),
           "Connection": "close", "Content-Type": "application/json"}
    hdr.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in hdr.items())
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    s.sendall(head.encode() + b"\r\n" + body)
    buf, err, t0 = b"", None, time.time()
    arrivals = []
    while True:
        try:
            d = s.recv(65536)
        except socket.timeout:
            err = "timeout"
            break
        except ConnectionResetError:
            err = "reset"
            break
        if not d:
            break
        arrivals.append((time.time() - t0, len(d)))
        buf += d
    s.close()
    res = {"raw": buf, "err": err, "status": None, "headers": {}, "body": b"",
           "complete": False, "elapsed": time.time() - t0, "arrivals": arrivals}
    if b"\r\n\r\n" not in buf:
        return res
    headpart, rest = buf.split(b"\r\n\r\n", 1)
    lines = headpart.decode("latin-1").split("\r\n")
    res["status"] = int(lines[0].split()[1])
    res["headers"] = {k.strip().lower(): v.strip() for k, v in
                      (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
    if res["headers"].get("transfer-encoding", "").lower() == "chunked":
        body, pos = b"", 0
        while True:
            i = rest.find(b"\r\n", pos)
            if i < 0:
                break
            size = int(rest[pos:i].split(b";")[0], 16)
            if size == 0:
                res["complete"] = True
                break
            chunk = rest[i + 2:i + 2 + size]
            body += chunk
            if len(chunk) < size:
                break
            pos = i + 2 + size + 2
        res["body"] = body
    else:
        res["body"] = rest
        res["complete"] = len(rest) == int(res["headers"].get("content-length", len(rest)))
    return res


def parse_sse(body):
    events = []
    for block in body.decode("utf-8", "replace").split("\n\n"):
        if not block.strip():
            continue
        ev, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                ev = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
        d = "\n".join(data)
        try:
            obj = json.loads(d)
        except ValueError:
            obj = None
        events.append({"event": ev, "data": d, "json": obj})
    return events


def sse(srv, body, timeout=15):
    body = dict(body, stream=True)
    r = raw_http(srv, "POST", "/v1/responses", body,
                 {"Authorization": "Bearer " + API_KEY, "Accept": "text/event-stream"}, timeout)
    r["events"] = parse_sse(r["body"]) if r["status"] == 200 else []
    assert r["err"] is None, "stream read ended with %s (server kept the connection open?)" % r["err"]
    return r


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) *
                                                math.sqrt(sum(y * y for y in b)))


def eq(a, b, what=""):
    assert a == b, "%s: expected %r, got %r" % (what, b, a)


def err_shape(r, status, code=None, param=None, etype="invalid_request_error"):
    eq(r.status, status, "status")
    assert r.json and set(r.json) == {"error"}, r
    e = r.json["error"]
    eq(set(e), {"message", "type", "param", "code"}, "error keys")
    assert isinstance(e["message"], str) and e["message"], e
    eq(e["type"], etype, "error.type")
    eq(e["code"], code, "error.code")
    eq(e["param"], param, "error.param")
    return e


def create(srv, body, **kw):
    b = {"model": "gpt-4o-mini"}
    b.update(body)
    return hreq(srv, "POST", "/v1/responses", b, **kw)


def embed(srv, texts, **extra):
    b = {"model": "text-embedding-3-small", "input": texts}
    b.update(extra)
    r = hreq(srv, "POST", "/v1/embeddings", b)
    assert r.status == 200, r
    return [d["embedding"] for d in r.json["data"]]


def expect_no_response(fn):
    try:
        r = fn()
    except (http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine,
            BrokenPipeError) as e:
        return e
    raise AssertionError("expected the connection to be closed without a response, got %r" % (r,))


def q(srv, method, path, body=None, **kw):
    return hreq(srv, method, path, body, **kw)


def q_ok(r):
    assert r.status == 200, r
    assert set(r.json) >= {"result", "status", "time"}, r
    eq(r.json["status"], "ok", "qdrant status")
    assert isinstance(r.json["time"], float), r.json
    return r.json["result"]


def q_err(r, status, msg=None):
    eq(r.status, status, "status")
    assert r.json and set(r.json) == {"status", "time"}, r
    assert set(r.json["status"]) == {"error"}, r
    if msg is not None:
        eq(r.json["status"]["error"], msg, "qdrant error")
    return r.json["status"]["error"]


# --------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------

TESTS = []
CTX = {}


def test(name):
    def deco(fn):
        TESTS.append((name, fn))
        return fn
    return deco


@test("server starts and writes its port file atomically")
def _():
    A = CTX["A"]
    with open(A.port_file) as f:
        assert re.match(r"^\d+\n$", f.read())
    assert not [n for n in os.listdir(A.dir) if ".tmp" in n], os.listdir(A.dir)
    assert 0 < A.port < 65536


@test("GET /v1/models returns a list")
def _():
    r = hreq(CTX["A"], "GET", "/v1/models")
    eq(r.status, 200)
    eq(r.json["object"], "list")
    assert any(m["id"] == "gpt-4o-mini" and m["object"] == "model" for m in r.json["data"])
    r = hreq(CTX["A"], "GET", "/v1/models/gpt-4o-mini")
    eq(r.json["id"], "gpt-4o-mini")
    err_shape(hreq(CTX["A"], "GET", "/v1/models/nope-model"), 404, "model_not_found", "model")


@test("missing Authorization -> 401 (real error shape)")
def _():
    r = create(CTX["A"], {"input": "hi"}, auth=False)
    e = err_shape(r, 401, None)
    assert e["message"].startswith("You didn't provide an API key"), e


@test("wrong API key -> 401 invalid_api_key, key masked")
def _():
    r = create(CTX["A"], {"input": "hi"}, auth={"Authorization": "Bearer sk-wrong-key-abcdef"})
    e = err_shape(r, 401, "invalid_api_key")
    assert e["message"].startswith("Incorrect API key provided: "), e
    assert "sk-wrong-key-abcdef" not in e["message"], e
    assert r.headers.get("x-request-id", "").startswith("req_"), r.headers


@test("invalid JSON body -> 400")
def _():
    r = hreq(CTX["A"], "POST", "/v1/responses", raw=b'{"model": "x", "input": ',
             headers={"Content-Type": "application/json"})
    e = err_shape(r, 400, None)
    assert "could not parse the JSON body" in e["message"], e
    r = hreq(CTX["A"], "POST", "/v1/responses", raw=b"[" * 100000,
             headers={"Content-Type": "application/json"})
    err_shape(r, 400, None)


@test("missing model / missing input / unknown parameter / bad role -> 400")
def _():
    A = CTX["A"]
    e = err_shape(hreq(A, "POST", "/v1/responses", {"input": "x"}), 400,
                  "missing_required_parameter", "model")
    eq(e["message"], "Missing required parameter: 'model'.")
    err_shape(create(A, {}), 400, "missing_required_parameter", "input")
    err_shape(create(A, {"input": 5}), 400, "invalid_type", "input")
    e = err_shape(create(A, {"input": "x", "bogus": 1}), 400, "unknown_parameter", "bogus")
    eq(e["message"], "Unknown parameter: 'bogus'.")
    err_shape(create(A, {"input": [{"role": "robot", "content": "x"}]}), 400, "invalid_value",
              "input[0].role")
    err_shape(create(A, {"input": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}),
              400, "invalid_value", "input[0].content[0].type")
    err_shape(create(A, {"input": "x", "temperature": 3}), 400, "decimal_above_max_value",
              "temperature")
    err_shape(create(A, {"input": "x", "previous_response_id": "bogus"}), 400, "invalid_value",
              "previous_response_id")


@test("non-streaming response has the real Response shape and deterministic answer")
def _():
    A = CTX["A"]
    n = ctl(A)["response_counter"] + 1
    r = create(A, {"input": "hello world", "temperature": 0.2})
    eq(r.status, 200)
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers.get("x-request-id", "").startswith("req_")
    o = r.json
    for k in ("id", "object", "created_at", "status", "model", "output", "previous_response_id",
              "usage", "instructions", "temperature", "store", "error", "incomplete_details",
              "text", "parallel_tool_calls", "tool_choice", "tools", "top_p", "metadata"):
        assert k in o, k
    assert ID_RE.match(o["id"]), o["id"]
    eq(o["object"], "response")
    assert isinstance(o["created_at"], int)
    eq(o["status"], "completed")
    eq(o["model"], "gpt-4o-mini")
    eq(o["temperature"], 0.2)
    eq(o["store"], True)
    eq(o["previous_response_id"], None)
    eq(o["error"], None)
    eq(o["text"]["format"], {"type": "text"})
    eq(o["tool_choice"], "auto")
    eq(o["tools"], [])
    eq(len(o["output"]), 1)
    msg = o["output"][0]
    eq((msg["type"], msg["status"], msg["role"]), ("message", "completed", "assistant"))
    assert MSG_RE.match(msg["id"]), msg["id"]
    eq(len(msg["content"]), 1)
    part = msg["content"][0]
    eq(part["type"], "output_text")
    eq(part["annotations"], [])
    text = "Answer #%d to: hello world (chain depth 1, context chars 11)" % n
    eq(part["text"], text)
    u = o["usage"]
    eq(u["input_tokens"], 3)
    eq(u["output_tokens"], math.ceil(len(text) / 4.0))
    eq(u["total_tokens"], u["input_tokens"] + u["output_tokens"])
    eq(u["input_tokens_details"], {"cached_tokens": 0})
    eq(u["output_tokens_details"], {"reasoning_tokens": 0})
    CTX["r1"] = o


@test("previous_response_id chains carry depth and context chars")
def _():
    A = CTX["A"]
    r1 = CTX["r1"]
    r2 = create(A, {"previous_response_id": r1["id"], "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "second question"}]}]})
    eq(r2.status, 200)
    eq(r2.json["previous_response_id"], r1["id"])
    t2 = r2.json["output"][0]["content"][0]["text"]
    assert t2.endswith("to: second question (chain depth 2, context chars 26)"), t2
    assert r2.json["usage"]["input_tokens"] > r1["usage"]["input_tokens"]
    r3 = create(A, {"previous_response_id": r2.json["id"], "instructions": "Be terse.",
                    "input": [{"type": "message", "role": "user", "content": "third"}]})
    eq(r3.status, 200)
    eq(r3.json["instructions"], "Be terse.")
    t3 = r3.json["output"][0]["content"][0]["text"]
    assert t3.endswith("to: third (chain depth 3, context chars 31)"), t3
    CTX["r3"] = r3.json


@test("stateless history array: last user text (first 60 chars) and summed user chars")
def _():
    long = "L" * 70 + " tail"
    r = create(CTX["A"], {"input": [
        {"role": "system", "content": "sys text"},
        {"role": "user", "content": "abc"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "reply"}]},
        {"role": "user", "content": [{"type": "input_text", "text": long}]}]})
    eq(r.status, 200)
    t = r.json["output"][0]["content"][0]["text"]
    assert ("to: %s (chain depth 1, context chars %d)" % (long[:60], 3 + len(long))) in t, t
    err_shape(create(CTX["A"], {"input": [
        {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]}),
        400, "invalid_value", "input[0].content[0].type")


@test("unknown previous_response_id -> 400 previous_response_not_found")
def _():
    bogus = "resp_" + "0" * 48
    e = err_shape(create(CTX["A"], {"input": "x", "previous_response_id": bogus}), 400,
                  "previous_response_not_found", "previous_response_id")
    eq(e["message"], "Previous response with id '%s' not found." % bogus)


@test("store:false responses cannot be chained or retrieved")
def _():
    A = CTX["A"]
    r = create(A, {"input": "ephemeral", "store": False})
    eq(r.status, 200)
    eq(r.json["store"], False)
    rid = r.json["id"]
    err_shape(create(A, {"input": "x", "previous_response_id": rid}), 400,
              "previous_response_not_found", "previous_response_id")
    err_shape(hreq(A, "GET", "/v1/responses/" + rid), 404, None)


@test("GET/DELETE /v1/responses/{id} and input_items")
def _():
    A = CTX["A"]
    r = create(A, {"input": "to be deleted"})
    rid = r.json["id"]
    g = hreq(A, "GET", "/v1/responses/" + rid)
    eq(g.status, 200)
    eq(g.json, r.json)
    items = hreq(A, "GET", "/v1/responses/%s/input_items" % rid)
    eq(items.json["object"], "list")
    eq(items.json["data"][0]["content"][0]["text"], "to be deleted")
    d = hreq(A, "DELETE", "/v1/responses/" + rid)
    eq(d.json, {"id": rid, "object": "response.deleted", "deleted": True})
    err_shape(hreq(A, "GET", "/v1/responses/" + rid), 404, None)


@test("max_output_tokens too small -> status incomplete")
def _():
    r = create(CTX["A"], {"input": "x" * 200, "max_output_tokens": 16})
    eq(r.status, 200)
    eq(r.json["status"], "incomplete")
    eq(r.json["incomplete_details"], {"reason": "max_output_tokens"})
    assert r.json["usage"]["output_tokens"] <= 16
    err_shape(create(CTX["A"], {"input": "x", "max_output_tokens": 5}), 400,
              "integer_below_min_value", "max_output_tokens")


EXPECTED_ORDER_HEAD = ["response.created", "response.in_progress", "response.output_item.added",
                       "response.content_part.added"]
EXPECTED_ORDER_TAIL = ["response.output_text.done", "response.content_part.done",
                       "response.output_item.done", "response.completed"]


def check_full_stream(r):
    eq(r["status"], 200, "stream status")
    assert r["headers"]["content-type"].startswith("text/event-stream"), r["headers"]
    eq(r["headers"].get("transfer-encoding"), "chunked")
    assert r["complete"], "stream not terminated cleanly"
    assert b"[DONE]" not in r["body"]
    evs = r["events"]
    names = [e["event"] for e in evs]
    eq(names[:4], EXPECTED_ORDER_HEAD, "stream head")
    eq(names[-4:], EXPECTED_ORDER_TAIL, "stream tail")
    deltas = names[4:-4]
    assert len(deltas) >= 3 and set(deltas) == {"response.output_text.delta"}, names
    for i, e in enumerate(evs):
        assert e["json"] is not None, e
        eq(e["json"]["type"], e["event"], "data.type == event")
        eq(e["json"]["sequence_number"], i, "sequence_number")
    created = evs[0]["json"]["response"]
    eq(created["status"], "in_progress")
    eq(created["output"], [])
    item_id = evs[2]["json"]["item"]["id"]
    eq(evs[2]["json"]["item"]["status"], "in_progress")
    text = ""
    for e in evs[4:-4]:
        j = e["json"]
        eq((j["item_id"], j["output_index"], j["content_index"]), (item_id, 0, 0), "delta ids")
        text += j["delta"]
    eq(evs[-4]["json"]["text"], text, "output_text.done text")
    eq(evs[-3]["json"]["part"]["text"], text, "content_part.done")
    eq(evs[-2]["json"]["item"]["content"][0]["text"], text, "output_item.done")
    final = evs[-1]["json"]["response"]
    eq(final["status"], "completed")
    eq(final["id"], created["id"])
    eq(final["output"][0]["content"][0]["text"], text)
    u = final["usage"]
    eq(u["total_tokens"], u["input_tokens"] + u["output_tokens"])
    return final, text


@test("streaming: real event order, sequence numbers, deltas, no [DONE]")
def _():
    r = sse(CTX["A"], {"model": "gpt-4o-mini", "input": "stream me please now"})
    final, text = check_full_stream(r)
    assert "to: stream me please now (chain depth 1, context chars 20)" in text, text
    CTX["s1"] = final


@test("streamed responses are stored and can be chained")
def _():
    r = sse(CTX["A"], {"model": "gpt-4o-mini", "input": "next",
                       "previous_response_id": CTX["s1"]["id"]})
    final, text = check_full_stream(r)
    assert text.endswith("(chain depth 2, context chars 24)"), text
    eq(final["previous_response_id"], CTX["s1"]["id"])


@test("request log files: naming, redaction, parsed body")
def _():
    A = CTX["A"]
    names = sorted(os.listdir(A.log_dir))
    assert names, "no logs"
    seqs = []
    for n in names:
        assert re.match(r"^\d{4}-[A-Z]+-[A-Za-z0-9._-]+\.json$", n), n
        seqs.append(int(n[:4]))
    eq(seqs, list(range(1, len(seqs) + 1)), "log sequence")
    assert not any("__control" in n for n in names), "control requests must not be logged"
    entries = []
    for n in names:
        with open(os.path.join(A.log_dir, n)) as f:
            txt = f.read()
        assert API_KEY not in txt, "API key leaked into %s" % n
        entries.append((n, json.loads(txt)))
    for n, e in entries:
        for k in ("method", "path", "query", "headers", "body"):
            assert k in e, (n, k)
    hits = [(n, e) for n, e in entries if e["path"] == "/v1/responses" and isinstance(e["body"], dict)
            and e["body"].get("input") == "hello world"]
    assert hits, "basic request not logged"
    n, e = hits[0]
    assert n.endswith("-POST-v1_responses.json"), n
    eq(e["method"], "POST")
    eq(e["headers"]["authorization"], "<redacted>")
    eq(e["auth"]["authorization_present"], True)
    eq(e["body"]["model"], "gpt-4o-mini")
    eq(e["response"]["status"], 200)
    noauth = [e for _, e in entries if e["path"] == "/v1/responses" and "authorization" not in e["headers"]]
    assert noauth and noauth[0]["response"]["status"] == 401
    bad = [e for _, e in entries if e["body"] == '{"model": "x", "input": ']
    assert bad, "invalid JSON body not logged as raw string"


TOOLS = [{"type": "function", "name": "shell", "description": "run a command",
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]


@test("tool calls: streamed function calls in the real order, parallel, many deltas")
def _():
    A = CTX["A"]
    args = '{"cmd": "echo one; ls -l /tmp"}'
    ctl(A, {"faults": [{"kind": "tool_calls", "delta_chars": 3, "calls": [
        {"name": "shell", "arguments": args, "call_id": "call_a"},
        {"name": "shell", "arguments": "{}", "call_id": "call_b"}]}]})
    r = sse(A, {"model": "gpt-4o-mini", "input": "run it", "tools": TOOLS})
    evs = [e["event"] for e in r["events"]]
    seq = [e["json"]["sequence_number"] for e in r["events"]]
    eq(seq, list(range(len(seq))), "sequence numbers")
    ndelta = (len(args) + 2) // 3
    want = (["response.created", "response.in_progress", "response.output_item.added"] +
            ["response.function_call_arguments.delta"] * ndelta +
            ["response.function_call_arguments.done", "response.output_item.done",
             "response.output_item.added", "response.function_call_arguments.delta",
             "response.function_call_arguments.done", "response.output_item.done",
             "response.completed"])
    eq(evs, want, "events")
    added = r["events"][2]["json"]
    eq(added["item"]["type"], "function_call")
    eq(added["item"]["arguments"], "")
    eq(added["item"]["status"], "in_progress")
    deltas = "".join(e["json"]["delta"] for e in r["events"]
                     if e["event"] == "response.function_call_arguments.delta"
                     and e["json"]["output_index"] == 0)
    eq(deltas, args, "deltas put together")
    done = r["events"][3 + ndelta]["json"]
    eq((done["arguments"], done["name"], done["output_index"]), (args, "shell", 0))
    final = r["events"][-1]["json"]["response"]
    eq([o["call_id"] for o in final["output"]], ["call_a", "call_b"])
    eq(final["status"], "completed")
    CTX["calls"] = final


@test("tool calls: every call needs its output, and an output its call")
def _():
    A = CTX["A"]
    prev = CTX["calls"]["id"]
    r = create(A, {"input": "and now?", "previous_response_id": prev})
    e = err_shape(r, 400, None, "input")
    eq(e["message"], "No tool output found for function call call_a.")
    out = [{"type": "function_call_output", "call_id": "call_a", "output": "one"}]
    r = create(A, {"input": out, "previous_response_id": prev})
    eq(err_shape(r, 400, None, "input")["message"],
       "No tool output found for function call call_b.")
    r = create(A, {"input": out + [{"type": "function_call_output", "call_id": "call_x",
                                    "output": "?"}], "previous_response_id": prev})
    eq(err_shape(r, 400, None, "input")["message"],
       "No tool call found for function call output with call_id call_x.")
    big = [{"type": "function_call_output", "call_id": "call_a",
            "output": "x" * 10485761}]
    r = create(A, {"input": big, "previous_response_id": prev})
    err_shape(r, 400, "string_above_max_length", "input[0].output")
    both = out + [{"type": "function_call_output", "call_id": "call_b", "output": "two"}]
    r = create(A, {"input": both, "previous_response_id": prev})
    eq(r.status, 200, "answered")
    text = r.json["output"][0]["content"][0]["text"]
    assert "to tool outputs: call_a=one; call_b=two (chain depth 2" in text, text
    # stateless: the calls re-sent with their outputs
    calls = [dict(type="function_call", call_id=c, name="shell", arguments="{}")
             for c in ("call_a", "call_b")]
    r = create(A, {"input": [{"role": "user", "content": "run it"}] + calls + both,
                   "store": False})
    eq(r.status, 200, "stateless")
    r = create(A, {"input": calls + out, "store": False})
    eq(err_shape(r, 400, None, "input")["message"],
       "No tool output found for function call call_b.")


@test("tool calls: only tools the request gives are called")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "tool_calls", "calls": [{"name": "shell",
                                                         "arguments": "{}"}]}]})
    r = create(A, {"input": "no tools here"})
    eq(r.status, 200)
    eq(r.json["output"][0]["type"], "message")


@test("fault status 429 with Retry-After, consumed exactly once")
def _():
    A = CTX["A"]
    st = ctl(A, {"faults": [{"kind": "status", "status": 429, "retry_after": 1}]})
    eq(len(st["queue"]), 1)
    r = create(A, {"input": "x"})
    e = err_shape(r, 429, "rate_limit_exceeded", None, "requests")
    assert e["message"].startswith("Rate limit reached"), e
    eq(r.headers.get("retry-after"), "1")
    eq(create(A, {"input": "x"}).status, 200)
    eq(ctl(A)["queue"], [])


@test("fault status 500/502/503 bodies; html 502 variant")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "status", "status": 500}, {"kind": "status", "status": 502},
                       {"kind": "status", "status": 503, "retry_after": 2},
                       {"kind": "status", "status": 502, "html": True}]})
    e = err_shape(create(A, {"input": "x"}), 500, None, None, "server_error")
    eq(e["message"], "The server had an error while processing your request. Sorry about that!")
    err_shape(create(A, {"input": "x"}), 502, None, None, "server_error")
    r = create(A, {"input": "x"})
    err_shape(r, 503, None, None, "server_error")
    eq(r.headers.get("retry-after"), "2")
    r = create(A, {"input": "x"})
    eq(r.status, 502)
    assert r.headers["content-type"].startswith("text/html") and b"502 Bad Gateway" in r.data, r
    eq(create(A, {"input": "x"}).status, 200)


@test("fault drop (non-stream): connection closed without a response")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "drop"}]})
    expect_no_response(lambda: create(A, {"input": "x"}))
    eq(create(A, {"input": "x"}).status, 200)


@test("fault drop (stream): created + deltas, then abrupt close, no completed")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "drop"}]})
    r = sse(A, {"model": "m", "input": "drop this stream please"})
    eq(r["status"], 200)
    assert not r["complete"], "chunked stream should be truncated"
    names = [e["event"] for e in r["events"]]
    eq(names[0], "response.created")
    eq(names.count("response.output_text.delta"), 2, "deltas before drop")
    assert "response.completed" not in names, names
    eq([e["json"]["sequence_number"] for e in r["events"]], list(range(len(names))))


@test("fault drop with store:true keeps the response server-side")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "drop", "store": True}]})
    r = sse(A, {"model": "m", "input": "lost reply"})
    rid = r["events"][0]["json"]["response"]["id"]
    g = hreq(A, "GET", "/v1/responses/" + rid)
    eq(g.status, 200)
    eq(g.json["status"], "completed")


@test("fault expire_previous: 400 not found and the response is really forgotten")
def _():
    A = CTX["A"]
    r1 = create(A, {"input": "base"}).json
    ctl(A, {"faults": [{"kind": "expire_previous"}]})
    err_shape(create(A, {"input": "x", "previous_response_id": r1["id"]}), 400,
              "previous_response_not_found", "previous_response_id")
    err_shape(create(A, {"input": "x", "previous_response_id": r1["id"]}), 400,
              "previous_response_not_found", "previous_response_id")
    err_shape(hreq(A, "GET", "/v1/responses/" + r1["id"]), 404, None)


@test("fault slow (non-stream and stream) delays but completes")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "slow", "delay": 0.6}]})
    t0 = time.time()
    r = create(A, {"input": "slowly"})
    dt = time.time() - t0
    eq(r.status, 200)
    assert dt >= 0.55, dt
    ctl(A, {"faults": [{"kind": "slow", "delay": 0.2}]})
    r = sse(A, {"model": "m", "input": "one two three four five six seven"})
    check_full_stream(r)
    ndelta = sum(1 for e in r["events"] if e["event"] == "response.output_text.delta")
    assert r["elapsed"] >= 0.2 * (ndelta - 1) - 0.05, (r["elapsed"], ndelta)
    assert len(r["arrivals"]) >= 2, "stream was not incremental"


@test("fault failed: stream emits created then response.failed; non-stream status failed")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "failed"}, {"kind": "failed"}]})
    r = sse(A, {"model": "m", "input": "x"})
    assert r["complete"]
    names = [e["event"] for e in r["events"]]
    eq(names, ["response.created", "response.failed"])
    eq([e["json"]["sequence_number"] for e in r["events"]], [0, 1])
    resp = r["events"][1]["json"]["response"]
    eq(resp["status"], "failed")
    eq(resp["error"]["code"], "server_error")
    assert resp["error"]["message"]
    n = create(A, {"input": "x"})
    eq(n.status, 200)
    eq(n.json["status"], "failed")
    eq(n.json["error"]["code"], "server_error")


@test("fault error_event: stream emits an error event")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "error_event"}]})
    r = sse(A, {"model": "m", "input": "x"})
    names = [e["event"] for e in r["events"]]
    eq(names, ["response.created", "error"])
    j = r["events"][1]["json"]
    eq(set(j), {"type", "code", "message", "param", "sequence_number"})
    eq((j["type"], j["param"], j["sequence_number"]), ("error", None, 1))
    assert j["code"] and j["message"]


@test("fault bad_json: truncated JSON body / invalid SSE data line")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "bad_json"}, {"kind": "bad_json"}]})
    r = create(A, {"input": "x"})
    eq(r.status, 200)
    assert r.json is None and r.data, r
    s = sse(A, {"model": "m", "input": "one two three four five six"})
    eq(s["status"], 200)
    bad = [e for e in s["events"] if e["json"] is None]
    assert bad, "expected an invalid data line"
    assert "response.completed" not in [e["event"] for e in s["events"]]


@test("fault hang: server closes after 'max' seconds; client timeout detected")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"kind": "hang", "max": 1.2}]})
    t0 = time.time()
    expect_no_response(lambda: create(A, {"input": "x"}, timeout=10))
    dt = time.time() - t0
    assert 1.0 <= dt < 5, dt
    ctl(A, {"faults": [{"kind": "hang"}]})
    t0 = time.time()
    try:
        create(A, {"input": "x"}, timeout=0.8)
        raise AssertionError("expected a timeout")
    except socket.timeout:
        pass
    assert time.time() - t0 < 3
    deadline = time.time() + 5
    ended = None
    while time.time() < deadline and ended is None:
        for n in sorted(os.listdir(A.log_dir))[-3:]:
            with open(os.path.join(A.log_dir, n)) as f:
                e = json.load(f)
            if (e.get("response") or {}).get("hang_end") == "client_closed":
                ended = e
        time.sleep(0.1)
    assert ended, "server did not notice the client going away"
    eq(create(A, {"input": "after hang"}).status, 200)


@test("GET /__control reports queue, consumed faults and counts; reset clears")
def _():
    A = CTX["A"]
    st = ctl(A)
    eq(st["queue"], [])
    assert st["counts"]["requests"]["responses"] > 10, st["counts"]
    fc = st["counts"]["faults_consumed"]
    for k in ("status", "drop", "expire_previous", "slow", "failed", "error_event", "bad_json",
              "hang"):
        assert fc.get(k, 0) >= 1, (k, fc)
    assert st["consumed"] and "request_seq" in st["consumed"][-1]
    st = ctl(A, {"faults": [{"kind": "status", "status": 500, "repeat": 3}]})
    eq(len(st["queue"]), 3)
    st = ctl(A, {"reset": True})
    eq(st["queue"], [])
    eq(st["counts"]["faults_consumed"], {})
    r = hreq(A, "POST", "/__control", {"faults": [{"kind": "explode"}]})
    eq(r.status, 400)
    r = hreq(A, "POST", "/__control", {"faults": [{"kind": "status", "endpoint": "nowhere",
                                                   "status": 500}]})
    eq(r.status, 400)
    r = hreq(A, "POST", "/__control", raw=b"{nope", headers={"Content-Type": "application/json"})
    eq(r.status, 400)


@test("faults are routed per endpoint (embeddings fault does not hit responses)")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"endpoint": "embeddings", "kind": "status", "status": 500}]})
    eq(create(A, {"input": "x"}).status, 200)
    r = hreq(A, "POST", "/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"})
    err_shape(r, 500, None, None, "server_error")
    ctl(A, {"faults": [{"endpoint": "embeddings", "kind": "drop"}]})
    expect_no_response(lambda: hreq(A, "POST", "/v1/embeddings",
                                    {"model": "text-embedding-3-small", "input": "x"}))
    eq(hreq(A, "POST", "/v1/embeddings", {"model": "e", "input": "x"}).status, 200)


@test("embeddings: shape, dimension, unit norm, determinism")
def _():
    A = CTX["A"]
    r = hreq(A, "POST", "/v1/embeddings", {"model": "text-embedding-3-small",
                                           "input": ["alpha beta", "gamma"]})
    eq(r.status, 200)
    eq(r.json["object"], "list")
    eq(r.json["model"], "text-embedding-3-small")
    eq([d["index"] for d in r.json["data"]], [0, 1])
    for d in r.json["data"]:
        eq(d["object"], "embedding")
        eq(len(d["embedding"]), 64)
        assert abs(math.sqrt(sum(x * x for x in d["embedding"])) - 1) < 1e-9
    u = r.json["usage"]
    eq(u["prompt_tokens"], u["total_tokens"])
    assert u["prompt_tokens"] >= 2
    again = embed(A, "alpha beta")[0]
    eq(again, r.json["data"][0]["embedding"], "deterministic")
    eq(len(embed(A, "x", dimensions=16)[0]), 16)
    r = hreq(A, "POST", "/v1/embeddings", {"model": "e", "input": "abc", "encoding_format": "base64"})
    raw = base64.b64decode(r.json["data"][0]["embedding"])
    eq(len(raw), 64 * 4)
    vals = struct.unpack("<64f", raw)
    assert abs(vals[0] - embed(A, "abc")[0][0]) < 1e-6


@test("embeddings: shared words / camelCase / snake_case are closer by cosine")
def _():
    A = CTX["A"]
    a, b, c = embed(A, ["parse the config file", "parseConfigFile", "network socket timeout"])
    assert cos(a, b) > cos(a, c) + 0.3, (cos(a, b), cos(a, c))
    s1, s2, s3 = embed(A, ["load_user_profile", "load user profile", "render html page"])
    assert cos(s1, s2) > 0.7 and cos(s1, s2) > cos(s1, s3), (cos(s1, s2), cos(s1, s3))


@test("embeddings validation errors")
def _():
    A = CTX["A"]
    err_shape(hreq(A, "POST", "/v1/embeddings", {"model": "e", "input": ""}), 400, None)
    err_shape(hreq(A, "POST", "/v1/embeddings", {"model": "e", "input": []}), 400, None)
    err_shape(hreq(A, "POST", "/v1/embeddings", {"input": "x"}), 400,
              "missing_required_parameter", "model")
    err_shape(hreq(A, "POST", "/v1/embeddings", {"model": "e", "input": "x"}, auth=False), 401)


@test("unknown paths -> 404 with OpenAI error shape")
def _():
    A = CTX["A"]
    e = err_shape(hreq(A, "GET", "/v1/nope"), 404, None)
    eq(e["message"], "Invalid URL (GET /v1/nope)")
    err_shape(hreq(A, "GET", "/v1/responses"), 404, None)
    err_shape(hreq(A, "GET", "/something/else"), 404, None)


@test("qdrant auth: api-key header required (401 text), Bearer accepted, healthz open")
def _():
    A = CTX["A"]
    r = q(A, "GET", "/collections", auth=False)
    eq(r.status, 401)
    eq(r.data, b"Must provide an API key or an Authorization bearer token")
    r = q(A, "GET", "/collections", auth={"api-key": "wrong"})
    eq(r.status, 401)
    eq(q_ok(q(A, "GET", "/collections")), {"collections": []})
    q_ok(q(A, "GET", "/collections", auth={"Authorization": "Bearer " + QKEY}))
    r = q(A, "GET", "/healthz", auth=False)
    eq(r.status, 200)


@test("qdrant collections: create, 409 duplicate, info, list, 404, bad distance")
def _():
    A = CTX["A"]
    eq(q_ok(q(A, "PUT", "/collections/turns", {"vectors": {"size": 64, "distance": "Cosine"}})), True)
    q_err(q(A, "PUT", "/collections/turns", {"vectors": {"size": 64, "distance": "Cosine"}}), 409,
          "Wrong input: Collection `turns` already exists!")
    info = q_ok(q(A, "GET", "/collections/turns"))
    eq(info["config"]["params"]["vectors"], {"size": 64, "distance": "Cosine"})
    eq(info["points_count"], 0)
    eq(info["status"], "green")
    eq(q_ok(q(A, "GET", "/collections")), {"collections": [{"name": "turns"}]})
    eq(q_ok(q(A, "GET", "/collections/turns/exists")), {"exists": True})
    q_err(q(A, "GET", "/collections/nope"), 404, "Not found: Collection `nope` doesn't exist!")
    q_err(q(A, "PUT", "/collections/bad", {"vectors": {"size": 4, "distance": "cosine"}}), 400)
    q_err(q(A, "PUT", "/collections/bad", {}), 400)
    q_err(q(A, "PUT", "/collections/bad", raw=b"{oops", headers={"Content-Type": "application/json"}), 400)
    eq(q_ok(q(A, "PUT", "/collections/turns/index", {"field_name": "session",
                                                       "field_schema": "keyword"}))["status"],
       "acknowledged")


DOCS = [
    (UUIDS[0], "parse the config file for aptix", {"kind": "turn", "session": "s1", "tags": ["cfg", "io"],
                                                    "meta": {"repo": "aptix", "n": 1}}),
    (UUIDS[1], "network socket timeout handling", {"kind": "turn", "session": "s2", "tags": ["net"],
                                                    "meta": {"repo": "other", "n": 2}}),
    (UUIDS[2], "config loader reads yaml", {"kind": "note", "session": "s1", "tags": ["cfg"],
                                            "meta": {"repo": "aptix", "n": 3}}),
    (7, "render html page template", {"kind": "turn", "session": "s3", "tags": [],
                                      "meta": {"repo": "web", "n": 4}}),
    (42, "retry with exponential backoff on 429", {"kind": "turn", "session": "s2", "tags": ["net", "retry"],
                                                   "meta": {"repo": "aptix", "n": 5}}),
]


@test("qdrant upsert: uuid+int ids, wait=true, validation of ids and dimensions")
def _():
    A = CTX["A"]
    vecs = embed(A, [d[1] for d in DOCS])
    CTX["vecs"] = dict(zip([d[0] for d in DOCS], vecs))
    pts = [{"id": pid, "vector": v, "payload": dict(p, text=t)}
           for (pid, t, p), v in zip(DOCS, vecs)]
    res = q_ok(q(A, "PUT", "/collections/turns/points?wait=true", {"points": pts}))
    assert isinstance(res["operation_id"], int)
    eq(res["status"], "completed")
    eq(q_ok(q(A, "GET", "/collections/turns"))["points_count"], 5)
    e = q_err(q(A, "PUT", "/collections/turns/points?wait=true",
                {"points": [{"id": "not-a-uuid", "vector": vecs[0]}]}), 400)
    assert "is not a valid point ID" in e, e
    q_err(q(A, "PUT", "/collections/turns/points", {"points": [{"id": -1, "vector": vecs[0]}]}), 400)
    q_err(q(A, "PUT", "/collections/turns/points?wait=true",
            {"points": [{"id": 1, "vector": [0.1] * 32}]}), 400,
          "Wrong input: Vector dimension error: expected dim: 64, got 32")
    q_err(q(A, "PUT", "/collections/missing/points", {"points": [{"id": 1, "vector": vecs[0]}]}),
          404, "Not found: Collection `missing` doesn't exist!")
    eq(q_ok(q(A, "GET", "/collections/turns"))["points_count"], 5)
    rec = q_ok(q(A, "GET", "/collections/turns/points/42"))
    eq(rec["id"], 42)
    eq(rec["payload"]["session"], "s2")


def qids(A, body, path="query"):
    r = q_ok(q(A, "POST", "/collections/turns/points/" + path, body))
    pts = r["points"] if path in ("query", "scroll") else r
    return [p["id"] for p in pts], pts


@test("qdrant /points/query: cosine ranking, limit, with_payload, result shape")
def _():
    A = CTX["A"]
    qv = embed(A, "how do we parse the config")[0]
    ids, pts = qids(A, {"query": qv, "limit": 3, "with_payload": True})
    eq(len(ids), 3)
    eq(ids[0], UUIDS[0], "best match")
    scores = [p["score"] for p in pts]
    eq(scores, sorted(scores, reverse=True), "descending scores")
    for p in pts:
        eq(set(p), {"id", "version", "score", "payload"})
    assert abs(pts[0]["score"] - cos(qv, CTX["vecs"][UUIDS[0]])) < 1e-9
    ids, pts = qids(A, {"query": qv})
    eq(len(ids), 5)
    assert "payload" not in pts[0], "payload must be off by default for query"
    ids, pts = qids(A, {"query": {"nearest": qv}, "limit": 1})
    eq(ids, [UUIDS[0]])
    ids, pts = qids(A, {"query": 42, "limit": 10})
    assert 42 not in ids and len(ids) == 4, ids
    q_err(q(A, "POST", "/collections/turns/points/query", {"query": [0.0] * 3}), 400,
          "Wrong input: Vector dimension error: expected dim: 64, got 3")


@test("qdrant filters: must / should / must_not, match value/any/text, nested, has_id, range")
def _():
    A = CTX["A"]
    qv = embed(A, "anything")[0]

    def sel(flt):
        ids, _ = qids(A, {"query": qv, "limit": 100, "filter": flt})
        return sorted(map(str, ids))

    S = lambda *xs: sorted(map(str, xs))
    eq(sel({"must": [{"key": "session", "match": {"value": "s1"}}]}), S(UUIDS[0], UUIDS[2]))
    eq(sel({"must": [{"key": "session", "match": {"any": ["s2", "s3"]}}]}), S(UUIDS[1], 7, 42))
    eq(sel({"must_not": [{"key": "kind", "match": {"value": "turn"}}]}), S(UUIDS[2]))
    eq(sel({"should": [{"key": "tags", "match": {"value": "retry"}},
                       {"key": "meta.repo", "match": {"value": "web"}}]}), S(7, 42))
    eq(sel({"must": [{"key": "text", "match": {"text": "config"}}]}), S(UUIDS[0], UUIDS[2]))
    eq(sel({"must": [{"key": "meta.repo", "match": {"value": "aptix"}}],
            "must_not": [{"should": [{"key": "kind", "match": {"value": "note"}},
                                     {"key": "tags", "match": {"value": "retry"}}]}]}),
       S(UUIDS[0]))
    eq(sel({"must": [{"must": [{"key": "session", "match": {"value": "s2"}}],
                      "must_not": [{"key": "tags", "match": {"any": ["retry"]}}]}]}), S(UUIDS[1]))
    eq(sel({"must": [{"has_id": [7, UUIDS[1]]}]}), S(UUIDS[1], 7))
    eq(sel({"must": [{"key": "meta.n", "range": {"gte": 2, "lt": 4}}]}), S(UUIDS[1], UUIDS[2]))
    eq(sel({"must": [{"is_empty": {"key": "tags"}}]}), S(7))
    eq(sel({"should": []}), S(*[d[0] for d in DOCS]))
    eq(sel({"must": {"key": "session", "match": {"value": "s3"}}}), S(7))
    q_err(q(A, "POST", "/collections/turns/points/query",
            {"query": qv, "filter": {"must": [{"bogus": 1}]}}), 400)
    q_err(q(A, "POST", "/collections/turns/points/query",
            {"query": qv, "filter": {"must": [{"key": "x", "match": {"regex": "a"}}]}}), 400)


@test("qdrant score_threshold and offset")
def _():
    A = CTX["A"]
    v = CTX["vecs"][42]
    ids, pts = qids(A, {"query": v, "score_threshold": 0.999, "limit": 10})
    eq(ids, [42])
    assert abs(pts[0]["score"] - 1.0) < 1e-9
    all_ids, _ = qids(A, {"query": v, "limit": 10})
    off_ids, _ = qids(A, {"query": v, "limit": 2, "offset": 1})
    eq(off_ids, all_ids[1:3])


@test("qdrant /points/search returns a bare list; limit is required")
def _():
    A = CTX["A"]
    qv = embed(A, "socket timeout")[0]
    r = q_ok(q(A, "POST", "/collections/turns/points/search",
               {"vector": qv, "limit": 2, "with_payload": True,
                "filter": {"must": [{"key": "kind", "match": {"value": "turn"}}]}}))
    assert isinstance(r, list) and len(r) == 2, r
    eq(r[0]["id"], UUIDS[1])
    assert "payload" in r[0] and r[0]["payload"]["kind"] == "turn"
    q_err(q(A, "POST", "/collections/turns/points/search", {"vector": qv}), 400)


@test("qdrant /points/scroll pagination in id order, payload by default")
def _():
    A = CTX["A"]
    seen, off, pages = [], None, 0
    while True:
        body = {"limit": 2}
        if off is not None:
            body["offset"] = off
        r = q_ok(q(A, "POST", "/collections/turns/points/scroll", body))
        assert set(r) == {"points", "next_page_offset"}, r
        for p in r["points"]:
            assert "payload" in p and "vector" not in p
            seen.append(p["id"])
        pages += 1
        off = r["next_page_offset"]
        if off is None:
            break
        assert pages < 10
    eq(pages, 3)
    eq(seen[:2], [7, 42], "integer ids first")
    eq(sorted(map(str, seen)), sorted(str(d[0]) for d in DOCS))
    r = q_ok(q(A, "POST", "/collections/turns/points/scroll",
               {"filter": {"must": [{"key": "session", "match": {"value": "s2"}}]},
                "with_payload": ["session"], "limit": 10}))
    eq([p["payload"] for p in r["points"]], [{"session": "s2"}, {"session": "s2"}])


@test("qdrant delete points by id and by filter; count")
def _():
    A = CTX["A"]
    eq(q_ok(q(A, "POST", "/collections/turns/points/count", {"exact": True}))["count"], 5)
    res = q_ok(q(A, "POST", "/collections/turns/points/delete?wait=true", {"points": [7]}))
    eq(res["status"], "completed")
    eq(q_ok(q(A, "POST", "/collections/turns/points/count", {}))["count"], 4)
    q_err(q(A, "GET", "/collections/turns/points/7"), 404)
    q_ok(q(A, "POST", "/collections/turns/points/delete?wait=true",
           {"filter": {"must": [{"key": "session", "match": {"value": "s2"}}]}}))
    eq(q_ok(q(A, "POST", "/collections/turns/points/count", {}))["count"], 2)
    q_err(q(A, "POST", "/collections/turns/points/delete", {"nothing": 1}), 400)


@test("qdrant faults: status 503, slow, down, path_contains")
def _():
    A = CTX["A"]
    ctl(A, {"faults": [{"endpoint": "qdrant", "kind": "status", "status": 503}]})
    eq(create(A, {"input": "x"}).status, 200)  # openai unaffected
    e = q_err(q(A, "GET", "/collections"), 503)
    assert e
    q_ok(q(A, "GET", "/collections"))
    ctl(A, {"faults": [{"endpoint": "qdrant", "kind": "slow", "delay": 0.5}]})
    t0 = time.time()
    q_ok(q(A, "GET", "/collections"))
    assert time.time() - t0 >= 0.45
    ctl(A, {"faults": [{"endpoint": "qdrant", "kind": "down"}]})
    expect_no_response(lambda: q(A, "GET", "/collections"))
    ctl(A, {"faults": [{"endpoint": "qdrant", "kind": "status", "status": 500,
                        "path_contains": "/points/query"}]})
    q_ok(q(A, "GET", "/collections"))
    q_err(q(A, "POST", "/collections/turns/points/query", {"query": CTX["vecs"][42]}), 500)
    q_ok(q(A, "POST", "/collections/turns/points/query", {"query": CTX["vecs"][42]}))
    ctl(A, {"faults": [{"endpoint": "qdrant", "kind": "hang", "max": 0.5}]})
    expect_no_response(lambda: q(A, "GET", "/collections"))
    eq(ctl(A)["queue"], [])


@test("qdrant delete collection")
def _():
    A = CTX["A"]
    q_ok(q(A, "PUT", "/collections/doomed", {"vectors": {"size": 4, "distance": "Dot"}}))
    eq(q_ok(q(A, "DELETE", "/collections/doomed")), True)
    q_err(q(A, "GET", "/collections/doomed"), 404)
    eq(q_ok(q(A, "DELETE", "/collections/doomed")), False)


@test("--qdrant-no-query: /points/query 404 (old server), /points/search works")
def _():
    B = CTX["B"]
    q_ok(hreq(B, "PUT", "/collections/c", {"vectors": {"size": 4, "distance": "Cosine"}}, auth=False))
    q_ok(hreq(B, "PUT", "/collections/c/points?wait=true",
              {"points": [{"id": 1, "vector": [1, 0, 0, 0], "payload": {"a": 1}},
                          {"id": 2, "vector": [0, 1, 0, 0], "payload": {"a": 2}}]}, auth=False))
    r = hreq(B, "POST", "/collections/c/points/query", {"query": [1, 0, 0, 0]}, auth=False)
    eq(r.status, 404)
    r = q_ok(hreq(B, "POST", "/collections/c/points/search",
                  {"vector": [1, 0.1, 0, 0], "limit": 5}, auth=False))
    eq([p["id"] for p in r], [1, 2])
    st = hreq(B, "POST", "/__control", {"qdrant_no_query": False}).json
    eq(st["qdrant_no_query"], False)
    r = q_ok(hreq(B, "POST", "/collections/c/points/query", {"query": [0, 1, 0, 0], "limit": 1},
                  auth=False))
    eq([p["id"] for p in r["points"]], [2])
    # no --api-key on B: OpenAI side open
    eq(hreq(B, "POST", "/v1/responses", {"model": "m", "input": "x"}, auth=False).status, 200)


@test("robustness: garbage request line, bad Content-Length, deep JSON, server survives")
def _():
    A = CTX["A"]
    s = socket.create_connection(("127.0.0.1", A.port), timeout=5)
    s.sendall(b"\x00\x01GARBAGE\r\n\r\n")
    try:
        s.recv(4096)
    except OSError:
        pass
    s.close()
    s = socket.create_connection(("127.0.0.1", A.port), timeout=5)
    s.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: banana\r\n\r\n")
    data = s.recv(4096)
    s.close()
    assert data.startswith(b"HTTP/1.1 400"), data[:100]
    r = q(A, "POST", "/collections/turns/points/query", raw=b"[" * 50000,
          headers={"Content-Type": "application/json"})
    eq(r.status, 400)
    zeros = json.dumps([0.0] * 64)
    for depth, ok_status in ((3000, (400,)), (450, (200, 400))):
        body = ('{"query":%s,"filter":' % zeros + '{"must":[' * depth + "]}" * depth + "}").encode()
        r = q(A, "POST", "/collections/turns/points/query", raw=body,
              headers={"Content-Type": "application/json"})
        assert r.status in ok_status, (depth, r)
    r = create(A, {"input": [{"role": "user", "content": [None]}]})
    err_shape(r, 400, "invalid_type", "input[0].content[0]")
    eq(create(A, {"input": "still alive"}).status, 200)
    assert A.proc.poll() is None


@test("HTTP/1.1 keep-alive, Expect: 100-continue and chunked request bodies")
def _():
    A = CTX["A"]
    conn = http.client.HTTPConnection("127.0.0.1", A.port, timeout=5)
    hdr = {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"}
    for body, want in ((b'{"model":"m","input":"one"}', 200), (b"{bad", 400),
                       (b'{"model":"m","input":"two"}', 200)):
        conn.request("POST", "/v1/responses", body=body, headers=hdr)
        r = conn.getresponse()
        r.read()
        eq(r.status, want)
    conn.request("POST", "/v1/responses", body=iter([b'{"model":"m",', b'"input":"chunked"}']),
                 headers=hdr, encode_chunked=True)
    r = conn.getresponse()
    j = json.loads(r.read())
    assert "to: chunked (" in j["output"][0]["content"][0]["text"], j
    conn.close()
    body = json.dumps({"model": "m", "input": "continue " * 300}).encode()
    r = raw_http(A, "POST", "/v1/responses", body,
                 {"Authorization": "Bearer " + API_KEY, "Expect": "100-continue"})
    assert r["raw"].startswith(b"HTTP/1.1 100"), r["raw"][:60]


@test("SIGTERM: clean exit 0, port file removed; --state restart keeps responses and collections")
def _():
    A = CTX["A"]
    q_ok(q(A, "PUT", "/collections/persist", {"vectors": {"size": 64, "distance": "Cosine"}}))
    q_ok(q(A, "PUT", "/collections/persist/points?wait=true",
           {"points": [{"id": 5, "vector": CTX["vecs"][42], "payload": {"k": "v"}}]}))
    before = len(os.listdir(A.log_dir))
    rc = A.stop()
    eq(rc, 0, "exit status")
    assert not os.path.exists(A.port_file), "port file should be removed"
    A2 = Srv("A", CTX["tmp"], A.extra, state=A.state, logdir=A.log_dir).start()
    CTX["A"] = A2
    r3 = CTX["r3"]
    g = hreq(A2, "GET", "/v1/responses/" + r3["id"])
    eq(g.status, 200)
    r4 = create(A2, {"input": "after restart", "previous_response_id": r3["id"]})
    eq(r4.status, 200)
    t = r4.json["output"][0]["content"][0]["text"]
    assert "(chain depth 4, context chars 44)" in t, t
    n3 = int(re.match(r"Answer #(\d+)", r3["output"][0]["content"][0]["text"]).group(1))
    n4 = int(re.match(r"Answer #(\d+)", t).group(1))
    assert n4 > n3, (n3, n4)
    r = q_ok(q(A2, "POST", "/collections/persist/points/query",
               {"query": CTX["vecs"][42], "with_payload": True}))
    eq([(p["id"], p["payload"]) for p in r["points"]], [(5, {"k": "v"})])
    names = sorted(os.listdir(A2.log_dir))
    assert len(names) > before and int(names[-1][:4]) > before, "log numbering must continue"


@test("SIGINT also exits cleanly")
def _():
    rc = CTX["B"].stop(signal.SIGINT)
    eq(rc, 0, "exit status")


def main():
    tmp = tempfile.mkdtemp(prefix="standin-selftest-")
    CTX["tmp"] = tmp
    A = Srv("A", tmp, ["--api-key", API_KEY, "--qdrant-api-key", QKEY, "--seed", "selftest"],
            state=os.path.join(tmp, "state.json"))
    B = Srv("B", tmp, ["--qdrant-no-query", "--embed-dim", "4"])
    failed = 0
    print("1..%d" % len(TESTS))
    sys.stdout.flush()
    try:
        CTX["A"] = A.start()
        CTX["B"] = B.start()
        for i, (name, fn) in enumerate(TESTS, 1):
            try:
                fn()
                print("ok %d - %s" % (i, name))
            except Exception as e:
                failed += 1
                print("not ok %d - %s" % (i, name))
                for line in (traceback.format_exc() if VERBOSE else "%s: %s" % (type(e).__name__, e)).splitlines():
                    print("#   " + line)
            sys.stdout.flush()
    finally:
        for s in (CTX.get("A"), A, B):
            if s is not None:
                s.kill()
        for s in (CTX.get("A"), B):
            if s is not None and os.path.exists(s.stderr_path):
                with open(s.stderr_path) as f:
                    err = f.read()
                if "internal error" in err or "Traceback" in err:
                    failed += 1
                    print("# server %s stderr shows errors:" % s.name)
                    for line in err.splitlines()[-30:]:
                        print("#   " + line)
        if failed == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("# artefacts kept in %s" % tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
