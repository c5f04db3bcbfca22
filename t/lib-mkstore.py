#!/usr/bin/env python3
"""lib-mkstore.py - write an aptix store from objects-format.md alone.

Usage: lib-mkstore.py <dir> <turns> [long] [v5]

Makes <dir>/.aptix, a store of format 8, without aptix: its objects,
session index, refs and reflog are made here following the layouts of
objects-format.md ("The store, table by table") and loaded with mdb_load
(lmdb-utils). The store holds

  - conversation c1: <turns> committed turns in one response chain, the
    first with a file and a chunk it sent, the third asking for a tool
    call (awaiting_tool_results) that the fourth answers; HEAD points at
    it;
  - conversation 6ba7b810-9dad-41d1-80b4-00c04fd430c8: one failed turn.

With more than 32 turns the rolling summary folds a base (turn 33) that
later records reach as their holder. With "long", instructions and
answers are long lines of UTF-8 text, so that the lines are cut (flag 8)
and the summary folds by size and compacts its bases (cuts, then ranges
sharing a line once a base has more than 55 groups). Prints the session ids of c1, oldest
first. t/t1011-store-from-doc.sh checks the store with aptix.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zlib

T0 = 1700000000000
UUID_CONV = "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
ZERO = bytes(32)
# the session records' version: 6, or 5 ("v5": a store of format 7,
# whose rolling sections name their holder in a head of be32s)
RECORD_VERSION = 6


# --- Integers and strings ------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def be(n, size):
    return n.to_bytes(size, "big")


def str8(s):
    b = s.encode()[:255]
    return bytes([len(b)]) + b


def str16(s):
    b = s.encode()[:65535]
    return be(len(b), 2) + b


def fingerprint(a, b=None):
    s = a.encode() + (b"\0" + b.encode() if b is not None else b"")
    return hashlib.sha256(s).digest()[:16]


# --- Objects ---------------------------------------------------------------

TYPES = {"blob": 1, "turn": 2, "session": 3, "tool-call": 4,
         "tool-result": 5}


def canonical(obj):
    return (json.dumps(obj, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False) + "\n").encode()


class Store:
    def __init__(self):
        self.tables = {t: {} for t in (
            "meta", "objects", "values", "refs", "reflog", "sessions",
            "timeline", "children", "conversations", "running", "rag",
            "purged")}
        self.blobs = {}         # id -> content (for sizes)
        self.records = {}       # session id -> its index record

    def put_object(self, type_, content):
        oid = hashlib.sha256(b"%s %d\0" % (type_.encode(), len(content)) +
                             content).digest()
        # raw: 0x80 | type, the size, the content; from 64 bytes on,
        # in the values table behind a pointer (format 6); an object
        # written again changes nothing (no second copy of its pieces)
        if oid not in self.tables["objects"]:
            self.tables["objects"][oid] = self.logged(
                bytes([0x80 | TYPES[type_]]) + varint(len(content)) +
                content, 64)
        if type_ == "blob":
            self.blobs[oid] = content
        return oid

    def blob(self, text):
        return self.put_object("blob", text.encode())

    def logged(self, value, least):
        """objects-format.md, "Checksummed values of their own (format
        6)": a value of least bytes or more goes to pieces of its own
        (2,000 bytes, the last one the rest) under the next numbers of
        the values table; the record is then 0x00, the varint number of
        the first piece, the varint length, the varint size of the first
        piece and the be32 CRC-32."""
        if len(value) < least:
            return value
        first = len(self.tables["values"])
        for i in range(0, len(value), 2000):
            key = be(len(self.tables["values"]), 8)
            self.tables["values"][key] = value[i:i + 2000]
        return (b"\x00" + varint(first) + varint(len(value)) +
                varint(min(len(value), 2000)) + be(zlib.crc32(value), 4))


# --- Summary lines ---------------------------------------------------------

def summary_line(text, max_):
    """text: bytes. objects-format.md, "The session record"."""
    i = 0
    while i < len(text) and text[i] in b"\n \t\r":
        i += 1
    j = i
    while j < len(text) and text[j] not in b"\n\r":
        j += 1
    line = text[i:j]
    if len(line) > max_:
        n = max_
        while n and (line[n] & 0xc0) == 0x80:
            n -= 1
        line = line[:n]
    return bytes(0x20 if c < 0x20 or c == 0x7f else c for c in line)


def head_words(text, max_):
    first = text.find(b"\n")
    if first < 0:
        first = len(text)
    line = summary_line(text, max_)
    if len(line) < first and max_ >= 8:
        line = summary_line(text, max_ - 3)
        n = len(line)
        while n > max_ // 2 and line[n - 1:n] != b" ":
            n -= 1
        while n > 0 and line[n - 1:n] == b" ":
            n -= 1
        if n <= max_ // 2:
            n = len(line)
        return line[:n] + b"..."
    return line


def first_line_len(text):
    i = 0
    while i < len(text) and text[i] in b"\n \t\r":
        i += 1
    j = i
    while j < len(text) and text[j] not in b"\n\r":
        j += 1
    return j - i


def prefix(lo, hi):
    if lo == hi:
        return b"- Turn %d asked: " % lo
    return b"- Turns %d-%d asked: " % (lo, hi)


def line_size(lo, hi, text, ans):
    return (len(prefix(lo, hi)) + 1 + len(text) +
            (16 + 1 + len(ans) if ans else 0))


def make_line(seq, summary, instr_text, answer_text):
    cut = first_line_len(instr_text) > len(summary)
    instr = summary if not cut else head_words(summary + b"  x", 120)
    ans = head_words(answer_text, 80) if answer_text is not None else b""
    return {"seq": seq, "cut": cut, "instr": instr, "answer": ans}


# --- The rolling section -----------------------------------------------------

def get_varint(b, i):
    """(value, index after it) of the LEB128 varint at b[i]."""
    j = i
    while b[j] & 0x80:
        j += 1
    return sum((c & 0x7f) << (7 * k) for k, c in enumerate(b[i:j + 1])), j + 1


def parse_rolling(rec):
    """(fields, base groups or None) of a record's section (version 3
    to 6, without its checksum). Version 6 (flag 16) names no holder."""
    p = skip_usage(rec, after_summary(rec))
    n = int.from_bytes(rec[p:p + 4], "big")
    sec = rec[p + 4:p + 4 + n]
    f = {"flags": sec[0]}
    if sec[0] & 16:
        q = 1
        for k in ("seq", "base_hi", "npending", "pbytes"):
            f[k], q = get_varint(sec, q)
        f["holder"] = None
        alen, q = get_varint(sec, q)
    else:
        f.update({"seq": int.from_bytes(sec[1:5], "big"),
                  "base_hi": int.from_bytes(sec[5:9], "big"),
                  "holder": sec[9:41],
                  "npending": int.from_bytes(sec[41:45], "big"),
                  "pbytes": int.from_bytes(sec[45:49], "big")})
        alen, q = int.from_bytes(sec[49:51], "big"), 51
    f["answer"] = sec[q:q + alen]
    groups = None
    if f["flags"] & 2:
        raw = zlib.decompress(sec[q + alen + 4:])
        count, q, groups = int.from_bytes(raw[:4], "big"), 4, []
        for _ in range(count):
            lo, hi = (int.from_bytes(raw[q:q + 4], "big"),
                      int.from_bytes(raw[q + 4:q + 8], "big"))
            q += 8
            tl = int.from_bytes(raw[q:q + 2], "big")
            text = raw[q + 2:q + 2 + tl]
            q += 2 + tl
            al = int.from_bytes(raw[q:q + 2], "big")
            ans = raw[q + 2:q + 2 + al]
            q += 2 + al
            groups.append([lo, hi, text, ans])
    return f, groups


def after_summary(rec):
    p = 80
    p += 16 if rec[3] & 2 else 1 + rec[p]
    return p + 1 + rec[p]


def skip_usage(rec, p):
    """Past the usage section of a version 5 record."""
    if rec[0] < 5:
        return p
    p += 2 + rec[p + 1]
    for _ in range(7):
        while rec[p] & 0x80:
            p += 1
        p += 1
    return p


def usage_section(turn):
    """What the turn spent ("The session record"): known, never
    repeating its parent's turn here."""
    u, model = turn["usage"], turn.get("model", "").encode()
    calls = len(turn.get("tool_calls", []))
    flags = 1 | (2 if turn.get("tool_results") else 0)
    out = bytes([flags, len(model)]) + model
    for f in ("input_tokens", "cached_tokens", "output_tokens",
              "reasoning_tokens", "total_tokens", "model_requests"):
        out += varint(u[f])
    return out + varint(calls)


