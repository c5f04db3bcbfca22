#!/usr/bin/env python3
"""Hermetic local stand-in for the OpenAI Responses/Embeddings API and Qdrant REST API.

Python 3 standard library only.  See t/standin/README.md for the full protocol.

Usage:
    python3 t/standin/openai_standin.py --port-file FILE --log-dir DIR
        [--host 127.0.0.1] [--port 0] [--api-key KEY] [--qdrant-api-key KEY]
        [--state FILE] [--embed-dim 64] [--qdrant-no-query] [--lenient]
        [--seed S] [--log-control] [--verbose]

The server binds HOST:PORT (port 0 = the OS chooses), writes the chosen port
to --port-file atomically once listening, serves until SIGTERM/SIGINT and then
exits 0 (removing the port file).

OpenAI base URL:  http://127.0.0.1:PORT/v1
Qdrant base URL:  http://127.0.0.1:PORT
Fault control:    POST/GET http://127.0.0.1:PORT/__control
"""

import argparse
import base64
import hashlib
import http.server
import json
import math
import os
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

MAX_BODY = 64 * 1024 * 1024
MAX_SLEEP = 120.0          # upper bound for any single injected delay
DEFAULT_HANG = 120.0       # "hang" gives up after this many seconds
MAX_HANG = 600.0
DEFAULT_ENDLESS = 1 << 30  # "endless" gives up after this many bytes
MAX_ENDLESS = 1 << 36

# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


def jdump(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def atomic_write(path, data):
    """Write bytes/str to path via a temp file + rename."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, ".%s.tmp.%d.%d" % (os.path.basename(path), os.getpid(),
                                              threading.get_ident()))
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
    os.replace(tmp, path)


def json_type_name(v):
    """Type names as used in OpenAI validation messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a decimal"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "an unknown value"


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def ceil_div4(n):
    return max(1, int(math.ceil(n / 4.0)))


def sanitize_path(path):
    p = path.strip("/")
    p = re.sub(r"[^A-Za-z0-9._-]+", "_", p).strip("_")
    if not p:
        p = "root"
    return p[:100]


def fmt_py_json_error(e):
    return "%s at line %d column %d" % (e.msg, e.lineno, e.colno)


class ClientGone(Exception):
    """The client went away while we were writing/reading."""


class Dropped(Exception):
    """We deliberately dropped/abandoned the connection (fault injection)."""


class QError(Exception):
    def __init__(self, status, message):
        Exception.__init__(self, message)
        self.status = status
        self.message = message


class OAIError(Exception):
    def __init__(self, status, message, param=None, code=None, etype="invalid_request_error"):
        Exception.__init__(self, message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.etype = etype

    def body(self):
        return {"error": {"message": self.message, "type": self.etype,
                          "param": self.param, "code": self.code}}


# --------------------------------------------------------------------------
# deterministic embeddings
# --------------------------------------------------------------------------

_IDENT_RE = re.compile(r"\w+", re.UNICODE)
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_]+", re.UNICODE)


def embed_tokens(text):
    """Lower-case word tokens; identifiers are split at snake_case and camelCase
    boundaries and the whole identifier is kept as an extra token."""
    toks = []
    for ident in _IDENT_RE.findall(text):
        parts = []
        for piece in ident.split("_"):
            if not piece:
                continue
            sub = _CAMEL_RE.findall(piece)
            parts.extend(sub if sub else [piece])
        parts = [p.lower() for p in parts if p]
        toks.extend(parts)
        whole = ident.strip("_").lower()
        if len(parts) > 1 and whole:
            toks.append(whole)
    return toks


def embed_text(text, dim):
    vec = [0.0] * dim
    toks = embed_tokens(text) if isinstance(text, str) else ["#%d" % t for t in text]
    if not toks:
        toks = ["<empty>"]
    for t in toks:
        h = hashlib.sha256(t.encode("utf-8")).digest()
        bucket = int.from_bytes(h[:4], "little") % dim
        sign = 1.0 if (h[4] & 1) else -1.0
        vec[bucket] += sign
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:  # all contributions cancelled out
        h = hashlib.sha256(b"<cancelled>").digest()
        vec[int.from_bytes(h[:4], "little") % dim] = 1.0
        norm = 1.0
    return [x / norm for x in vec]


# --------------------------------------------------------------------------
# OpenAI request validation
# --------------------------------------------------------------------------

RESPONSES_PARAMS = {
    "background", "conversation", "include", "input", "instructions", "max_output_tokens",
    "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id",
    "prompt", "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature", "text", "tool_choice",
    "tools", "top_logprobs", "top_p", "truncation", "user", "context_management",
}
EMBEDDINGS_PARAMS = {"input", "model", "dimensions", "encoding_format", "user"}
MESSAGE_ROLES = ("user", "assistant", "system", "developer")
OTHER_ITEM_TYPES = {
    "function_call", "function_call_output", "reasoning", "item_reference", "file_search_call",
    "web_search_call", "computer_call", "computer_call_output", "image_generation_call",
    "code_interpreter_call", "local_shell_call", "local_shell_call_output", "mcp_call",
    "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "custom_tool_call",
    "custom_tool_call_output", "compaction",
}
USER_PART_TYPES = ("input_text", "input_image", "input_file", "input_audio")
ASSISTANT_PART_TYPES = ("output_text", "refusal")


def _supported(values):
    q = ["'%s'" % v for v in values]
    if len(q) == 1:
        return q[0]
    return ", ".join(q[:-1]) + ", and " + q[-1]


def _invalid_type(param, expected, got):
    return OAIError(400, "Invalid type for '%s': expected %s, but got %s instead."
                    % (param, expected, json_type_name(got)), param, "invalid_type")


def _missing(param):
    return OAIError(400, "Missing required parameter: '%s'." % param, param,
                    "missing_required_parameter")


def normalize_input(inp):
    """Validate `input` and return a list of (role, text) pairs plus the stored
    item list.  Raises OAIError(400) with real-API-like messages."""
    if isinstance(inp, str):
        return [("user", inp)], [{"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": inp}]}]
    if not isinstance(inp, list):
        raise _invalid_type("input", "one of a string or array of input items", inp)
    if not inp:
        raise OAIError(400, "Invalid 'input': empty array. Expected an array with minimum "
                       "length 1, but got an empty array instead.", "input", "empty_array")
    pairs, items = [], []
    for i, item in enumerate(inp):
        p = "input[%d]" % i
        if not isinstance(item, dict):
            raise _invalid_type(p, "an input item object", item)
        typ = item.get("type")
        if typ is None or typ == "message":
            role = item.get("role")
            if role is None:
                raise _missing(p + ".role")
            if role not in MESSAGE_ROLES:
                raise OAIError(400, "Invalid value: '%s'. Supported values are: %s."
                               % (role, _supported(sorted(MESSAGE_ROLES))), p + ".role",
                               "invalid_value")
            if "content" not in item:
                raise _missing(p + ".content")
            content = item["content"]
            if isinstance(content, str):
                text = content
                parts = [{"type": "output_text" if role == "assistant" else "input_text",
                          "text": content}]
            elif isinstance(content, list):
                texts = []
                allowed = ASSISTANT_PART_TYPES if role == "assistant" else USER_PART_TYPES
                for j, part in enumerate(content):
                    pp = "%s.content[%d]" % (p, j)
                    if not isinstance(part, dict):
                        raise _invalid_type(pp, "an object", part)
                    ptype = part.get("type")
                    if ptype is None:
                        raise _missing(pp + ".type")
                    if ptype not in allowed:
                        raise OAIError(400, "Invalid value: '%s'. Supported values are: %s."
                                       % (ptype, _supported(allowed)), pp + ".type",
                                       "invalid_value")
                    if ptype in ("input_text", "output_text"):
                        if "text" not in part:
                            raise _missing(pp + ".text")
                        if not isinstance(part["text"], str):
                            raise _invalid_type(pp + ".text", "a string", part["text"])
                        texts.append(part["text"])
                text = "".join(texts)
                parts = content
            else:
                raise _invalid_type(p + ".content",
                                    "one of a string or array of input content", content)
            pairs.append((role, text))
            items.append({"type": "message", "role": role, "content": parts})
        elif typ in OTHER_ITEM_TYPES:
            out = item.get("output")
            if isinstance(out, str):
                pairs.append(("tool", out))
            items.append(item)
        else:
            raise OAIError(400, "Invalid value: '%s'. Supported values are: %s."
                           % (typ, _supported(["message"] + sorted(OTHER_ITEM_TYPES))),
                           p + ".type", "invalid_value")
    return pairs, items


MAX_TOOL_OUTPUT = 10485760


def check_tool_items(items, parent):
    """The real API's rules for function calls across turns: every call
    the previous response made must be answered by a function_call_output
    in this input, and every output must answer a call (of the previous
    response, or a function_call item earlier in this input)."""
    pending = list(parent.get("pending_calls", [])) if parent else []
    known = set(pending)
    answered = set()
    for i, it in enumerate(items):
        if it.get("type") == "function_call":
            known.add(it.get("call_id"))
        if it.get("type") != "function_call_output":
            continue
        cid, out = it.get("call_id"), it.get("output")
        p = "input[%d]" % i
        if not isinstance(cid, str):
            raise _missing(p + ".call_id")
        if isinstance(out, str) and len(out) > MAX_TOOL_OUTPUT:
            raise OAIError(400, "Invalid '%s.output': string too long. Expected a string "
                           "with maximum length %d, but got a string with length %d "
                           "instead." % (p, MAX_TOOL_OUTPUT, len(out)), p + ".output",
                           "string_above_max_length")
        if cid not in known:
            raise OAIError(400, "No tool call found for function call output with call_id "
                           "%s." % cid, "input", None)
        answered.add(cid)
    for cid in pending:
        if cid not in answered:
            raise OAIError(400, "No tool output found for function call %s." % cid,
                           "input", None)
    stateless = [it.get("call_id") for it in items if it.get("type") == "function_call"]
    for cid in stateless:
        if cid not in answered:
            raise OAIError(400, "No tool output found for function call %s." % cid,
                           "input", None)


