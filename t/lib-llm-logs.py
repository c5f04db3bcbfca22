#!/usr/bin/env python3
"""Write an llm logs.db for the tests of `aptix import llm`.

There is no logs.db from the real tool in the fixtures, so this writes one
the way llm 0.32 does, following llm's own code at commit
f3f4f29c6e5e623c3776cbf6455dda2345638214 (github.com/simonw/llm):

- the tables of llm/migrations.py m023_message_store (messages, parts,
  part_fragments, part_attachments, threads, turns) with m027's
  turns.response_json, and the older tables a real database keeps beside
  them (conversations, responses, fragments, attachments), as
  sqlite-utils creates them;
- message hashes as llm/logs.py computes them: "b2:" + BLAKE2b with a
  16-byte digest of canonical_json({"parent": parent_hash, "message":
  Message.to_dict()}), canonical_json being json.dumps(sort_keys=True,
  separators=(",", ":"), ensure_ascii=False);
- parts stored as LogStore._write_part stores them: the type in its
  column, the text of text/reasoning parts in `text`, the rest as
  json.dumps(payload), text that contains a fragment as a text_ref list;
- turns as LogStore.log writes them: parent_message_hash the end of the
  input chain, tip_message_hash the end of the output, datetime_utc
  datetime.now(timezone.utc).isoformat() (microseconds).

usage: lib-llm-logs.py <logs.db> [grow] [tamper]
  (none)  thread A: a tool call and its result (two model calls, usage
          on each), then a second prompt whose text uses a fragment;
          thread B, a fork of A after its first answer (llm's fork():
          a new thread at an existing message), with one turn of its own;
          thread C: a prompt whose tool call has no result yet.
  grow    the same, and one more turn of A.
  tamper  the same, and the text of A's second answer changed in the
          database without its hash (what verify() would report).
"""
import hashlib
import json
import sqlite3
import sys

DDL = """
CREATE TABLE [_llm_migrations] ([name] TEXT PRIMARY KEY, [applied_at] TEXT);
CREATE TABLE [conversations] ([id] TEXT PRIMARY KEY, [name] TEXT, [model] TEXT);
CREATE TABLE [responses] ([id] TEXT PRIMARY KEY, [model] TEXT, [prompt] TEXT,
   [system] TEXT, [prompt_json] TEXT, [options_json] TEXT, [response] TEXT,
   [response_json] TEXT, [conversation_id] TEXT REFERENCES [conversations]([id]),
   [duration_ms] INTEGER, [datetime_utc] TEXT);
CREATE TABLE [fragments] ([id] INTEGER PRIMARY KEY, [hash] TEXT, [content] TEXT,
   [datetime_utc] TEXT, [source] TEXT);
CREATE UNIQUE INDEX [idx_fragments_hash] ON [fragments] ([hash]);
CREATE TABLE [attachments] ([id] TEXT PRIMARY KEY, [type] TEXT, [path] TEXT,
   [url] TEXT, [content] BLOB);
CREATE TABLE [messages] ([hash] TEXT PRIMARY KEY,
   [parent_hash] TEXT REFERENCES [messages]([hash]), [role] TEXT,
   [provider_metadata] TEXT);
CREATE INDEX [idx_messages_parent_hash] ON [messages] ([parent_hash]);
CREATE TABLE [parts] ([id] INTEGER PRIMARY KEY,
   [message_hash] TEXT REFERENCES [messages]([hash]), [position] INTEGER,
   [type] TEXT, [tool_name] TEXT, [text] TEXT, [payload] TEXT);
CREATE UNIQUE INDEX [idx_parts_message_hash_position] ON [parts] ([message_hash], [position]);
CREATE TABLE [part_fragments] ([part_id] INTEGER REFERENCES [parts]([id]),
   [fragment_id] INTEGER REFERENCES [fragments]([id]), [order] INTEGER,
   PRIMARY KEY ([part_id], [fragment_id], [order]));
CREATE TABLE [part_attachments] ([part_id] INTEGER REFERENCES [parts]([id]),
   [attachment_id] TEXT REFERENCES [attachments]([id]), [order] INTEGER,
   PRIMARY KEY ([part_id], [attachment_id], [order]));
CREATE TABLE [threads] ([id] TEXT PRIMARY KEY, [name] TEXT,
   [tip_message_hash] TEXT REFERENCES [messages]([hash]),
   [forked_from] TEXT REFERENCES [threads]([id]), [datetime_utc] TEXT);
CREATE TABLE [turns] ([id] TEXT PRIMARY KEY,
   [thread_id] TEXT REFERENCES [threads]([id]),
   [parent_message_hash] TEXT REFERENCES [messages]([hash]),
   [tip_message_hash] TEXT REFERENCES [messages]([hash]), [model] TEXT,
   [resolved_model] TEXT, [options_json] TEXT, [schema_id] TEXT,
   [input_tokens] INTEGER, [output_tokens] INTEGER, [token_details] TEXT,
   [duration_ms] INTEGER, [datetime_utc] TEXT, [response_json] TEXT);
CREATE INDEX [idx_turns_thread_id] ON [turns] ([thread_id]);
"""


