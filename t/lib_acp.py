"""lib_acp.py -- drive `aptix acp` (the Agent Client Protocol agent) in
the shell tests (t8201), and check every message it sends against the
ACP JSON schema (t/fixtures/acp/schema/v1/schema.json, or
$ACP_SCHEMA) with python3-jsonschema.

    from lib_acp import Acp, check
    a = Acp()                          # runs `aptix acp`
    r = a.request("initialize", {"protocolVersion": 1})
    ups = a.updates(sid)               # session/update params so far
    a.close()

Each message read is validated as it is read: the whole message against
the schema's top level, a response's result against the response type
of its method (the schema's x-method), an error against Error, and a
session/update's params against SessionNotification. A message that
does not validate fails the test at once.
"""
import json
import os
import sys

import jsonschema

from lib_jsonrpc import AppServer, check  # noqa: F401

SCHEMA = os.environ.get("ACP_SCHEMA")


def load_schema():
    with open(SCHEMA) as f:
        return json.load(f)


def fault(f):
    """Queue a fault in the OpenAI stand-in ($STANDIN_URL)."""
    import urllib.request
    req = urllib.request.Request(
        os.environ["STANDIN_URL"] + "/__control",
        data=json.dumps({"faults": [f]}).encode(),
        headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


class Acp(AppServer):
    def __init__(self, args=(), env=None):
        self.schema = load_schema()
        self.defs = self.schema["$defs"]
        self.top = jsonschema.Draft202012Validator(self.schema)
        self.by_method = {}
        for name, d in self.defs.items():
            if d.get("x-side") == "agent" and name.endswith("Response"):
                self.by_method[d["x-method"]] = name
        self.methods = {}          # request id -> method
        self.validated = 0
        AppServer.__init__(self, args, env, command="acp")

    def validator(self, name):
        return jsonschema.Draft202012Validator(
            {"$ref": "#/$defs/" + name, "$defs": self.defs})

    def validate(self, msg):
        def fail(err):
            sys.stderr.write("schema: %s\nmessage: %s\n" %
                             (err.message, json.dumps(msg)[:2000]))
            sys.exit(1)
        for err in self.top.iter_errors(msg):
            fail(err)
        if "method" in msg:
            params_type = {"session/update": "SessionNotification",
                           "fs/read_text_file": "ReadTextFileRequest",
                           "session/request_permission":
                           "RequestPermissionRequest"}
            name = params_type.get(msg["method"])
            if name:
                for err in self.validator(name).iter_errors(
                        msg.get("params")):
                    fail(err)
        elif "error" in msg:
            for err in self.validator("Error").iter_errors(msg["error"]):
                fail(err)
        else:
            method = self.methods.get(msg.get("id"))
            name = self.by_method.get(method)
            if name:
                for err in self.validator(name).iter_errors(
                        msg.get("result")):
                    fail(err)
            elif method == "session/fork":    # unstable: not in v1
                check(isinstance(msg["result"].get("sessionId"), str), msg)
        self.validated += 1

    def _get(self):
        msg = AppServer._get(self)
        self.validate(msg)
        return msg

    def request(self, method, params=None):
        self.methods[self.next_id] = method
        return AppServer.request(self, method, params)

    def send_request(self, method, params):
        """Send without waiting; returns the id."""
        rid = self.next_id
        self.next_id += 1
        self.methods[rid] = method
        self.send({"jsonrpc": "2.0", "id": rid, "method": method,
                   "params": params})
        return rid

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def new_session(self, cwd):
        """initialize, then session/new in cwd: the session id."""
        self.request("initialize", {"protocolVersion": 1})
        return self.request("session/new", {"cwd": cwd, "mcpServers": []}
                            )["result"]["sessionId"]

    def updates(self, sid=None):
        """session/update params seen so far (of sid), in order."""
        return [m["params"] for m in self.seen
                if m.get("method") == "session/update" and
                (sid is None or m["params"]["sessionId"] == sid)]

    def kinds(self, sid=None):
        return [u["update"]["sessionUpdate"] for u in self.updates(sid)]