def record_summary(rec):
    p = 80
    p += 16 if rec[3] & 2 else 1 + rec[p]
    return rec[p + 1:p + 1 + rec[p]]


def pending_lines(store, rec, base_hi):
    """Lines of committed turns above base_hi, from rec back, oldest
    first."""
    out = []
    while True:
        f, _ = parse_rolling(rec)
        if f["seq"] <= base_hi:
            break
        if f["flags"] & 1:
            summary = record_summary(rec)
            instr = (summary if not f["flags"] & 8 else
                     head_words(summary + b"  x", 120))
            out.append([f["seq"], f["seq"], instr, f["answer"]])
        if not rec[3] & 1:
            break
        rec = store.records[rec[4:36]]
    return out[::-1]


def cut_to(s, max_):
    if len(s) <= max_:
        return s
    return head_words(s, max_) if max_ else b""


def cut_parts(s, max_):
    if len(s) <= max_:
        return s
    parts = s.split(b" / ")
    k = len(parts)
    if k == 1 or max_ < 3 * (k - 1) + 6 * k:
        return cut_to(s, max_)
    per = (max_ - 3 * (k - 1)) // k
    return b" / ".join(head_words(p, per) for p in parts)


def overhead(g):
    return len(prefix(g[0], g[1])) + 1 + (17 if g[3] else 0)