# llm/logs.py canonical_json, content_hash, message_hash
def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def message_hash(message, parent_hash):
    canonical = canonical_json({"parent": parent_hash, "message": message})
    digest = hashlib.blake2b(canonical.encode("utf-8"), digest_size=16)
    return "b2:" + digest.hexdigest()


# llm/parts.py to_dict() of each part type
def text(t):
    return {"type": "text", "text": t}


def tool_call(name, arguments, call_id):
    d = {"type": "tool_call", "name": name, "arguments": arguments}
    if call_id is not None:
        d["tool_call_id"] = call_id
    return d


def tool_result(name, output, call_id):
    d = {"type": "tool_result", "name": name, "output": output}
    if call_id is not None:
        d["tool_call_id"] = call_id
    return d


def message(role, *parts):
    return {"role": role, "parts": list(parts)}


class Store:
    def __init__(self, path):
        self.db = sqlite3.connect(path)
        self.db.executescript(DDL)
        self.fragments = {}

    def fragment(self, content):
        h = hashlib.sha256(content.encode("utf-8")).hexdigest()
        cur = self.db.execute(
            "insert into fragments (hash, content, datetime_utc, source) "
            "values (?, ?, ?, ?)", (h, content, "2026-11-20 09:00:00+00:00",
                                    "README.md"))
        self.fragments[content] = cur.lastrowid

    # LogStore._write_part, with _encode_text_refs for one fragment
    def write_part(self, mhash, position, part):
        payload = dict(part)
        ptype = payload.pop("type")
        used = []
        t = payload.get("text")
        for content, fid in self.fragments.items():
            if t and content in t:
                before, after = t.split(content, 1)
                pieces = []
                if before:
                    pieces.append({"literal": before})
                pieces.append({"fragment": fid})
                if after:
                    pieces.append({"literal": after})
                del payload["text"]
                payload["text_ref"] = pieces
                used.append(fid)
                break
        column = None
        if ptype in ("text", "reasoning") and "text" in payload:
            column = payload.pop("text")
        cur = self.db.execute(
            "insert into parts (message_hash, position, type, tool_name, "
            "text, payload) values (?, ?, ?, ?, ?, ?)",
            (mhash, position, ptype, payload.get("name"), column,
             json.dumps(payload) if payload else None))
        for order, fid in enumerate(used):
            self.db.execute("insert into part_fragments values (?, ?, ?)",
                            (cur.lastrowid, fid, order))

    # LogStore.ensure_chain / _ensure_message
    def chain(self, messages, parent=None):
        tip = parent
        for m in messages:
            h = message_hash(m, tip)
            if not self.db.execute("select 1 from messages where hash = ?",
                                   (h,)).fetchone():
                self.db.execute("insert into messages values (?, ?, ?, ?)",
                                (h, tip, m["role"], None))
                for position, part in enumerate(m["parts"]):
                    self.write_part(h, position, part)
            tip = h
        return tip

    def thread(self, tid, name, tip=None, forked_from=None):
        self.db.execute("insert into threads values (?, ?, ?, ?, ?)",
                        (tid, name, tip, forked_from,
                         "2026-11-20 09:00:00.000001+00:00"))

    # LogStore.log: the input chain, the output, the turn, the thread's tip
    def log(self, tid, turn_id, inputs, outputs, when, usage, parent=None):
        inp = self.chain(inputs, parent)
        tip = self.chain(outputs, inp)
        details = {"prompt_tokens_details": {"cached_tokens": usage[2]}}
        self.db.execute(
            "insert into turns (id, thread_id, parent_message_hash, "
            "tip_message_hash, model, resolved_model, options_json, "
            "input_tokens, output_tokens, token_details, duration_ms, "
            "datetime_utc) values (?,?,?,?,?,?,?,?,?,?,?,?)",
            (turn_id, tid, inp, tip, "gpt-4.1-mini", "gpt-4.1-mini-2025-04-14",
             None, usage[0], usage[1], json.dumps(details), 1250,
             "2026-11-20T%s+00:00" % when))
        self.db.execute("update threads set tip_message_hash = ? where id = ?",
                        (tip, tid))
        return tip