def validate_responses_body(body, lenient):
    if not lenient:
        for k in body:
            if k not in RESPONSES_PARAMS:
                raise OAIError(400, "Unknown parameter: '%s'." % k, k, "unknown_parameter")
    if "model" not in body or body["model"] is None:
        raise _missing("model")
    if not isinstance(body["model"], str):
        raise _invalid_type("model", "a string", body["model"])
    if not body["model"]:
        raise OAIError(400, "Invalid 'model': empty string. Expected a string with minimum "
                       "length 1, but got an empty string instead.", "model", "empty_string")
    if "input" not in body or body["input"] is None:
        raise _missing("input")
    for k in ("instructions", "previous_response_id", "prompt_cache_key", "user",
              "safety_identifier", "service_tier", "truncation"):
        if body.get(k) is not None and not isinstance(body[k], str):
            raise _invalid_type(k, "a string", body[k])
    for k in ("store", "stream", "parallel_tool_calls", "background"):
        if body.get(k) is not None and not isinstance(body[k], bool):
            raise _invalid_type(k, "a boolean", body[k])
    prev = body.get("previous_response_id")
    if prev is not None and not prev.startswith("resp"):
        raise OAIError(400, "Invalid 'previous_response_id': '%s'. Expected an ID that "
                       "begins with 'resp'." % prev, "previous_response_id", "invalid_value")
    for k, lo, hi in (("temperature", 0, 2), ("top_p", 0, 1)):
        v = body.get(k)
        if v is None:
            continue
        if not is_number(v):
            raise _invalid_type(k, "a decimal", v)
        if v < lo:
            raise OAIError(400, "Invalid '%s': decimal below minimum value. Expected a value "
                           ">= %s, but got %s instead." % (k, lo, v), k, "decimal_below_min_value")
        if v > hi:
            raise OAIError(400, "Invalid '%s': decimal above maximum value. Expected a value "
                           "<= %s, but got %s instead." % (k, hi, v), k, "decimal_above_max_value")
    v = body.get("max_output_tokens")
    if v is not None:
        if not isinstance(v, int) or isinstance(v, bool):
            raise _invalid_type("max_output_tokens", "an integer", v)
        if v < 16:
            raise OAIError(400, "Invalid 'max_output_tokens': integer below minimum value. "
                           "Expected a value >= 16, but got %d instead." % v,
                           "max_output_tokens", "integer_below_min_value")
    for k in ("metadata", "reasoning", "text", "stream_options"):
        if body.get(k) is not None and not isinstance(body[k], dict):
            raise _invalid_type(k, "an object", body[k])
    if body.get("tools") is not None and not isinstance(body["tools"], list):
        raise _invalid_type("tools", "an array", body["tools"])
    return normalize_input(body["input"])


# --------------------------------------------------------------------------
# Qdrant filter evaluation
# --------------------------------------------------------------------------

DISTANCES = ("Cosine", "Euclid", "Dot", "Manhattan")
_BAD_COND = "Format error in JSON body: data did not match any variant of untagged enum Condition"