def compact(groups, cap):
    """objects-format.md, "Compaction"; a group: [lo, hi, text, answer]
    (answer b"" for none)."""
    if sum(line_size(*g) for g in groups) <= cap:
        return groups
    while len(groups) > 1 and cap // len(groups) < 72:
        spans = [groups[i][1] - groups[i][0] + 1 +
                 groups[i + 1][1] - groups[i + 1][0] + 1
                 for i in range(len(groups) - 1)]
        i = spans.index(min(spans))
        a, b = groups[i], groups[i + 1]
        groups[i:i + 2] = [[a[0], b[1], a[2] + b" / " + b[2], b""]]
    fixed = sum(overhead(g) for g in groups)
    turns = sum(g[1] - g[0] + 1 for g in groups)
    room = max(cap - fixed, 0)
    for g in groups:
        share = room * (g[1] - g[0] + 1) // turns
        if g[3]:
            it = min(share * 3 // 5, len(g[2]))
            g[2] = cut_to(g[2], it)
            g[3] = cut_to(g[3], share - it)
        else:
            g[2] = cut_parts(g[2], share)
    return groups


def holder_of(store, rec, base_hi):
    """The record holding the base base_hi that rec (holding none) names:
    its nearest ancestor whose record holds a base of seq base_hi."""
    while True:
        rec = store.records[rec[4:36]]
        f, _ = parse_rolling(rec)
        if f["flags"] & 2 and f["seq"] == base_hi:
            return rec


def rolling_head(flags, seq, base_hi, holder, npending, pbytes, ans):
    """The section's head and answer: compact (flag 16) in version 6."""
    if RECORD_VERSION == 6:
        return (bytes([flags | 16]) + varint(seq) + varint(base_hi) +
                varint(npending) + varint(pbytes) + varint(len(ans)) + ans)
    return (bytes([flags]) + be(seq, 4) + be(base_hi, 4) + holder +
            be(npending, 4) + be(pbytes, 4) + be(len(ans), 2) + ans)


def rolling(store, parent, prec, line):
    flags = seq = base_hi = npending = pbytes = 0
    holder = ZERO
    if prec is not None:
        pf, _ = parse_rolling(prec)
        if pf["flags"] & 4 or (line and line["seq"] <= pf["seq"]):
            sec = rolling_head(4, 0, 0, ZERO, 0, 0, b"")
            return be(len(sec), 4) + sec
        seq, base_hi = pf["seq"], pf["base_hi"]
        holder = parent if pf["flags"] & 2 else pf["holder"]
        npending, pbytes = pf["npending"], pf["pbytes"]
    base = b""
    if line:
        flags = 1 | (8 if line["cut"] else 0)
        seq = line["seq"]
        npending += 1
        pbytes += line_size(seq, seq, line["instr"], line["answer"])
        if npending > 32 or pbytes > 6000:
            groups = []
            if base_hi:
                hrec = prec if parse_rolling(prec)[0]["flags"] & 2 \
                    else holder_of(store, prec, base_hi)
                groups = parse_rolling(hrec)[1]
            if prec is not None:
                groups += pending_lines(store, prec, base_hi)
            groups.append([seq, seq, line["instr"], line["answer"]])
            groups = compact(groups, 4000)
            raw = be(len(groups), 4) + b"".join(
                be(lo, 4) + be(hi, 4) + be(len(t), 2) + t +
                be(len(a if lo == hi else b""), 2) + (a if lo == hi else b"")
                for lo, hi, t, a in groups)
            base = be(len(raw), 4) + zlib.compress(raw, 9)
            flags |= 2
            base_hi, holder, npending, pbytes = seq, ZERO, 0, 0
    if not base_hi:
        holder = ZERO
    ans = line["answer"] if line else b""
    sec = rolling_head(flags, seq, base_hi, holder, npending, pbytes,
                       ans) + base
    return be(len(sec), 4) + sec


# --- The chain section ---------------------------------------------------------

def chain_of(rec):
    f, _ = parse_rolling(rec)
    p = skip_usage(rec, after_summary(rec))
    p += 4 + int.from_bytes(rec[p:p + 4], "big")
    return rec[p:]


def parse_chain(sec):
    flags, resp = sec[0], sec[1:17]
    chars = int.from_bytes(sec[17:25], "big")
    links = int.from_bytes(sec[25:29], "big")
    n, p, files = int.from_bytes(sec[29:33], "big"), 33, {}
    for _ in range(n):
        pl = int.from_bytes(sec[p:p + 2], "big")
        files[sec[p + 2:p + 2 + pl]] = sec[p + 2 + pl:p + 18 + pl]
        p += 18 + pl
    nc = int.from_bytes(sec[p:p + 4], "big")
    chunks = [sec[p + 4 + 16 * i:p + 20 + 16 * i] for i in range(nc)]
    first = int.from_bytes(sec[p + 4 + 16 * nc:p + 12 + 16 * nc], "big") \
        if flags & 8 else None
    return flags, resp, chars, links, files, chunks, first


def chain(store, prec, committed, turn):
    none = bytes(37)
    if not committed:
        return chain_of(prec) if prec is not None else none
    link = turn["status"] == "completed" and turn.get("response_id")
    if not link:
        return none
    chars = len(store.blobs[bytes.fromhex(turn["instruction"])])
    answer = len(store.blobs[bytes.fromhex(turn["answer"])]) \
        if "answer" in turn else 0
    chars += answer
    files, chunks = {}, []
    for f in turn.get("files", []):
        if f["sent"] and len(f["sha256"]) == 64:
            files[f["path"].encode()] = bytes.fromhex(f["sha256"])[:16]
            chars += f["size"]
    for c in turn.get("chunks", []):
        if c["sent"]:
            chunks.append(fingerprint(c["chunk_id"], c["content_hash"]))
    base_chars, links, first = 0, 0, chars - answer
    if turn.get("previous_response_id") and prec is not None:
        pflags, resp, pchars, plinks, pfiles, pchunks, pfirst = \
            parse_chain(chain_of(prec))
        if pflags & 2:
            return bytes([2]) + bytes(36)
        if pflags & 1 and resp == fingerprint(turn["previous_response_id"]):
            base_chars, links, first = pchars, plinks, pfirst
            pfiles.update(files)
            files = pfiles
            chunks = pchunks + chunks
    chunks = sorted(set(chunks))
    # flags: 1 chain, 4 short hashes, 8 first (none from an older chain)
    out = bytes([5 | (8 if first is not None else 0)]) + \
        fingerprint(turn["response_id"])
    out += be(base_chars + chars, 8) + be(links + 1, 4) + be(len(files), 4)
    for path in sorted(files):
        out += be(len(path), 2) + path + files[path]
    out += be(len(chunks), 4) + b"".join(chunks)
    return out + (be(first, 8) if first is not None else b"")


# --- Sessions, conversations, refs ---------------------------------------------

SESSION_STATUS = {"created": 0, "committed": 1, "awaiting_tool_results": 2,
                  "failed": 3, "archived": 4}
TURN_STATUS = {"pending": 0, "completed": 1, "failed": 2}


def is_uuid(s):
    import re
    return re.fullmatch("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                        "[0-9a-f]{12}", s) is not None


def index_session(store, sid, session, turn):
    parent = bytes.fromhex(session["parent"]) if "parent" in session \
        else None
    prec = store.records[parent] if parent else None
    conv = session["conversation"]
    instr = store.blobs[bytes.fromhex(turn["instruction"])]
    summary = summary_line(instr, 120)
    committed = session["status"] in ("committed", "awaiting_tool_results")
    line = None
    if committed:
        ans = store.blobs.get(bytes.fromhex(turn["answer"])) \
            if "answer" in turn else None
        line = make_line(turn["seq"], summary, instr, ans)
    gen = int.from_bytes(prec[76:80], "big") + 1 if prec else 1
    rec = bytes([RECORD_VERSION, SESSION_STATUS[session["status"]],
                 TURN_STATUS[turn["status"]],
                 (1 if parent else 0) | (2 if is_uuid(conv) else 0) | 4])
    rec += (parent or ZERO) + bytes.fromhex(session["turn"])
    rec += be(session["created_at"], 8) + be(gen, 4)
    rec += bytes.fromhex(conv.replace("-", "")) if is_uuid(conv) \
        else str8(conv)
    rec += bytes([len(summary)]) + summary
    rec += usage_section(turn)
    rec += rolling(store, parent, prec, line)
    rec += chain(store, prec, committed, turn)
    # kept without its checksum: the sections run to the end
    store.records[sid] = rec
    created = be(session["created_at"], 8)
    store.tables["timeline"][created + sid] = \
        store.logged(rec + be(zlib.crc32(rec), 4), 1024)
    store.tables["sessions"][sid] = b"\x04" + created
    if parent:
        store.tables["children"][prec[68:76] + parent + sid] = b""
    failed = session["status"] == "failed" or turn["status"] == "failed"
    c = store.convs.setdefault(conv, {
        "created": session["created_at"], "turns": 0, "committed": 0,
        "failed": 0, "last": None, "last_failed": None,
        "title": session["metadata"].get("title", summary.decode()),
        "head": None, "usage": {}})
    count_usage(c["usage"], turn)
    c["turns"] += 1
    if failed:
        c["failed"] += 1
        if not c["last_failed"] or \
                session["created_at"] >= c["last_failed"][1]:
            c["last_failed"] = (sid, session["created_at"])
    else:
        c["committed"] += 1
    if not c["last"] or session["created_at"] >= c["last"][1]:
        c["last"] = (sid, session["created_at"],
                     SESSION_STATUS[session["status"]],
                     TURN_STATUS[turn["status"]])


def conv_record(c):
    flags = ((1 if c["head"] else 0) | (4 if c["last_failed"] else 0) |
             (16 if c["last"] else 0))
    rec = bytes([2, flags, c["last"][2], c["last"][3]])  # version: below
    rec += c["head"] or ZERO
    rec += be(c["created"], 8) + be(c["last"][1], 8)
    rec += be(c["turns"], 4) + be(c["committed"], 4) + be(c["failed"], 4)
    rec += c["last"][0] + (c["last_failed"][0] if c["last_failed"] else ZERO)
    rec += be(c["last_failed"][1] if c["last_failed"] else 0, 8)
    rec = bytes([3]) + rec[1:] + str8(c["title"][:120]) + str8("")
    rec += bytes([1, len(c["usage"])])
    for model, m in c["usage"].items():
        rec += str8(model) + b"".join(varint(m[f]) for f in USAGE_SUMS)
    return rec + be(zlib.crc32(rec), 4)


USAGE_SUMS = ("turns", "tool_calls", "tool_requests", "input_tokens",
              "cached_tokens", "output_tokens", "reasoning_tokens",
              "total_tokens", "model_requests")


def count_usage(sums, turn):
    """A session's turn into its conversation's sums per model, in the
    order the models came ("conversations")."""
    m = sums.setdefault(turn.get("model", ""),
                        dict.fromkeys(USAGE_SUMS, 0))
    m["turns"] += 1
    m["tool_calls"] += len(turn.get("tool_calls", []))
    m["tool_requests"] += 1 if turn.get("tool_results") else 0
    for f in USAGE_SUMS[3:]:
        m[f] += turn["usage"][f]


def set_ref(store, name, new, old, reason, when):
    store.tables["refs"][name.encode()] = new.hex().encode()
    seq = store.reflog_seq.get(name, 0)
    store.reflog_seq[name] = seq + 1
    store.tables["reflog"][name.encode() + b"\0" + be(seq, 8)] = (
        (old or ZERO) + new + be(when, 8) + reason.encode())


def usage_of(k):
    """Turn k's tokens: every field differs, some need two varint
    bytes."""
    return {"cached_tokens": 10 * k, "input_tokens": 100 * k + 7,
            "model_requests": 1, "output_tokens": 20 * k + 3,
            "reasoning_tokens": k, "total_tokens": 120 * k + 10}


USAGE0 = {"cached_tokens": 0, "input_tokens": 0, "model_requests": 0,
          "output_tokens": 0, "reasoning_tokens": 0, "total_tokens": 0}
RUN0 = {"duration_ms": 0, "usage": {"completion_tokens": 0,
                                    "model_requests": 0,
                                    "prompt_tokens": 0, "total_tokens": 0}}


WORDS = ("parser lexer token grammar résumé naïve café état déjà vu "
         "recursion descent lookahead backtrack").split()


def long_text(k, n, what):
    words = [WORDS[(k * 7 + i * 3) % len(WORDS)] for i in range(n)]
    return "%s %d: %s.\n" % (what, k, " ".join(words))


def tool_turn(store, turn, k, nturns):
    """Turn 3 asks for a call, turn 4 answers it ("Tool calls")."""
    call = {"arguments": "{\"cmd\":[\"ls\"]}", "call_id": "call_1",
            "name": "shell", "v": 1}
    if nturns < 4 or k not in (3, 4):
        return "committed"
    cid = store.put_object("tool-call", canonical(call))
    turn["v"] = 2
    if k == 3:
        del turn["answer"]
        turn["tool_calls"] = [cid.hex()]
        return "awaiting_tool_results"
    out = store.blob("a.c\nb.c\n").hex()
    result = {"call": cid.hex(), "call_id": "call_1", "exit_code": 0,
              "output": out, "output_bytes": 8, "source": "aptix",
              "status": "ok", "stdout": out, "stdout_bytes": 8, "v": 1}
    turn["tool_results"] = [store.put_object("tool-result",
                                             canonical(result)).hex()]
    return "committed"


def build(nturns, long_=False):
    store = Store()
    store.convs, store.reflog_seq = {}, {}
    code = b"int main(void)\n{\n\treturn 0;\n}\n"
    file_id = store.put_object("blob", code)
    sha = hashlib.sha256(code).hexdigest()
    parent, sids = None, []
    for k in range(1, nturns + 1):
        t = T0 + 60000 * k
        turn = {"conversation": "c1", "seq": k, "status": "completed",
                "created_at": t, "status_at": t,
                "instruction": store.blob(
                    long_text(k, 30, "Question") if long_ else
                    "Question %d about the parser\n" % k).hex(),
                "answer": store.blob(
                    long_text(k, 25, "Answer") if long_ else
                    "Answer %d: it reads tokens.\n" % k).hex(),
                "response_id": "resp_%d" % k, "model": "gpt-test",
                "usage": usage_of(k), "v": 1}
        status = tool_turn(store, turn, k, nturns)
        if k > 1:
            turn["previous_response_id"] = "resp_%d" % (k - 1)
        else:
            turn["files"] = [{"path": "main.c", "content": file_id.hex(),
                              "sha256": sha, "size": len(code),
                              "binary": False, "sent": True,
                              "too_large": False, "touched": False}]
            turn["chunks"] = [{"chunk_id":
                               "0f1e2d3c-4b5a-8978-8675-645342312019",
                               "content_hash": sha, "path": "main.c",
                               "start_line": 1, "end_line": 4,
                               "score_micro": 500000, "sent": True}]
        tid = store.put_object("turn", canonical(turn))
        session = {"conversation": "c1", "created_at": t + 1000,
                   "metadata": {"session_type": "agent",
                                "transport": "sse"},
                   "run_summary": RUN0, "status": status,
                   "turn": tid.hex(), "v": 1}
        if parent:
            session["parent"] = parent.hex()
        else:
            session["metadata"]["title"] = "The parser"
        sid = store.put_object("session", canonical(session))
        index_session(store, sid, session, turn)
        set_ref(store, "refs/conversations/c1", sid, parent,
                "vector: turn %d" % k, t + 2000)
        store.convs["c1"]["head"] = sid
        parent = sid
        sids.append(sid)
    # a failed turn in a conversation named by a UUID
    t = T0 + 60000 * (nturns + 1)
    turn = {"conversation": UUID_CONV, "seq": 1, "status": "failed",
            "created_at": t, "status_at": t,
            "instruction": store.blob("Fail\n").hex(),
            "errors": ["no network"], "usage": USAGE0, "v": 1}
    tid = store.put_object("turn", canonical(turn))
    session = {"conversation": UUID_CONV, "created_at": t + 1000,
               "metadata": {"session_type": "agent", "transport": "sse"},
               "run_summary": RUN0, "status": "failed", "turn": tid.hex(),
               "v": 1}
    sid = store.put_object("session", canonical(session))
    index_session(store, sid, session, turn)
    for conv, c in store.convs.items():
        store.tables["conversations"][conv.encode()] = conv_record(c)
    store.tables["refs"][b"HEAD"] = b"ref: refs/conversations/c1"
    meta = store.tables["meta"]
    meta[b"format"] = b"8" if RECORD_VERSION == 6 else b"7"
    meta[b"index-layout"] = b"timeline"
    meta[b"store-id"] = b"1b4e28ba-2fa1-41d2-883f-0016d3cca427"
    return store, sids


def load(store, path):
    os.makedirs(path)
    fd, dump = tempfile.mkstemp(suffix=".dump")
    with os.fdopen(fd, "w") as f:
        for name, recs in store.tables.items():
            f.write("VERSION=3\nformat=bytevalue\ndatabase=%s\n"
                    "type=btree\nmapsize=67108864\nHEADER=END\n" % name)
            for k in sorted(recs):
                f.write(" %s\n %s\n" % (k.hex(), recs[k].hex()))
            f.write("DATA=END\n")
    try:
        subprocess.run(["mdb_load", "-f", dump, path], check=True)
    finally:
        os.unlink(dump)


def main():
    global RECORD_VERSION
    opts = sys.argv[3:]
    if len(sys.argv) < 3 or any(o not in ("long", "v5") for o in opts):
        sys.stderr.write(__doc__)
        return 2
    if "v5" in opts:
        RECORD_VERSION = 5
    store, sids = build(int(sys.argv[2]), "long" in opts)
    load(store, os.path.join(sys.argv[1], ".aptix"))
    for sid in sids:
        print(sid.hex())
    return 0


if __name__ == "__main__":
    sys.exit(main())