def main():
    path, opts = sys.argv[1], sys.argv[2:]
    s = Store(path)
    readme = "# Demo\n\nA tiny project: one file, café ✓.\n"
    s.fragment(readme)
    a, b, c = ("01kaaaaaaaaaaaaaaaaaaaaaaa", "01kbbbbbbbbbbbbbbbbbbbbbbb",
               "01kccccccccccccccccccccccc")
    s.thread(a, "What is in README.md?")
    ask = message("user", text("What is in README.md?"))
    call = message("assistant", text("Let me read it."),
                   tool_call("read_file", {"path": "README.md", "max": 2.5,
                                           "lines": 40}, "call_1"))
    # numbers and characters whose JSON Python writes its own way
    odd = message("user", text("Odd values?"))
    odd_ans = message("assistant", text("Tab\there, bell \x07, \u2028 and \U0001f600"),
                      tool_call("calc", {"a": 0.1, "b": 1e16, "c": 1e-05,
                                         "d": -0.0, "e": 100.0, "f": 123456.789,
                                         "g": 1.5e-300, "h": [True, None, -7],
                                         "\u00e9": {"z": 1, "a": 2}}, None),
                      tool_call("calc", {}, None, ))
    res = message("user", tool_result("read_file", readme, "call_1"))
    ans = message("assistant", text("It describes a tiny demo project."))
    t1 = s.log(a, "01kt0000000000000000000001", [ask], [call],
               "10:00:00.250000", (120, 30, 0))
    t2 = s.log(a, "01kt0000000000000000000002", [res], [ans],
               "10:00:02.750000", (300, 12, 100), parent=t1)
    ask2 = message("user", text("Quote it:\n" + readme))
    ans2 = message("assistant", text("It says: \"A tiny project\"."))
    s.log(a, "01kt0000000000000000000003", [ask2], [ans2], "10:01:00.125000",
          (400, 9, 300), parent=t2)
    # llm's fork(): a new thread at a message that exists, forked_from
    s.thread(b, "What is in README.md? (fork)", tip=t2, forked_from=a)
    s.log(b, "01kt0000000000000000000004",
          [message("user", text("And in French?"))],
          [message("assistant", text("Un petit projet de démonstration."))],
          "10:02:00.500000", (310, 11, 0), parent=t2)
    d = "01kddddddddddddddddddddddd"
    s.thread(d, "Odd values?")
    s.log(d, "01kt0000000000000000000007", [odd], [odd_ans],
          "10:04:00.001000", (1, 1, 0))
    s.log(d, "01kt0000000000000000000008",
          [message("user", tool_result("calc", "1", None),
                   tool_result("calc", "2", None))],
          [message("assistant", text("Done."))], "10:04:01.002000", (1, 1, 0),
          parent=s.db.execute("select tip_message_hash from threads where id = ?",
                              (d,)).fetchone()[0])
    s.thread(c, "List the files")
    s.log(c, "01kt0000000000000000000005",
          [message("user", text("List the files"))],
          [message("assistant", tool_call("ls", {}, "call_9"))],
          "10:03:00.000000", (50, 5, 0))
    if "grow" in opts:
        tip = s.db.execute("select tip_message_hash from threads where id = ?",
                           (a,)).fetchone()[0]
        s.log(a, "01kt0000000000000000000006",
              [message("user", text("Thanks!"))],
              [message("assistant", text("You are welcome."))],
              "10:05:00.999000", (500, 4, 400), parent=tip)
    if "tamper" in opts:
        s.db.execute("update parts set text = ? where text = ?",
                     ("It says nothing.", "It says: \"A tiny project\"."))
    s.db.commit()


main()