def parse_point_id(v):
    """Return (kind, value) for a valid Qdrant point id or raise QError(400)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if 0 <= v < 2 ** 64:
            return ("n", v)
    elif isinstance(v, str):
        try:
            return ("u", str(uuid.UUID(v)))
        except ValueError:
            pass
    raise QError(400, "Format error in JSON body: value %s is not a valid point ID, valid "
                      "values are either an unsigned integer or a UUID"
                 % (v if isinstance(v, str) else jdump(v)))


def pid_key(pid):
    return "%s:%s" % pid


def pid_out(pid):
    return pid[1]


def pid_sort(pid):
    return (0, pid[1]) if pid[0] == "n" else (1, uuid.UUID(pid[1]).int)


def _json_eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return a == b


def payload_values(payload, key):
    """Values at `key` (dotted path, `name[]` flattens arrays); returns
    (flat_values, raw_values)."""
    cur = [payload]
    for seg in key.split("."):
        arr = seg.endswith("[]")
        name = seg[:-2] if arr else seg
        nxt = []
        for o in cur:
            for it in (o if isinstance(o, list) else [o]):
                if isinstance(it, dict) and name in it:
                    v = it[name]
                    if arr and isinstance(v, list):
                        nxt.extend(v)
                    else:
                        nxt.append(v)
        cur = nxt
    flat = []
    for v in cur:
        if isinstance(v, list):
            flat.extend(v)
        else:
            flat.append(v)
    return [v for v in flat if v is not None], cur


def _as_list(v, what):
    if v is None:
        return []
    if isinstance(v, dict):
        return [v]
    if isinstance(v, list):
        return v
    raise QError(400, "Format error in JSON body: invalid type: %s, expected %s"
                 % (json_type_name(v), what))


def validate_filter(flt):
    if flt is None:
        return
    if not isinstance(flt, dict):
        raise QError(400, "Format error in JSON body: invalid type: %s, expected struct Filter"
                     % json_type_name(flt))
    for k in flt:
        if k not in ("must", "should", "must_not", "min_should"):
            raise QError(400, "Format error in JSON body: unknown field `%s`, expected one of "
                              "`should`, `min_should`, `must`, `must_not`" % k)
    for k in ("must", "should", "must_not"):
        for c in _as_list(flt.get(k), "a sequence of conditions"):
            validate_cond(c)
    ms = flt.get("min_should")
    if ms is not None:
        if not isinstance(ms, dict) or not isinstance(ms.get("conditions"), list) \
                or not isinstance(ms.get("min_count"), int):
            raise QError(400, "Format error in JSON body: invalid min_should")
        for c in ms["conditions"]:
            validate_cond(c)


def validate_cond(c):
    if not isinstance(c, dict):
        raise QError(400, _BAD_COND)
    if "key" in c:
        if not isinstance(c["key"], str):
            raise QError(400, _BAD_COND)
        m = c.get("match")
        if m is not None:
            if not isinstance(m, dict) or len(m) != 1:
                raise QError(400, "Format error in JSON body: data did not match any variant "
                                  "of untagged enum Match")
            (mk, mv), = m.items()
            if mk == "value":
                if not isinstance(mv, (str, int)):
                    raise QError(400, "Format error in JSON body: data did not match any "
                                      "variant of untagged enum ValueVariants")
            elif mk in ("any", "except"):
                if not isinstance(mv, list) or not all(isinstance(x, (str, int))
                                                       and not isinstance(x, bool) for x in mv):
                    raise QError(400, "Format error in JSON body: data did not match any "
                                      "variant of untagged enum AnyVariants")
            elif mk in ("text", "phrase", "text_any"):
                if not isinstance(mv, str):
                    raise QError(400, "Format error in JSON body: invalid type: %s, expected "
                                      "a string" % json_type_name(mv))
            else:
                raise QError(400, "Format error in JSON body: data did not match any variant "
                                  "of untagged enum Match")
        for rk in ("range", "values_count"):
            r = c.get(rk)
            if r is not None:
                if not isinstance(r, dict) or not all(k in ("gt", "gte", "lt", "lte")
                                                      and (v is None or is_number(v))
                                                      for k, v in r.items()):
                    raise QError(400, "Format error in JSON body: invalid %s" % rk)
        if not any(c.get(k) is not None for k in ("match", "range", "values_count",
                                                  "is_empty", "is_null")):
            if any(k in c for k in ("geo_bounding_box", "geo_radius", "geo_polygon", "datetime_range")):
                raise QError(400, "Wrong input: condition is not supported by the stand-in")
            raise QError(400, "Validation error in JSON body: [filter: At least one field "
                              "condition must be specified]")
        return
    if "has_id" in c:
        if not isinstance(c["has_id"], list):
            raise QError(400, _BAD_COND)
        for x in c["has_id"]:
            parse_point_id(x)
        return
    if "is_empty" in c or "is_null" in c:
        inner = c.get("is_empty", c.get("is_null"))
        if not isinstance(inner, dict) or not isinstance(inner.get("key"), str):
            raise QError(400, _BAD_COND)
        return
    if "nested" in c:
        n = c["nested"]
        if not isinstance(n, dict) or not isinstance(n.get("key"), str):
            raise QError(400, _BAD_COND)
        validate_filter(n.get("filter"))
        return
    if any(k in c for k in ("must", "should", "must_not", "min_should")):
        validate_filter(c)
        return
    raise QError(400, _BAD_COND)


def _range_ok(v, r):
    if not is_number(v):
        return False
    if r.get("gt") is not None and not v > r["gt"]:
        return False
    if r.get("gte") is not None and not v >= r["gte"]:
        return False
    if r.get("lt") is not None and not v < r["lt"]:
        return False
    if r.get("lte") is not None and not v <= r["lte"]:
        return False
    return True


def filter_ok(flt, pid, payload):
    if not flt:
        return True
    for c in _as_list(flt.get("must"), ""):
        if not cond_ok(c, pid, payload):
            return False
    should = _as_list(flt.get("should"), "")
    if should and not any(cond_ok(c, pid, payload) for c in should):
        return False
    for c in _as_list(flt.get("must_not"), ""):
        if cond_ok(c, pid, payload):
            return False
    ms = flt.get("min_should")
    if ms:
        if sum(1 for c in ms["conditions"] if cond_ok(c, pid, payload)) < ms["min_count"]:
            return False
    return True


def cond_ok(c, pid, payload):
    payload = payload or {}
    if "key" in c:
        vals, raw = payload_values(payload, c["key"])
        m = c.get("match")
        if m is not None:
            (mk, mv), = m.items()
            if mk == "value":
                if not any(_json_eq(v, mv) for v in vals):
                    return False
            elif mk == "any":
                if not any(_json_eq(v, x) for v in vals for x in mv):
                    return False
            elif mk == "except":
                if not vals or not any(not any(_json_eq(v, x) for x in mv) for v in vals):
                    return False
            elif mk in ("text", "phrase"):
                if not any(isinstance(v, str) and mv in v for v in vals):
                    return False
            elif mk == "text_any":
                words = mv.split()
                if not any(isinstance(v, str) and any(w in v for w in words) for v in vals):
                    return False
        r = c.get("range")
        if r is not None and not any(_range_ok(v, r) for v in vals):
            return False
        r = c.get("values_count")
        if r is not None and not _range_ok(len(vals), r):
            return False
        if c.get("is_empty") is True and vals:
            return False
        if c.get("is_null") is True and not any(v is None for v in raw):
            return False
        return True
    if "has_id" in c:
        return any(parse_point_id(x) == pid for x in c["has_id"])
    if "is_empty" in c:
        vals, _ = payload_values(payload, c["is_empty"]["key"])
        return not vals
    if "is_null" in c:
        _, raw = payload_values(payload, c["is_null"]["key"])
        return any(v is None for v in raw)
    if "nested" in c:
        _, raw = payload_values(payload, c["nested"]["key"])
        objs = []
        for v in raw:
            objs.extend(v if isinstance(v, list) else [v])
        return any(isinstance(o, dict) and filter_ok(c["nested"].get("filter"), pid, o)
                   for o in objs)
    return filter_ok(c, pid, payload)


def select_payload(payload, wp, default):
    if wp is None:
        wp = default
    if wp is True:
        return payload or {}
    if wp is False:
        return None
    payload = payload or {}
    if isinstance(wp, list):
        return {k: v for k, v in payload.items() if k in wp}
    if isinstance(wp, dict):
        if "include" in wp:
            inc = wp["include"] if isinstance(wp["include"], list) else [wp["include"]]
            return {k: v for k, v in payload.items() if k in inc}
        if "exclude" in wp:
            exc = wp["exclude"] if isinstance(wp["exclude"], list) else [wp["exclude"]]
            return {k: v for k, v in payload.items() if k not in exc}
    raise QError(400, "Format error in JSON body: data did not match any variant of untagged "
                      "enum WithPayloadInterface")


def vnorm(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n > 0 else list(v)


def vscore(dist, q, v):
    if dist in ("Cosine", "Dot"):
        return sum(a * b for a, b in zip(q, v))
    if dist == "Euclid":
        return math.sqrt(sum((a - b) ** 2 for a, b in zip(q, v)))
    return sum(abs(a - b) for a, b in zip(q, v))


# --------------------------------------------------------------------------
# application state
# --------------------------------------------------------------------------

FAULT_KINDS = {
    "responses": {"status", "drop", "expire_previous", "slow", "failed", "error_event",
                  "bad_json", "hang", "endless", "answer", "echo", "tool_calls",
                  "incomplete", "refusal"},
    "embeddings": {"status", "drop", "slow", "bad_json", "hang"},
    "qdrant": {"status", "slow", "down", "drop", "hang", "bad_json"},
}


class Standin(object):
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.stop = threading.Event()
        self.seed = args.seed if args.seed is not None else os.urandom(8).hex()
        self.faults = []
        self.consumed = []
        self.fault_seq = 0
        self.counts = {}
        self.responses = {}
        self.resp_counter = 0
        self.id_counter = 0
        self.collections = {}
        self.q_op = 0
        self.qdrant_no_query = bool(args.qdrant_no_query)
        self.log_dir = args.log_dir
        os.makedirs(self.log_dir, exist_ok=True)
        self.log_seq = 0
        for name in os.listdir(self.log_dir):
            m = re.match(r"^(\d+)-", name)
            if m and name.endswith(".json"):
                self.log_seq = max(self.log_seq, int(m.group(1)))
        self.reset_counts()
        self.load_state()

    # ---- counters / faults -------------------------------------------------
    def reset_counts(self):
        self.counts = {"requests": {"responses": 0, "embeddings": 0, "qdrant": 0,
                                    "other": 0},
                       "faults_consumed": {}, "responses_created": 0}

    def count_request(self, endpoint):
        with self.lock:
            self.counts["requests"][endpoint] = self.counts["requests"].get(endpoint, 0) + 1

    def add_faults(self, faults):
        if not isinstance(faults, list):
            raise ValueError("'faults' must be an array")
        new = []
        for f in faults:
            if not isinstance(f, dict):
                raise ValueError("each fault must be an object")
            f = dict(f)
            ep = f.get("endpoint", "responses")
            if ep not in FAULT_KINDS:
                raise ValueError("unknown endpoint %r (expected one of %s)"
                                 % (ep, ", ".join(sorted(FAULT_KINDS))))
            kind = f.get("kind")
            if kind not in FAULT_KINDS[ep]:
                raise ValueError("unknown kind %r for endpoint %r (expected one of %s)"
                                 % (kind, ep, ", ".join(sorted(FAULT_KINDS[ep]))))
            if kind == "status":
                st = f.get("status")
                if not isinstance(st, int) or isinstance(st, bool) or not 100 <= st <= 599:
                    raise ValueError("'status' fault needs an integer 'status' (100-599)")
            for k in ("delay", "retry_after", "max"):
                if k in f and f[k] is not None and not is_number(f[k]):
                    raise ValueError("%r must be a number" % k)
            if kind == "echo":
                if not isinstance(f.get("text"), str):
                    raise ValueError("'echo' fault needs a string 'text'")
                sp = f.get("splits", [])
                if not isinstance(sp, list) or not all(
                        isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in sp):
                    raise ValueError("'splits' must be an array of offsets")
            if kind == "tool_calls":
                calls = f.get("calls")
                if not isinstance(calls, list) or not calls or not all(
                        isinstance(c, dict) and isinstance(c.get("name"), str) and
                        isinstance(c.get("arguments"), str) for c in calls):
                    raise ValueError("'tool_calls' fault needs 'calls': an array of "
                                     "{name, arguments} (strings)")
            if "path_contains" in f and not isinstance(f["path_contains"], str):

                raise ValueError("'path_contains' must be a string")
            rep = f.pop("repeat", 1)
            if not isinstance(rep, int) or isinstance(rep, bool) or not 1 <= rep <= 1000:
                raise ValueError("'repeat' must be an integer 1..1000")
            f["endpoint"] = ep
            for _ in range(rep):
                g = dict(f)
                new.append(g)
        with self.lock:
            for g in new:
                self.fault_seq += 1
                g["fault_id"] = self.fault_seq
                self.faults.append(g)
        return len(new)

    def pop_fault(self, endpoint, path, req_seq):
        with self.lock:
            for i, f in enumerate(self.faults):
                if f["endpoint"] != endpoint:
                    continue
                pc = f.get("path_contains")
                if pc and pc not in path:
                    continue
                del self.faults[i]
                fc = self.counts["faults_consumed"]
                fc[f["kind"]] = fc.get(f["kind"], 0) + 1
                rec = dict(f)
                rec["request_seq"] = req_seq
                rec["path"] = path
                self.consumed.append(rec)
                del self.consumed[:-200]
                return f
        return None

    def control_state(self):
        with self.lock:
            return {
                "queue": [dict(f) for f in self.faults],
                "consumed": [dict(f) for f in self.consumed],
                "counts": json.loads(json.dumps(self.counts)),
                "stored_responses": len(self.responses),
                "response_counter": self.resp_counter,
                "collections": sorted(self.collections),
                "qdrant_no_query": self.qdrant_no_query,
                "log_seq": self.log_seq,
                "embed_dim": self.args.embed_dim,
            }

    # ---- ids -----------------------------------------------------------------
    def new_hex_id(self, prefix):
        with self.lock:
            self.id_counter += 1
            c = self.id_counter
        return prefix + hashlib.sha256(("%s:%s:%d" % (self.seed, prefix, c)).encode()).hexdigest()[:48]

    # ---- persistence -------------------------------------------------------------
    def load_state(self):
        path = self.args.state
        if not path or not os.path.exists(path):
            return
        try:
            with open(path, "r", encoding="utf-8") as f:
                data = json.load(f)
            self.responses = data.get("responses", {})
            self.resp_counter = int(data.get("resp_counter", 0))
            self.id_counter = int(data.get("id_counter", 0))
            if data.get("seed") and self.args.seed is None:
                self.seed = data["seed"]
            q = data.get("qdrant", {})
            self.collections = q.get("collections", {})
            self.q_op = int(q.get("op", 0))
        except Exception as e:  # corrupt state: start fresh but say so
            sys.stderr.write("openai_standin: ignoring unreadable state file %s: %s\n" % (path, e))
            self.responses, self.collections = {}, {}

    def save_state(self):
        path = self.args.state
        if not path:
            return
        with self.lock:
            data = {"version": 1, "seed": self.seed, "resp_counter": self.resp_counter,
                    "id_counter": self.id_counter, "responses": self.responses,
                    "qdrant": {"op": self.q_op, "collections": self.collections}}
            try:
                atomic_write(path, json.dumps(data, ensure_ascii=False))
            except OSError as e:
                sys.stderr.write("openai_standin: cannot write state %s: %s\n" % (path, e))

    # ---- request log -------------------------------------------------------------
    def log_request(self, entry):
        with self.lock:
            self.log_seq += 1
            seq = self.log_seq
        entry["seq"] = seq
        name = "%04d-%s-%s.json" % (seq, re.sub(r"[^A-Za-z]", "_", entry["method"]) or "X",
                                     sanitize_path(entry["path"]))
        path = os.path.join(self.log_dir, name)
        self.write_log(path, entry)
        return path

    def write_log(self, path, entry):
        try:
            atomic_write(path, json.dumps(entry, ensure_ascii=False, indent=1))
        except OSError as e:
            sys.stderr.write("openai_standin: cannot write log %s: %s\n" % (path, e))


# --------------------------------------------------------------------------
# SSE writer (chunked transfer encoding)
# --------------------------------------------------------------------------


class SSE(object):
    def __init__(self, handler):
        self.h = handler
        self.seq = 0
        self.types = []

    def start(self, extra_headers=()):
        h = self.h
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache")
        # honour "Connection: close" from the client (send_header would reset it)
        h.send_header("Connection", "close" if h.close_connection else "keep-alive")
        for k, v in extra_headers:
            h.send_header(k, v)
        h.end_headers()
        h.headers_sent = True
        h.outcome["status"] = 200
        h.outcome["stream"] = True
        h.outcome["events"] = self.types

    def chunk(self, data):
        try:
            self.h.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            self.h.wfile.flush()
        except (OSError, ValueError):
            raise ClientGone()

    def event(self, etype, fields):
        payload = {"type": etype}
        payload.update(fields)
        payload["sequence_number"] = self.seq
        self.seq += 1
        self.types.append(etype)
        self.chunk(("event: %s\ndata: %s\n\n" % (etype, jdump(payload))).encode("utf-8"))

    def end(self):
        try:
            self.h.wfile.write(b"0\r\n\r\n")
            self.h.wfile.flush()
        except (OSError, ValueError):
            raise ClientGone()


# --------------------------------------------------------------------------
# HTTP handler
# --------------------------------------------------------------------------

OPENAI_STATUS_BODIES = {
    400: ("Bad request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to perform this request.", "invalid_request_error", None),
    404: ("The requested resource was not found.", "invalid_request_error", None),
    408: ("Request timed out.", "timeout", None),
    409: ("The request conflicted with another request.", "invalid_request_error", None),
    429: ("Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
          "Please try again in 20s. Visit https://platform.openai.com/account/rate-limits "
          "to learn more.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
    504: ("Gateway timeout.", "server_error", None),
}
QUOTA_MSG = ("You exceeded your current quota, please check your plan and billing details. For "
             "more information on this error, read the docs: "
             "https://platform.openai.com/docs/guides/error-codes/api-errors.")
CLOUDFLARE_HTML = ("<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s"
                   "</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n")
MODELS = ["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "gpt-5", "gpt-5-mini",
          "gpt-5-nano", "o4-mini", "text-embedding-3-small", "text-embedding-3-large",
          "text-embedding-ada-002"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "openai-standin/1.0"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are closed after this

    def version_string(self):
        return self.server_version

    @property
    def app(self):
        return self.server.app

    def log_message(self, fmt, *a):
        if self.app.args.verbose:
            sys.stderr.write("standin: %s - %s\n" % (self.address_string(), fmt % a))

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    # ---- plumbing --------------------------------------------------------------
    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    raise ClientGone()
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise QError(400, "bad chunk size")
                if n == 0:
                    while True:  # trailers
                        t = self.rfile.readline(8192)
                        if not t or t in (b"\r\n", b"\n"):
                            break
                    return bytes(out)
                if len(out) + n > MAX_BODY:
                    raise QError(413, "request body too large")
                data = self.rfile.read(n)
                if len(data) < n:
                    raise ClientGone()
                out += data
                self.rfile.readline(8)
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        try:
            n = int(cl)
        except ValueError:
            raise QError(400, "bad Content-Length")
        if n < 0:
            raise QError(400, "bad Content-Length")
        if n > MAX_BODY:
            raise QError(413, "request body too large")
        data = self.rfile.read(n) if n else b""
        if len(data) < n:
            raise ClientGone()
        return data

    def send_raw(self, status, body, ctype="application/json", headers=()):
        if isinstance(body, str):
            body = body.encode("utf-8")
        try:
            self.send_response(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.headers_sent = True
            if self.command != "HEAD" and body:
                self.wfile.write(body)
            self.wfile.flush()
        except (OSError, ValueError):
            raise ClientGone()
        self.outcome["status"] = status

    def send_json(self, status, obj, headers=()):
        self.send_raw(status, jdump(obj), "application/json", headers)

    def openai_headers(self):
        return [("x-request-id", "req_" + os.urandom(16).hex()),
                ("openai-version", "2020-10-01"),
                ("openai-processing-ms", str(int((time.time() - self.t0) * 1000)))]

    def oai_error(self, err, headers=()):
        self.send_json(err.status, err.body(), list(self.openai_headers()) + list(headers))

    def sleep(self, seconds):
        seconds = max(0.0, min(float(seconds or 0), MAX_SLEEP))
        self.app.stop.wait(seconds)

    def abort(self, reset=False):
        """Close the connection without (further) response."""
        self.close_connection = True
        self.outcome["aborted"] = "reset" if reset else "closed"
        try:
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                try:
                    self.rfile.close()
                except Exception:
                    pass
                self.connection.close()
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise Dropped()

    def hang(self, fault):
        limit = fault.get("max")
        limit = DEFAULT_HANG if limit is None else max(0.0, min(float(limit), MAX_HANG))
        deadline = time.time() + limit
        sock = self.connection
        self.outcome["hang"] = True
        while time.time() < deadline and not self.app.stop.is_set():
            try:
                r, _, _ = select.select([sock], [], [], 0.25)
                if r:
                    d = sock.recv(1, socket.MSG_PEEK)
                    if not d:
                        self.outcome["hang_end"] = "client_closed"
                        break
                    time.sleep(0.25)
            except (OSError, ValueError):
                self.outcome["hang_end"] = "client_error"
                break
        else:
            self.outcome["hang_end"] = "timeout"
        self.abort()

    # ---- dispatch ------------------------------------------------------------------
    def dispatch(self):
        app = self.app
        self.t0 = time.time()
        self.headers_sent = False
        self.outcome = {"status": None, "fault": None}
        split = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(split.path) or "/"
        qs = split.query
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(qs, keep_blank_values=True).items()}
        log_path, entry = None, None
        body_raw, body, body_ok, body_err = b"", None, False, None
        try:
            try:
                body_raw = self.read_body()
            except QError as e:
                body_err = e
            if body_raw:
                try:
                    body = json.loads(body_raw.decode("utf-8"))
                    body_ok = True
                except (ValueError, UnicodeDecodeError, RecursionError) as e:
                    body = body_raw.decode("utf-8", "replace")
                    body_err = body_err or e
            is_control = path == "/__control"
            if not is_control or app.args.log_control:
                hdrs = {}
                for k, v in self.headers.items():
                    k = k.lower()
                    if k in ("authorization", "api-key"):
                        v = "<redacted>"
                    hdrs[k] = (hdrs[k] + ", " + v) if k in hdrs else v
                auth = self.headers.get("Authorization")
                entry = {"seq": None, "time": self.t0, "method": self.command, "path": path,
                         "query": query, "query_string": qs, "headers": hdrs,
                         "auth": {"authorization_present": auth is not None,
                                  "authorization_scheme": auth.split(" ", 1)[0] if auth else None,
                                  "api_key_present": self.headers.get("api-key") is not None},
                         "body": body, "client": "%s:%s" % self.client_address[:2]}
                log_path = app.log_request(entry)
            self.req_seq = entry["seq"] if entry else None
            if isinstance(body_err, QError):
                self.close_connection = True
                raise body_err
            if is_control:
                self.handle_control(path, body, body_ok, body_raw)
            elif path == "/v1" or path.startswith("/v1/"):
                app.count_request("embeddings" if path == "/v1/embeddings" else "responses"
                                  if path.startswith("/v1/responses") else "other")
                self.handle_openai(path, body, body_ok, body_raw, body_err)
            elif (path in ("/", "/healthz", "/livez", "/readyz", "/telemetry", "/metrics")
                  or path.startswith("/collections") or path.startswith("/cluster")):
                app.count_request("qdrant")
                self.handle_qdrant(path, query, body, body_ok, body_raw, body_err)
            else:
                app.count_request("other")
                self.oai_error(OAIError(404, "Invalid URL (%s %s)" % (self.command, path)))
        except QError as e:
            if not self.headers_sent:
                try:
                    self.send_json(e.status, {"error": e.message})
                except ClientGone:
                    self.close_connection = True
        except (ClientGone, Dropped):
            self.close_connection = True
            self.outcome.setdefault("aborted", "client_gone")
        except Exception:  # never crash the server
            tb = traceback.format_exc()
            sys.stderr.write("openai_standin: internal error:\n%s" % tb)
            self.outcome["internal_error"] = tb.splitlines()[-1]
            if not self.headers_sent:
                try:
                    self.close_connection = True
                    self.send_json(500, {"error": {"message": "stand-in internal error",
                                                   "type": "server_error", "param": None,
                                                   "code": None}})
                except Exception:
                    pass
            else:
                self.close_connection = True
        finally:
            if entry is not None:
                self.outcome["duration_s"] = round(time.time() - self.t0, 4)
                entry["response"] = self.outcome
                app.write_log(log_path, entry)

    # ---- /__control -----------------------------------------------------------------
    def handle_control(self, path, body, body_ok, raw):
        app = self.app
        if self.command == "GET":
            return self.send_json(200, app.control_state())
        if self.command != "POST":
            return self.send_json(405, {"error": "use GET or POST"})
        if raw and not body_ok:
            return self.send_json(400, {"error": "body is not valid JSON"})
        if body is None:
            body = {}
        if not isinstance(body, dict):
            return self.send_json(400, {"error": "body must be a JSON object"})
        known = {"faults", "reset", "wipe", "forget", "qdrant_no_query"}
        unknown = [k for k in body if k not in known]
        if unknown:
            return self.send_json(400, {"error": "unknown control keys: %s (known: %s)"
                                                 % (", ".join(unknown), ", ".join(sorted(known)))})
        with app.lock:
            if body.get("reset"):
                app.faults = []
                app.consumed = []
                app.reset_counts()
            if body.get("wipe"):
                app.responses = {}
                app.collections = {}
                app.resp_counter = 0
                app.save_state()
            if "qdrant_no_query" in body:
                app.qdrant_no_query = bool(body["qdrant_no_query"])
            forget = body.get("forget")
            if forget is not None:
                if not isinstance(forget, list):
                    return self.send_json(400, {"error": "'forget' must be an array of ids"})
                for rid in forget:
                    app.responses.pop(rid, None)
                app.save_state()
        added = 0
        if "faults" in body:
            try:
                added = app.add_faults(body["faults"])
            except ValueError as e:
                return self.send_json(400, {"error": str(e)})
        st = app.control_state()
        st["added"] = added
        self.send_json(200, st)

    # ---- OpenAI ----------------------------------------------------------------------------
    def check_openai_auth(self):
        key = self.app.args.api_key
        if key is None:
            return True
        auth = self.headers.get("Authorization")
        if not auth or not auth.strip():
            self.oai_error(OAIError(
                401, "You didn't provide an API key. You need to provide your API key in an "
                     "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                     "YOUR_KEY), or as the password field (with blank username) if you're "
                     "accessing the API from your browser and are prompted for a username. You "
                     "can obtain an API key from https://platform.openai.com/account/api-keys.",
                None, None))
            return False
        given = auth[7:].strip() if auth.startswith("Bearer ") else auth.strip()
        if auth.startswith("Bearer ") and given == key:
            return True
        if len(given) > 8:
            masked = given[:3] + "*" * (len(given) - 7) + given[-4:]
        else:
            masked = "*" * len(given)
        self.oai_error(OAIError(401, "Incorrect API key provided: %s. You can find your API key "
                                     "at https://platform.openai.com/account/api-keys." % masked,
                                None, "invalid_api_key"))
        return False

    def handle_openai(self, path, body, body_ok, raw, body_err):
        if not self.check_openai_auth():
            return
        m = self.command
        if path == "/v1/responses" and m == "POST":
            return self.responses_create(body, body_ok, raw)
        mm = re.match(r"^/v1/responses/([^/]+)(/input_items)?$", path)
        if mm and m in ("GET", "DELETE"):
            return self.responses_get(mm.group(1), bool(mm.group(2)))
        if path == "/v1/embeddings" and m == "POST":
            return self.embeddings(body, body_ok, raw)
        if path == "/v1/models" and m == "GET":
            return self.send_json(200, {"object": "list", "data": [
                {"id": mid, "object": "model", "created": 1686935002, "owned_by": "system"}
                for mid in MODELS]}, self.openai_headers())
        mm = re.match(r"^/v1/models/([^/]+)$", path)
        if mm and m == "GET":
            mid = mm.group(1)
            if mid not in MODELS:
                return self.oai_error(OAIError(404, "The model '%s' does not exist or you do "
                                                    "not have access to it." % mid, "model",
                                               "model_not_found"))
            return self.send_json(200, {"id": mid, "object": "model", "created": 1686935002,
                                        "owned_by": "system"}, self.openai_headers())
        self.oai_error(OAIError(404, "Invalid URL (%s %s)" % (m, path)))

    def parse_openai_json(self, body, body_ok, raw):
        if not raw or not body_ok:
            raise OAIError(400, "We could not parse the JSON body of your request. (HINT: This "
                                "likely means you aren't using your HTTP library correctly. The "
                                "OpenAI API expects a JSON payload, but what was sent was not "
                                "valid JSON. If you have trouble figuring out how to fix this, "
                                "please contact us through our help center at help.openai.com.)")
        if not isinstance(body, dict):
            raise OAIError(400, "Invalid type for body: expected an object, but got %s instead."
                           % json_type_name(body), None, "invalid_type")
        return body

    def apply_status_fault(self, fault, endpoint):
        st = int(fault["status"])
        hdrs = list(self.openai_headers()) if endpoint != "qdrant" else []
        ra = fault.get("retry_after")
        if ra is not None:
            hdrs.append(("retry-after", str(int(math.ceil(ra))) if ra >= 1 else "%g" % ra))
            hdrs.append(("retry-after-ms", str(int(ra * 1000))))
        if endpoint == "qdrant":
            msg = fault.get("message") or {
                429: "Too many requests: stand-in injected fault",
                500: "Service internal error: stand-in injected fault",
                503: "Service unavailable: stand-in injected fault",
            }.get(st, "Stand-in injected HTTP %d" % st)
            return self.send_json(st, {"status": {"error": msg}, "time": self.qtime()}, hdrs)
        if fault.get("html"):
            reason = http.server.BaseHTTPRequestHandler.responses.get(st, ("Error",))[0]
            return self.send_raw(st, CLOUDFLARE_HTML % (st, reason, st, reason),
                                 "text/html", hdrs)
        msg, etype, code = OPENAI_STATUS_BODIES.get(
            st, ("Stand-in injected HTTP %d" % st, "server_error" if st >= 500
                 else "invalid_request_error", None))
        if fault.get("code") == "insufficient_quota":
            msg, etype, code = QUOTA_MSG, "insufficient_quota", "insufficient_quota"
        if st == 429:
            hdrs += [("x-ratelimit-limit-requests", "3"), ("x-ratelimit-remaining-requests", "0"),
                     ("x-ratelimit-reset-requests", "20s")]
        err = {"message": fault.get("message", msg), "type": fault.get("type", etype),
               "param": None, "code": fault.get("code", code)}
        self.send_json(st, {"error": err}, hdrs)

    def note_fault(self, fault):
        if fault is not None:
            self.outcome["fault"] = fault

    # -- responses --
    def response_obj(self, rid, created_at, body, status, output, usage, error=None,
                     incomplete=None):
        return {
            "id": rid, "object": "response", "created_at": created_at, "status": status,
            "background": bool(body.get("background", False)), "error": error,
            "incomplete_details": incomplete, "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": body.get("max_tool_calls"), "model": body["model"],
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "prompt_cache_key": body.get("prompt_cache_key"),
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "safety_identifier": body.get("safety_identifier"),
            "service_tier": body.get("service_tier") or "default",
            "store": body.get("store", True) is not False,
            "temperature": body.get("temperature", 1.0),
            "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_logprobs": body.get("top_logprobs", 0),
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation") or "disabled",
            "usage": usage, "user": body.get("user"),
            "metadata": body.get("metadata") or {},
        }

    def generate(self, body, pairs, items, parent, answer=None, calls=None):
        """Create the (final) response object and its chain record
        (answer: the text to answer instead of the usual one; calls: the
        function calls to answer with instead of a message)."""
        app = self.app
        with app.lock:
            app.resp_counter += 1
            n = app.resp_counter
            app.counts["responses_created"] += 1
        rid = app.new_hex_id("resp_")
        mid = app.new_hex_id("msg_")
        user_texts = [t for r, t in pairs if r == "user"]
        last_user = user_texts[-1] if user_texts else ""
        depth = (parent["depth"] + 1) if parent else 1
        ctx_user = (parent["ctx_user"] if parent else 0) + sum(len(t) for t in user_texts)
        this_all = sum(len(t) for _, t in pairs)
        prev_all = parent["ctx_all"] if parent else 0
        text = "Answer #%d to: %s (chain depth %d, context chars %d)" % (
            n, last_user[:60], depth, ctx_user)
        outputs = [it for it in items if it.get("type") == "function_call_output"]
        if outputs:
            text = "Answer #%d to tool outputs: %s (chain depth %d, context chars %d)" % (
                n, "; ".join("%s=%s" % (it["call_id"], str(it.get("output"))[:30])
                             for it in outputs), depth, ctx_user)
        if answer is not None:
            text = answer
        instr = body.get("instructions") or ""
        in_tokens = ceil_div4(prev_all + this_all + len(instr))
        status, incomplete = "completed", None
        mot = body.get("max_output_tokens")
        if mot is not None and ceil_div4(len(text)) > mot:
            text = text[:mot * 4]
            status, incomplete = "incomplete", {"reason": "max_output_tokens"}
        out_tokens = ceil_div4(len(text))
        usage = {"input_tokens": in_tokens, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": out_tokens,
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": in_tokens + out_tokens}
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        output = [{"id": mid, "type": "message", "status": status, "content": [part],
                   "role": "assistant"}]
        pending = []
        if calls:
            output = self.call_items(calls)
            pending = [c["call_id"] for c in output]
            text = "".join(c["arguments"] for c in output)
            out_tokens = ceil_div4(len(text))
            usage["output_tokens"] = out_tokens
            usage["total_tokens"] = in_tokens + out_tokens
        created_at = int(time.time())
        resp = self.response_obj(rid, created_at, body, status, output, usage,
                                 incomplete=incomplete)
        rec = {"response": resp, "depth": depth, "ctx_user": ctx_user,
               "ctx_all": prev_all + this_all + len(text), "input_items": items,
               "n": n, "pending_calls": pending}
        return resp, rec

    def call_items(self, calls):
        app = self.app
        out = []
        for c in calls:
            out.append({"id": app.new_hex_id("fc_"), "type": "function_call",
                        "status": "completed", "arguments": c["arguments"],
                        "call_id": c.get("call_id") or app.new_hex_id("call_")[:29],
                        "name": c["name"]})
        return out

    def store(self, rec):
        if rec["response"].get("store") is False:
            return
        app = self.app
        with app.lock:
            app.responses[rec["response"]["id"]] = rec
            app.save_state()

    def responses_get(self, rid, input_items):
        app = self.app
        with app.lock:
            rec = app.responses.get(rid)
            if rec is not None and self.command == "DELETE":
                del app.responses[rid]
                app.save_state()
        if rec is None:
            return self.oai_error(OAIError(404, "Response with id '%s' not found." % rid,
                                           None, None))
        if self.command == "DELETE":
            return self.send_json(200, {"id": rid, "object": "response.deleted",
                                        "deleted": True}, self.openai_headers())
        if input_items:
            data = []
            for it in rec.get("input_items", []):
                it = dict(it)
                it.setdefault("id", "msg_" + hashlib.sha256(
                    (rid + jdump(it)).encode()).hexdigest()[:48])
                data.append(it)
            data.reverse()  # API default order is "desc"
            return self.send_json(200, {"object": "list", "data": data,
                                        "first_id": data[0]["id"] if data else None,
                                        "last_id": data[-1]["id"] if data else None,
                                        "has_more": False}, self.openai_headers())
        self.send_json(200, rec["response"], self.openai_headers())

    def responses_create(self, body, body_ok, raw):
        app = self.app
        try:
            body = self.parse_openai_json(body, body_ok, raw)
            pairs, items = validate_responses_body(body, app.args.lenient)
        except OAIError as e:
            return self.oai_error(e)
        stream = body.get("stream") is True
        fault = app.pop_fault("responses", "/v1/responses", self.req_seq)
        self.note_fault(fault)
        kind = fault["kind"] if fault else None
        if kind == "status":
            return self.apply_status_fault(fault, "responses")
        if kind == "hang":
            return self.hang(fault)
        if kind == "endless" and not stream:
            return self.endless_body(fault)
        if kind == "slow" and not stream:
            self.sleep(fault.get("delay", 1))
        parent = None
        prev = body.get("previous_response_id")
        if prev:
            with app.lock:
                if kind == "expire_previous":
                    if app.responses.pop(prev, None) is not None:
                        self.outcome["expired"] = prev
                        app.save_state()
                parent = app.responses.get(prev)
            if parent is None:
                return self.oai_error(OAIError(400, "Previous response with id '%s' not found."
                                               % prev, "previous_response_id",
                                               "previous_response_not_found"))
        try:
            check_tool_items(items, parent)
        except OAIError as e:
            return self.oai_error(e)
        calls = None
        if kind == "tool_calls":
            names = set(t.get("name") for t in body.get("tools") or []
                        if isinstance(t, dict) and t.get("type") == "function")
            # a model calls only the tools it was given
            calls = [c for c in fault["calls"] if c["name"] in names] or None
        if kind == "drop" and not stream:
            if fault.get("store"):

                resp, rec = self.generate(body, pairs, items, parent)
                self.store(rec)
                self.outcome["response_id"] = resp["id"]
            return self.abort(bool(fault.get("reset")))
        if kind == "error_event" and not stream:
            return self.oai_error(OAIError(500, fault.get("message", OPENAI_STATUS_BODIES[500][0]),
                                           None, None, "server_error"))
        answer = None
        if kind == "answer" or (kind == "slow" and "text" in fault):
            answer = str(fault.get("text", "")) * int(fault.get("times", 1))
        resp, rec = self.generate(body, pairs, items, parent, answer, calls)
        if kind == "echo":
            self.echo_text(resp, fault)
        if kind == "incomplete":
            self.incomplete(resp, fault)
        if kind == "refusal":
            self.refusal(resp, fault)
        self.outcome["response_id"] = resp["id"]
        if not stream:
            if kind == "failed":
                resp = dict(resp, status="failed", output=[], usage=None,
                            error={"code": fault.get("code", "server_error"),
                                   "message": fault.get("message",
                                                        "The model failed to generate a response.")})
                return self.send_json(200, resp, self.openai_headers())
            if kind == "bad_json":
                full = jdump(resp)
                self.store(rec)
                return self.send_raw(200, full[:max(1, len(full) // 2)], "application/json",
                                     self.openai_headers())
            self.store(rec)
            return self.send_json(200, resp, self.openai_headers())
        return self.stream_response(body, resp, rec, fault)

    def echo_text(self, resp, fault):
        """The answer becomes the fault's text, {api_key} the key."""
        text = fault["text"].replace("{api_key}", self.app.args.api_key or "")
        part = resp["output"][0]["content"][0]
        part["text"] = text
        usage = resp.get("usage")
        if usage:
            usage["output_tokens"] = ceil_div4(len(text))
            usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]

    def incomplete(self, resp, fault):
        """Cut short as the real API does at max_output_tokens: status
        "incomplete", incomplete_details.reason (default
        "max_output_tokens"), the message item "incomplete" with the text
        so far."""
        item = resp["output"][0]
        if item["type"] == "message":
            part = item["content"][0]
            part["text"] = part["text"][:max(1, len(part["text"]) // 2)]
            item["status"] = "incomplete"
        resp["status"] = "incomplete"
        resp["incomplete_details"] = {"reason": fault.get("reason", "max_output_tokens")}

    def refusal(self, resp, fault):
        """The message's only content part is a refusal part, as the real
        API sends it: {"type": "refusal", "refusal": text}."""
        item = resp["output"][0]
        if item["type"] == "message":
            item["content"] = [{"type": "refusal", "refusal": fault.get(
                "text", "I'm sorry, but I cannot assist with that request.")}]

    def stream_refusal(self, sse, final, rec, item, part):
        """content_part.added (refusal ""), refusal.delta, refusal.done,
        content_part.done, output_item.done, response.completed."""
        ids = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        sse.event("response.content_part.added", dict(ids, part=dict(part, refusal="")))
        text = part["refusal"]
        for i in range(0, len(text), 16):
            sse.event("response.refusal.delta", dict(ids, delta=text[i:i + 16]))
        sse.event("response.refusal.done", dict(ids, refusal=text))
        sse.event("response.content_part.done", dict(ids, part=part))
        sse.event("response.output_item.done", {"output_index": 0, "item": item})
        self.store(rec)
        sse.event("response.completed", {"response": final})
        sse.end()

    def stream_response(self, body, final, rec, fault):
        kind = fault["kind"] if fault else None
        delay = fault.get("delay", 1) if kind == "slow" else 0
        sse = SSE(self)
        sse.start(self.openai_headers())
        base = dict(final, status="in_progress", output=[], usage=None, incomplete_details=None)
        sse.event("response.created", {"response": base})
        if kind == "failed":
            failed = dict(base, status="failed",
                          error={"code": fault.get("code", "server_error"),
                                 "message": fault.get("message",
                                                      "The model failed to generate a response.")})
            sse.event("response.failed", {"response": failed})
            return sse.end()
        if kind == "error_event":
            sse.event("error", {"code": fault.get("code", "server_error"),
                                "message": fault.get("message", "The server had an error while "
                                                     "processing your request. Sorry about that!"),
                                "param": None})
            return sse.end()
        sse.event("response.in_progress", {"response": base})
        if final["output"] and final["output"][0]["type"] == "function_call":
            return self.stream_calls(sse, final, rec, fault)
        item = final["output"][0]
        part = item["content"][0]
        sse.event("response.output_item.added", {
            "output_index": 0, "item": dict(item, status="in_progress", content=[])})
        if part["type"] == "refusal":
            return self.stream_refusal(sse, final, rec, item, part)
        text = part["text"]
        sse.event("response.content_part.added", {
            "item_id": item["id"], "output_index": 0, "content_index": 0,
            "part": dict(part, text="")})
        if kind == "endless":
            return self.endless_stream(sse, item, fault)
        words = re.findall(r"\s+|\S+\s*", text)
        chunks = ["".join(words[i:i + 3]) for i in range(0, len(words), 3)] or [""]
        if kind == "echo":
            cuts = [0] + sorted(set(min(x, len(text)) for x in fault.get("splits", []))) + [len(text)]
            chunks = [text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a] or [""]
        obf = (body.get("stream_options") or {}).get("include_obfuscation", True) is not False
        for i, ch in enumerate(chunks):
            if i > 0 and delay:
                self.sleep(delay)
                if self.app.stop.is_set():
                    return self.abort()
            if kind == "bad_json" and i == 1:
                sse.types.append("<bad_json>")
                sse.chunk(('event: response.output_text.delta\ndata: {"type":"response.output_'
                           'text.delta","item_id":"%s","delta":"trunc\n\n' % item["id"]).encode())
                if fault.get("then") == "continue":
                    continue
                return sse.end()
            ev = {"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": ch,
                  "logprobs": []}
            if obf:
                ev["obfuscation"] = os.urandom(4).hex()[:max(1, 12 - len(ch) % 12)]
            sse.event("response.output_text.delta", ev)
            if kind == "drop" and i == min(1, len(chunks) - 1):
                if fault.get("store"):
                    self.store(rec)
                return self.abort(bool(fault.get("reset")))
        sse.event("response.output_text.done", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "text": text,
            "logprobs": []})
        sse.event("response.content_part.done", {
            "item_id": item["id"], "output_index": 0, "content_index": 0, "part": part})
        sse.event("response.output_item.done", {"output_index": 0, "item": item})
        self.store(rec)
        terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        sse.event(terminal, {"response": final})
        sse.end()

    def stream_calls(self, sse, final, rec, fault):
        """Each function call: output_item.added (arguments ""), its
        arguments in function_call_arguments.delta events of `delta_chars`
        characters (default 8), .done, output_item.done; then
        response.completed."""
        size = max(1, int(fault.get("delta_chars", 8)))
        for i, item in enumerate(final["output"]):
            args = item["arguments"]
            sse.event("response.output_item.added", {
                "output_index": i, "item": dict(item, status="in_progress", arguments="")})
            for j in range(0, len(args), size):
                sse.event("response.function_call_arguments.delta", {
                    "item_id": item["id"], "output_index": i, "delta": args[j:j + size]})
            sse.event("response.function_call_arguments.done", {
                "item_id": item["id"], "output_index": i, "name": item["name"],
                "arguments": args})
            sse.event("response.output_item.done", {"output_index": i, "item": item})
        self.store(rec)
        sse.event("response.completed", {"response": final})
        sse.end()

    def endless_limit(self, fault):
        limit = fault.get("max")
        return DEFAULT_ENDLESS if limit is None else max(0, min(int(limit), MAX_ENDLESS))

    def endless_stream(self, sse, item, fault):
        """output_text.delta events, 4 KiB each, until the client goes."""
        limit = self.endless_limit(fault)
        sse.types.append("<endless>")
        ev = {"type": "response.output_text.delta", "item_id": item["id"],
              "output_index": 0, "content_index": 0, "delta": "x" * 4096,
              "logprobs": []}
        data = ("event: response.output_text.delta\ndata: %s\n\n" % jdump(ev)).encode()
        sent = 0
        try:
            while sent < limit and not self.app.stop.is_set():
                sse.chunk(data)
                sent += len(data)
        finally:
            self.outcome["endless_bytes"] = sent
        return self.abort()

    def endless_body(self, fault):
        """A 200 JSON body that never ends (chunked), until the client goes."""
        limit = self.endless_limit(fault)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.headers_sent = True
        self.outcome["status"] = 200
        data = b'{"id":"resp_endless","object":"response","output_text":"'
        sent = 0
        try:
            while sent < limit and not self.app.stop.is_set():
                self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
                self.wfile.flush()
                sent += len(data)
                data = b"x" * 4096
        except (OSError, ValueError):
            self.outcome["endless_bytes"] = sent
            raise ClientGone()
        self.outcome["endless_bytes"] = sent
        return self.abort()

    # -- embeddings --
    def embeddings(self, body, body_ok, raw):
        app = self.app
        try:
            body = self.parse_openai_json(body, body_ok, raw)
            if not app.args.lenient:
                for k in body:
                    if k not in EMBEDDINGS_PARAMS:
                        raise OAIError(400, "Unknown parameter: '%s'." % k, k, "unknown_parameter")
            if body.get("model") is None:
                raise _missing("model")
            if not isinstance(body["model"], str):
                raise _invalid_type("model", "a string", body["model"])
            if "input" not in body:
                raise _missing("input")
            inp = body["input"]
            bad = OAIError(400, "'$.input' is invalid. Please check the API reference: "
                                "https://platform.openai.com/docs/api-reference.", None, None)
            if isinstance(inp, str):
                texts = [inp]
            elif isinstance(inp, list) and inp:
                if all(isinstance(x, str) for x in inp):
                    texts = inp
                elif all(isinstance(x, int) and not isinstance(x, bool) for x in inp):
                    texts = [inp]
                elif all(isinstance(x, list) and x and all(isinstance(y, int) and not
                         isinstance(y, bool) for y in x) for x in inp):
                    texts = inp
                else:
                    raise bad
            else:
                raise bad
            if len(texts) > 2048 or any(isinstance(t, str) and not t for t in texts):
                raise bad
            dim = app.args.embed_dim
            if body.get("dimensions") is not None:
                d = body["dimensions"]
                if not isinstance(d, int) or isinstance(d, bool):
                    raise _invalid_type("dimensions", "an integer", d)
                if d < 1 or d > 4096:
                    raise OAIError(400, "Invalid 'dimensions': integer out of range.",
                                   "dimensions", "invalid_value")
                dim = d
            fmt = body.get("encoding_format", "float")
            if fmt not in ("float", "base64"):
                raise OAIError(400, "Invalid value: '%s'. Supported values are: 'float' and "
                                    "'base64'." % fmt, "encoding_format", "invalid_value")
        except OAIError as e:
            return self.oai_error(e)
        fault = app.pop_fault("embeddings", "/v1/embeddings", self.req_seq)
        self.note_fault(fault)
        kind = fault["kind"] if fault else None
        if kind == "status":
            return self.apply_status_fault(fault, "embeddings")
        if kind == "hang":
            return self.hang(fault)
        if kind == "drop":
            return self.abort(bool(fault.get("reset")))
        if kind == "slow":
            self.sleep(fault.get("delay", 1))
        data, ptoks = [], 0
        for i, t in enumerate(texts):
            vec = embed_text(t, dim)
            ptoks += ceil_div4(len(t)) if isinstance(t, str) else len(t)
            if fmt == "base64":
                emb = base64.b64encode(struct.pack("<%df" % dim, *vec)).decode("ascii")
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        out = {"object": "list", "data": data, "model": body["model"],
               "usage": {"prompt_tokens": ptoks, "total_tokens": ptoks}}
        if kind == "bad_json":
            full = jdump(out)
            return self.send_raw(200, full[:max(1, len(full) // 2)], "application/json",
                                 self.openai_headers())
        self.send_json(200, out, self.openai_headers())

    # ---- Qdrant ----------------------------------------------------------------------------
    def qtime(self):
        return round(time.time() - self.t0, 6)

    def q_ok(self, result, status=200):
        self.send_json(status, {"result": result, "status": "ok", "time": self.qtime()})

    def q_err(self, status, msg):
        self.send_json(status, {"status": {"error": msg}, "time": self.qtime()})

    def q_body(self, body, body_ok, raw, body_err, required=True):
        if not raw:
            if required:
                raise QError(400, "Json deserialize error: EOF while parsing a value at line 1 "
                                  "column 0")
            return {}
        if not body_ok:
            if isinstance(body_err, json.JSONDecodeError):
                raise QError(400, "Format error in JSON body: %s" % fmt_py_json_error(body_err))
            raise QError(400, "Format error in JSON body: invalid UTF-8 or JSON")
        if not isinstance(body, dict):
            raise QError(400, "Format error in JSON body: invalid type: %s, expected a map"
                         % json_type_name(body))
        return body

    def q_coll(self, name):
        c = self.app.collections.get(name)
        if c is None:
            raise QError(404, "Not found: Collection `%s` doesn't exist!" % name)
        return c

    def handle_qdrant(self, path, query, body, body_ok, raw, body_err):
        app = self.app
        m = self.command
        if path == "/":
            return self.send_json(200, {"title": "qdrant - vector search engine",
                                        "version": "1.13.0", "commit": "standin"})
        if path in ("/healthz", "/livez", "/readyz"):
            return self.send_raw(200, "%s check passed" % path[1:], "text/plain; charset=utf-8")
        key = app.args.qdrant_api_key
        if key is not None:
            given = self.headers.get("api-key")
            if given is None:
                auth = self.headers.get("Authorization") or ""
                if auth.startswith("Bearer "):
                    given = auth[7:]
            if given is None:
                return self.send_raw(401, "Must provide an API key or an Authorization bearer "
                                          "token", "text/plain; charset=utf-8")
            if given != key:
                return self.send_raw(401, "Invalid API key or JWT", "text/plain; charset=utf-8")
        fault = app.pop_fault("qdrant", path, self.req_seq)
        self.note_fault(fault)
        kind = fault["kind"] if fault else None
        if kind == "status":
            return self.apply_status_fault(fault, "qdrant")
        if kind in ("down", "drop"):
            return self.abort(bool(fault.get("reset")))
        if kind == "hang":
            return self.hang(fault)
        if kind == "slow":
            self.sleep(fault.get("delay", 1))
        if kind == "bad_json":
            return self.send_raw(200, '{"result":{"points":[{"id":', "application/json")
        parts = [p for p in path.split("/") if p]
        try:
            return self.qdrant_route(parts, query, body, body_ok, raw, body_err)
        except QError as e:
            if e.status == 404 and e.message == "":
                return self.send_raw(404, b"", None)
            return self.q_err(e.status, e.message)
        except RecursionError:
            return self.q_err(400, "Format error in JSON body: recursion limit exceeded")

    def qdrant_route(self, parts, query, body, body_ok, raw, body_err):
        app = self.app
        m = self.command
        not_found = QError(404, "")  # actix default: empty body
        if parts[0] != "collections":
            raise not_found
        if len(parts) == 1:
            if m != "GET":
                raise not_found
            with app.lock:
                names = sorted(app.collections)
            return self.q_ok({"collections": [{"name": n} for n in names]})
        name = parts[1]
        rest = parts[2:]
        wait = str(query.get("wait", "false")).lower() == "true"
        if not rest:
            if m == "GET":
                with app.lock:
                    return self.q_ok(self.coll_info(self.q_coll(name)))
            if m == "PUT":
                return self.create_collection(name, self.q_body(body, body_ok, raw, body_err))
            if m == "PATCH":
                self.q_body(body, body_ok, raw, body_err)
                with app.lock:
                    self.q_coll(name)
                return self.q_ok(True)
            if m == "DELETE":
                with app.lock:
                    existed = app.collections.pop(name, None) is not None
                    app.save_state()
                return self.q_ok(existed)
            raise not_found
        if rest == ["exists"] and m == "GET":
            with app.lock:
                return self.q_ok({"exists": name in app.collections})
        if rest == ["index"] and m == "PUT":
            b = self.q_body(body, body_ok, raw, body_err)
            fname = b.get("field_name")
            if not isinstance(fname, str):
                raise QError(400, "Format error in JSON body: missing field `field_name`")
            schema = b.get("field_schema")
            if isinstance(schema, dict):
                schema = schema.get("type")
            with app.lock:
                c = self.q_coll(name)
                c["payload_schema"][fname] = schema or "keyword"
                return self.q_ok(self.q_opres(wait))
        if len(rest) == 2 and rest[0] == "index" and m == "DELETE":
            with app.lock:
                c = self.q_coll(name)
                c["payload_schema"].pop(rest[1], None)
                return self.q_ok(self.q_opres(wait))
        if rest[0] != "points":
            raise not_found
        sub = rest[1:]
        if not sub:
            if m == "PUT":
                return self.upsert(name, self.q_body(body, body_ok, raw, body_err), wait)
            if m == "POST":
                return self.retrieve(name, self.q_body(body, body_ok, raw, body_err))
            raise not_found
        op = "/".join(sub)
        if m == "GET" and len(sub) == 1 and sub[0] not in ("query", "search", "scroll"):
            pid = parse_point_id(int(sub[0]) if sub[0].isdigit() else sub[0])
            with app.lock:
                c = self.q_coll(name)
                p = c["points"].get(pid_key(pid))
                if p is None:
                    raise QError(404, "Not found: No point with id %s found" % sub[0])
                return self.q_ok(self.record(p, True, False))
        if m != "POST" and not (m == "PUT" and op == "payload"):
            raise not_found
        if op == "query":
            if app.qdrant_no_query:
                raise not_found
            return self.search(name, self.q_body(body, body_ok, raw, body_err), "query")
        b = self.q_body(body, body_ok, raw, body_err)
        if op == "search":
            return self.search(name, b, "search")
        if op == "scroll":
            return self.scroll(name, b)
        if op == "count":
            validate_filter(b.get("filter"))
            with app.lock:
                c = self.q_coll(name)
                n = sum(1 for p in c["points"].values()
                        if filter_ok(b.get("filter"), parse_point_id(p["id"]), p["payload"]))
            return self.q_ok({"count": n})
        if op == "delete":
            return self.delete_points(name, b, wait)
        if op == "payload":
            return self.set_payload(name, b, wait, overwrite=(m == "PUT"))
        if op == "payload/delete":
            return self.delete_payload(name, b, wait)
        raise not_found

    def q_opres(self, wait):
        self.app.q_op += 1
        self.app.save_state()
        return {"operation_id": self.app.q_op, "status": "completed" if wait else "acknowledged"}

    def coll_info(self, c):
        schema = {}
        for k, t in c["payload_schema"].items():
            cnt = sum(1 for p in c["points"].values() if payload_values(p["payload"] or {}, k)[0])
            schema[k] = {"data_type": t, "params": {}, "points": cnt}
        return {
            "status": "green", "optimizer_status": "ok", "indexed_vectors_count": 0,
            "points_count": len(c["points"]), "segments_count": 1,
            "config": {
                "params": {"vectors": {"size": c["size"], "distance": c["distance"]},
                           "shard_number": 1, "replication_factor": 1,
                           "write_consistency_factor": 1, "on_disk_payload": True},
                "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000,
                                "max_indexing_threads": 0, "on_disk": False},
                "optimizer_config": {"deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                     "default_segment_number": 0, "max_segment_size": None,
                                     "memmap_threshold": None, "indexing_threshold": 20000,
                                     "flush_interval_sec": 5, "max_optimization_threads": None},
                "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
                "quantization_config": None,
            },
            "payload_schema": schema,
        }

    def create_collection(self, name, b):
        app = self.app
        if not name or len(name) > 255 or re.search(r'[<>:"/\\|?*\x00]', name):
            raise QError(422, "Validation error in path parameters: [name: collection name "
                              "contains an invalid character]")
        if "vectors" not in b:
            raise QError(400, "Format error in JSON body: missing field `vectors`")
        v = b["vectors"]
        if not isinstance(v, dict):
            raise QError(400, "Format error in JSON body: data did not match any variant of "
                              "untagged enum VectorsConfig")
        if "size" not in v:
            raise QError(400, "Wrong input: named vectors are not supported by the stand-in; "
                              "use {\"size\":N,\"distance\":\"Cosine\"}" if v else
                              "Format error in JSON body: missing field `size`")
        size = v.get("size")
        if not isinstance(size, int) or isinstance(size, bool):
            raise QError(400, "Format error in JSON body: invalid type: %s, expected u64"
                         % json_type_name(size))
        if size < 1 or size > 65536:
            raise QError(422, "Validation error in JSON body: [vectors.size: value %d invalid, "
                              "must be from 1 to 65536]" % size)
        dist = v.get("distance")
        if dist is None:
            raise QError(400, "Format error in JSON body: missing field `distance`")
        if dist not in DISTANCES:
            raise QError(400, "Format error in JSON body: unknown variant `%s`, expected one of "
                              "`Cosine`, `Euclid`, `Dot`, `Manhattan`" % dist)
        with app.lock:
            if name in app.collections:
                raise QError(409, "Wrong input: Collection `%s` already exists!" % name)
            app.collections[name] = {"size": size, "distance": dist, "points": {},
                                     "payload_schema": {}}
            app.save_state()
        self.q_ok(True)

    def check_vector(self, c, v):
        if isinstance(v, dict):
            if len(v) == 1 and "" in v:
                v = v[""]
            else:
                raise QError(400, "Wrong input: Not existing vector name error: %s"
                             % ", ".join(sorted(v)))
        if not isinstance(v, list) or not all(is_number(x) for x in v):
            raise QError(400, "Format error in JSON body: data did not match any variant of "
                              "untagged enum VectorStruct")
        if len(v) != c["size"]:
            raise QError(400, "Wrong input: Vector dimension error: expected dim: %d, got %d"
                         % (c["size"], len(v)))
        v = [float(x) for x in v]
        return vnorm(v) if c["distance"] == "Cosine" else v

    def upsert(self, name, b, wait):
        app = self.app
        if "points" in b:
            pts = b["points"]
            if not isinstance(pts, list):
                raise QError(400, "Format error in JSON body: invalid type: %s, expected a "
                                  "sequence" % json_type_name(pts))
        elif "batch" in b:
            bt = b["batch"]
            if not isinstance(bt, dict) or not isinstance(bt.get("ids"), list) \
                    or not isinstance(bt.get("vectors"), list):
                raise QError(400, "Format error in JSON body: invalid batch")
            pls = bt.get("payloads") or [None] * len(bt["ids"])
            if len(bt["vectors"]) != len(bt["ids"]) or len(pls) != len(bt["ids"]):
                raise QError(400, "Wrong input: number of ids, vectors and payloads differ")
            pts = [{"id": i, "vector": v, "payload": p}
                   for i, v, p in zip(bt["ids"], bt["vectors"], pls)]
        else:
            raise QError(400, "Format error in JSON body: data did not match any variant of "
                              "untagged enum PointInsertOperations")
        parsed = []
        for p in pts:
            if not isinstance(p, dict):
                raise QError(400, "Format error in JSON body: invalid type: %s, expected struct "
                                  "PointStruct" % json_type_name(p))
            if "id" not in p:
                raise QError(400, "Format error in JSON body: missing field `id`")
            pid = parse_point_id(p["id"])
            if "vector" not in p:
                raise QError(400, "Format error in JSON body: missing field `vector`")
            pl = p.get("payload")
            if pl is not None and not isinstance(pl, dict):
                raise QError(400, "Format error in JSON body: invalid type: %s, expected a map"
                             % json_type_name(pl))
            parsed.append((pid, p["vector"], pl))
        with app.lock:
            c = self.q_coll(name)
            rows = [(pid, self.check_vector(c, v), pl) for pid, v, pl in parsed]
            app.q_op += 1
            for pid, v, pl in rows:
                c["points"][pid_key(pid)] = {"id": pid_out(pid), "vector": v,
                                             "payload": pl or {}, "version": app.q_op}
            app.save_state()
            res = {"operation_id": app.q_op, "status": "completed" if wait else "acknowledged"}
        self.q_ok(res)

    def record(self, p, wp, wv, default_wp=True):
        r = {"id": p["id"]}
        pl = select_payload(p["payload"], wp, default_wp)
        if pl is not None:
            r["payload"] = pl
        if wv:
            r["vector"] = p["vector"]
        return r

    def retrieve(self, name, b):
        ids = b.get("ids")
        if not isinstance(ids, list):
            raise QError(400, "Format error in JSON body: missing field `ids`")
        pids = [parse_point_id(x) for x in ids]
        with self.app.lock:
            c = self.q_coll(name)
            out = []
            for pid in pids:
                p = c["points"].get(pid_key(pid))
                if p is not None:
                    out.append(self.record(p, b.get("with_payload"), b.get("with_vector")))
        self.q_ok(out)

    def _matching(self, c, flt):
        out = []
        for p in c["points"].values():
            pid = parse_point_id(p["id"])
            if filter_ok(flt, pid, p["payload"]):
                out.append((pid, p))
        return out

    def search(self, name, b, mode):
        app = self.app
        flt = b.get("filter")
        validate_filter(flt)
        limit = b.get("limit")
        if mode == "search" and limit is None:
            raise QError(400, "Format error in JSON body: missing field `limit`")
        limit = 10 if limit is None else limit
        offset = b.get("offset") or 0
        for k, v in (("limit", limit), ("offset", offset)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise QError(400, "Format error in JSON body: invalid value for `%s`, expected "
                                  "usize" % k)
        if limit < 1:
            raise QError(422, "Validation error in JSON body: [limit: value 0 invalid, must be "
                              "1 or larger]")
        thr = b.get("score_threshold")
        if thr is not None and not is_number(thr):
            raise QError(400, "Format error in JSON body: invalid type for `score_threshold`")
        using = b.get("using")
        if using not in (None, ""):
            raise QError(400, "Wrong input: Not existing vector name error: %s" % using)
        with app.lock:
            c = self.q_coll(name)
            exclude = None
            if mode == "search":
                if "vector" not in b:
                    raise QError(400, "Format error in JSON body: missing field `vector`")
                qv = b["vector"]
                if isinstance(qv, dict) and "vector" in qv:
                    if qv.get("name") not in (None, ""):
                        raise QError(400, "Wrong input: Not existing vector name error: %s"
                                     % qv.get("name"))
                    qv = qv["vector"]
            else:
                qv = b.get("query")
                if isinstance(qv, dict) and "nearest" in qv:
                    qv = qv["nearest"]
                elif isinstance(qv, dict):
                    raise QError(400, "Wrong input: query variant %s is not supported by the "
                                      "stand-in" % ", ".join(sorted(qv)))
                if qv is not None and not isinstance(qv, list):
                    pid = parse_point_id(qv)
                    p = c["points"].get(pid_key(pid))
                    if p is None:
                        raise QError(404, "Not found: No point with id %s found" % qv)
                    qv, exclude = p["vector"], pid
            if qv is None:  # no query: order by id
                cand = sorted(self._matching(c, flt), key=lambda t: pid_sort(t[0]))
                scored = [(0.0, pid, p) for pid, p in cand]
            else:
                qv = self.check_vector(c, qv)
                higher = c["distance"] in ("Cosine", "Dot")
                scored = []
                for pid, p in self._matching(c, flt):
                    if exclude is not None and pid == exclude:
                        continue
                    s = vscore(c["distance"], qv, p["vector"])
                    if thr is not None and ((higher and s < thr) or (not higher and s > thr)):
                        continue
                    scored.append((s, pid, p))
                scored.sort(key=lambda t: ((-t[0] if higher else t[0]), pid_sort(t[1])))
            scored = scored[offset:offset + limit]
            out = []
            for s, pid, p in scored:
                r = {"id": p["id"], "version": p.get("version", 0), "score": s}
                pl = select_payload(p["payload"], b.get("with_payload"), False)
                if pl is not None:
                    r["payload"] = pl
                if b.get("with_vector") or b.get("with_vectors"):
                    r["vector"] = p["vector"]
                out.append(r)
        self.q_ok({"points": out} if mode == "query" else out)

    def scroll(self, name, b):
        flt = b.get("filter")
        validate_filter(flt)
        limit = b.get("limit", 10)
        if limit is None:
            limit = 10
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise QError(400, "Format error in JSON body: invalid value for `limit`")
        off = b.get("offset")
        start = pid_sort(parse_point_id(off)) if off is not None else None
        with self.app.lock:
            c = self.q_coll(name)
            cand = sorted(self._matching(c, flt), key=lambda t: pid_sort(t[0]))
            if start is not None:
                cand = [t for t in cand if pid_sort(t[0]) >= start]
            page, nxt = cand[:limit], cand[limit:limit + 1]
            pts = [self.record(p, b.get("with_payload"), b.get("with_vector"))
                   for _, p in page]
        self.q_ok({"points": pts, "next_page_offset": pid_out(nxt[0][0]) if nxt else None})

    def _select_points(self, c, b):
        if "points" in b:
            if not isinstance(b["points"], list):
                raise QError(400, "Format error in JSON body: data did not match any variant "
                                  "of untagged enum PointsSelector")
            keys = [pid_key(parse_point_id(x)) for x in b["points"]]
            return [k for k in keys if k in c["points"]]
        if "filter" in b:
            validate_filter(b["filter"])
            return [pid_key(pid) for pid, _ in self._matching(c, b["filter"])]
        raise QError(400, "Format error in JSON body: data did not match any variant of "
                          "untagged enum PointsSelector")

    def delete_points(self, name, b, wait):
        with self.app.lock:
            c = self.q_coll(name)
            for k in self._select_points(c, b):
                c["points"].pop(k, None)
            res = self.q_opres(wait)
        self.q_ok(res)

    def set_payload(self, name, b, wait, overwrite):
        pl = b.get("payload")
        if not isinstance(pl, dict):
            raise QError(400, "Format error in JSON body: missing field `payload`")
        with self.app.lock:
            c = self.q_coll(name)
            for k in self._select_points(c, b):
                p = c["points"][k]
                if overwrite:
                    p["payload"] = dict(pl)
                else:
                    p["payload"].update(pl)
            res = self.q_opres(wait)
        self.q_ok(res)

    def delete_payload(self, name, b, wait):
        keys = b.get("keys")
        if not isinstance(keys, list):
            raise QError(400, "Format error in JSON body: missing field `keys`")
        with self.app.lock:
            c = self.q_coll(name)
            for k in self._select_points(c, b):
                for key in keys:
                    c["points"][k]["payload"].pop(key, None)
            res = self.q_opres(wait)
        self.q_ok(res)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        # keep stderr quiet for ordinary disconnects; report anything else
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout, TimeoutError)):
            return
        sys.stderr.write("openai_standin: error handling %s:\n%s" % (client_address,
                                                                     traceback.format_exc()))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Local stand-in for the OpenAI Responses/"
                                             "Embeddings API and the Qdrant REST API.")
    ap.add_argument("--port-file", required=True, help="write the chosen port here (atomically)")
    ap.add_argument("--log-dir", required=True, help="one JSON file per request is written here")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="default 0: let the OS choose")
    ap.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1")
    ap.add_argument("--qdrant-api-key", default=None,
                    help="require 'api-key: KEY' (or Bearer) on Qdrant paths")
    ap.add_argument("--state", default=None, help="JSON file persisting responses and collections")
    ap.add_argument("--embed-dim", type=int, default=64, help="embedding dimension (default 64)")
    ap.add_argument("--qdrant-no-query", action="store_true",
                    help="POST /collections/{c}/points/query answers 404 (old Qdrant)")
    ap.add_argument("--lenient", action="store_true",
                    help="accept unknown request parameters instead of 400 unknown_parameter")
    ap.add_argument("--seed", default=None, help="seed for ids (default: random per run)")
    ap.add_argument("--log-control", action="store_true", help="also log /__control requests")
    ap.add_argument("--verbose", action="store_true", help="access log on stderr")
    args = ap.parse_args(argv)
    if args.embed_dim < 1 or args.embed_dim > 4096:
        ap.error("--embed-dim must be 1..4096")

    try:
        os.unlink(args.port_file)
    except OSError:
        pass
    pdir = os.path.dirname(os.path.abspath(args.port_file))
    os.makedirs(pdir, exist_ok=True)
    app = Standin(args)
    srv = Server((args.host, args.port), Handler)
    srv.app = app
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    t.start()
    atomic_write(args.port_file, "%d\n" % port)

    def on_signal(signum, frame):
        app.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.verbose:
        sys.stderr.write("openai_standin: listening on %s:%d\n" % (args.host, port))
    while not app.stop.wait(0.5):
        pass
    srv.shutdown()
    srv.server_close()
    app.save_state()
    try:
        os.unlink(args.port_file)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
