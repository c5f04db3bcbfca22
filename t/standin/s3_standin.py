#!/usr/bin/env python3
"""t/standin/s3_standin.py - a tiny S3 for the tests of large objects on S3
(t0233), for what s3rver does not do: it checks every request's AWS
Signature Version 4 against its own key and secret (s3rver checks only
that the key id exists), checks x-amz-content-sha256 against the body,
and honours If-None-Match: * on PUT (412 when the key is taken).

    s3_standin.py --port-file F --dir D --key-id K --secret S
                  [--fail-first-put] [--on-put PROGRAM]

Objects are files under D/<bucket>/<key>. --fail-first-put stores the
first PUT's object and then answers 500, as a response lost on the way.
--on-put runs PROGRAM on each PUT before it answers, so
that a test sees what the client holds open meanwhile. Each request is
logged to stderr as "METHOD PATH STATUS".
"""
import argparse
import hashlib
import hmac
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
STATE = {"failed_put": False}


def sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def check_sigv4(h, method, path, payload_hash):
    auth = h.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "not AWS4-HMAC-SHA256"
    parts = dict(p.strip().split("=", 1) for p in auth[17:].split(","))
    cred = parts["Credential"].split("/")
    if cred[0] != ARGS.key_id:
        return "InvalidAccessKeyId"
    date, region, service = cred[1], cred[2], cred[3]
    signed = parts["SignedHeaders"].split(";")
    for need in ("host", "x-amz-date", "x-amz-content-sha256"):
        if need not in signed:
            return "SignatureDoesNotMatch"
    canon_headers = "".join(
        "%s:%s\n" % (n, " ".join(h.get(n, "").split())) for n in signed)
    canon = "\n".join([method, path.split("?")[0], "", canon_headers,
                       ";".join(signed), payload_hash])
    scope = "/".join([date, region, service, "aws4_request"])
    sts = "\n".join(["AWS4-HMAC-SHA256", h.get("x-amz-date", ""), scope,
                     hashlib.sha256(canon.encode()).hexdigest()])
    k = sign(("AWS4" + ARGS.secret).encode(), date)
    k = sign(sign(sign(k, region), service), "aws4_request")
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, parts.get("Signature", "")):
        return "SignatureDoesNotMatch"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def reply(self, status, body=b"", code=None):
        if code:
            body = ("<?xml version=\"1.0\"?><Error><Code>%s</Code>"
                    "</Error>" % code).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        sys.stderr.write("%s %s %d\n" % (self.command, self.path, status))
        sys.stderr.flush()

    def target(self):
        rel = self.path.split("?")[0].lstrip("/")
        if ".." in rel.split("/"):
            return None
        return os.path.join(ARGS.dir, rel)

    def common(self, body):
        ph = self.headers.get("x-amz-content-sha256")
        if ph is None:
            self.reply(400, code="MissingContentSha256")
            return False
        if ph != hashlib.sha256(body).hexdigest():
            self.reply(400, code="XAmzContentSHA256Mismatch")
            return False
        why = check_sigv4(self.headers, self.command, self.path, ph)
        if why:
            self.reply(403, code=why)
            return False
        return True

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if not self.common(body):
            return
        path = self.target()
        if ARGS.on_put:
            subprocess.run([ARGS.on_put], check=False)
        if self.headers.get("If-None-Match") == "*" and os.path.exists(path):
            self.reply(412, code="PreconditionFailed")
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(body)
        os.rename(path + ".tmp", path)
        if ARGS.fail_first_put and not STATE["failed_put"]:
            STATE["failed_put"] = True
            self.reply(500, code="InternalError")
            return
        self.reply(200)

    def do_GET(self):
        if not self.common(b""):
            return
        path = self.target()
        if not path or not os.path.isfile(path):
            self.reply(404, code="NoSuchKey")
            return
        with open(path, "rb") as f:
            self.reply(200, f.read())


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--key-id", required=True)
    p.add_argument("--secret", required=True)
    p.add_argument("--fail-first-put", action="store_true")
    p.add_argument("--on-put")
    ARGS = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
