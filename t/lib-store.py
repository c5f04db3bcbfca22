#!/usr/bin/env python3
"""lib-store.py - edit an aptix store behind aptix's back, for tests.

Usage: lib-store.py <store-dir> <command> [<args>]

  get <table> <key>            print the record (hex) as it is stored;
                               exit 1 if absent
  value <table> <key>          print the value (hex) the record stands
                               for: a pointer put together from its
                               pieces (see below); exit 1 if absent or
                               if a piece is missing
  pieces <table> <key>         print the keys (hex) of the pieces in the
                               values table of a pointer record, first
                               first; exit 1 if it is none
  layout                       print how the index tables lay out their
                               records, a line per kind with its count:
                               sessions values ("record v<N>" in place,
                               "pointer" into values, "located" in the
                               timeline), children and timeline records
                               by key size and value ("0" empty, "+")
  value-layout                 print how the objects, sessions and
                               timeline tables keep their values, a
                               line per kind with its count: "<table>
                               in-place", "<table> pointer 4" (pieces of
                               its own, no checksum), "5" (shared
                               pieces), "6" (pieces of its own and a
                               CRC-32), and "values unnamed <n>": the
                               pieces no pointer names
  search-postings              print the search index as what it says,
                               whatever its layout: its records other
                               than postings ("<key> <value>", hex), then
                               a line a term in byte order: hex term, its
                               df and its "<ordinal>:<tf>" pairs
  search-terms                 print the terms of the search index
                               (hex, one a line, in byte order): those
                               of "t" keys and those kept in blocks
  search-df                    print the terms of the search index, in
                               byte order, one a line: hex term, its df
                               (the sessions holding it), and how many
                               of its postings name a session indexed
  search-key-of <term>         print the key (hex) of the record that
                               holds the term: its "t" key or its block
  search-v1                    lay the search table out as a version 1
                               one (before blocks: a "t" key a term)
  leaves <table>               print each leaf page of the table's tree,
                               in key order: its number, then the keys
                               (hex) of its records
  lost-with <page>             print the ids (hex) of the objects that
                               losing leaf page <page> of the values
                               table would lose: those with a piece on
                               it, and those based or spliced on them
  sharing <key>                print the ids (hex) of the objects whose
                               values have bytes in the piece of the
                               values table under key (format 5: the
                               values of a write share pieces)
  put <table> <key> <value>    add or replace a record, as it is given
                               (a value put in place, never in pieces)
  del <table> <key>            delete a record (not its pieces); exit 1
                               if absent
  keys <table>                 print every key (hex)
  values <table>               print "<key> <value>" (hex) for every
                               record, pointers put together from their
                               pieces ("-" when a piece is missing)
  record <id>                  print a session's index record (hex),
                               wherever it is (see below); exit 1 if
                               the session is not indexed
  put-record <id> <value>      replace a session's index record where
                               it is; an id not indexed gets one in the
                               timeline, under the time in the record
  seal <value>                 print a session's index record (hex) with
                               its checksum made again for what it holds
                               (version 4: be32 CRC-32 of the bytes before
                               it, at the end), so that an edit stands for
                               a record written so, not a damaged one;
                               older records unchanged
  del-record <id>              delete a session's index record: its
                               sessions entry and, in format 5, its
                               timeline record; exit 1 if absent
  put-object <type> <file>     store the file as an object of that type,
                               stored raw (type byte | 0x80), whatever it
                               holds, in place; print its id
  corrupt <id> <how>           damage the bytes of a stored object's
                               value, in place or in its pieces: "flip"
                               a byte in the middle of its data,
                               "truncate" it by 4 bytes (in pieces: its
                               last piece, at the value's end), "header"
                               (in place: the value becomes 0xff 0xff;
                               in pieces: its first two bytes)
  corrupt <id> <how> sealed    the same, then make the CRC-32 of a
                               format-6 pointer that of the damaged
                               value (so that the decoder meets it)
  pages                        print the number of pages of data.mdb
  root <table> [older]         print the page number of the table's root
                               (from the newest meta page, or the older)
  page <n> <how>               damage page n of data.mdb in place:
                               "zero" it, fill it with "noise" (fixed
                               bytes), or "header" (its page number)

A key or value is text, or "hex:<digits>" for raw bytes. Keys of the
objects table are the 32 raw id bytes: "hex:<id>" (or just the id for
corrupt). Edits go through mdb_dump and mdb_load (lmdb-utils); a delete
reloads every table into a fresh environment. No aptix process may have
the store open meanwhile.

Store format 4 (src/store/store-lmdb.c, "Values in append order"): a value of
64 bytes or more of the tables objects and sessions lives in the table
values, in pieces of at most 2,000 bytes under consecutive 8-byte
big-endian numbers; its record is then a pointer: the byte 0x00, the
varint number of the first piece, the varint length. Since format 5 the
pointer ends with the varint offset of the value in its first piece, and
the values written one after the other share pieces of 1,002 bytes (the
table's last piece is filled up by the next write). get, put and del
see records as they are stored; value, pieces and corrupt follow
pointers (corrupt truncates the last piece the value has bytes in, at
the value's end less 4 bytes). A value put in place (put, put-object) reads as in a store of
an older format.

Store format 5 (src/index/index.c): a session's index record is kept in the
timeline table under the key <be64 created ms><32-byte id>, and the
sessions table maps the id to 0x04 <be64 created ms>. Records of older
formats are in the sessions table itself (their timeline value empty).
"""
import hashlib
import os
import shutil
import subprocess
import struct
import sys
import tempfile
import zlib


def arg_bytes(s):
    if s.startswith("hex:"):
        return bytes.fromhex(s[4:])
    return s.encode()


def dump(store, table=None):
    """Sections of `mdb_dump` output: [(header lines, [(key, val)])]."""
    cmd = ["mdb_dump"] + (["-s", table] if table else ["-a"]) + [store]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    sections, header, records, in_data, pending = [], [], [], False, None
    for line in out.split("\n"):
        if not in_data:
            if not line:
                continue
            header.append(line)
            if line == "HEADER=END":
                in_data = True
            continue
        if line == "DATA=END":
            sections.append((header, records))
            header, records, in_data = [], [], False
            continue
        value = bytes.fromhex(line[1:])
        if pending is None:
            pending = value
        else:
            records.append((pending, value))
            pending = None
    return sections


def section_name(header):
    for line in header:
        if line.startswith("database="):
            return line[len("database="):]
    return None


def write_dump(path, sections):
    with open(path, "w") as f:
        for header, records in sections:
            for line in header:
                if line.startswith("format="):
                    line = "format=bytevalue"
                if line.startswith("db_pagesize="):
                    continue
                f.write(line + "\n")
            for k, v in records:
                f.write(" " + k.hex() + "\n " + v.hex() + "\n")
            f.write("DATA=END\n")


def load(store, sections, table=None):
    fd, path = tempfile.mkstemp(suffix=".dump")
    os.close(fd)
    try:
        write_dump(path, sections)
        cmd = ["mdb_load", "-f", path] + (["-s", table] if table else [])
        subprocess.run(cmd + [store], check=True,
                       stderr=subprocess.DEVNULL)
    finally:
        os.unlink(path)


def table_records(store, table):
    return dump(store, table)[0]


def get(store, table, key):
    for k, v in table_records(store, table)[1]:
        if k == key:
            return v
    return None


def put(store, table, key, value):
    header, _ = table_records(store, table)
    load(store, [(header, [(key, value)])], table)


def delete(store, table, key):
    sections = dump(store)
    found = False
    for header, records in sections:
        if section_name(header) != table:
            continue
        for i, (k, _) in enumerate(records):
            if k == key:
                del records[i]
                found = True
                break
    if not found:
        return False
    replace_all(store, sections)
    return True


def replace_all(store, sections):
    """Make store hold sections (the output of dump()) and nothing else."""
    fresh = tempfile.mkdtemp(dir=store)
    try:
        load(fresh, sections)
        os.replace(os.path.join(fresh, "data.mdb"),
                   os.path.join(store, "data.mdb"))
        lock = os.path.join(store, "lock.mdb")
        if os.path.exists(lock):
            os.unlink(lock)
    finally:
        shutil.rmtree(fresh)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


TYPES = {"blob": 1, "turn": 2, "session": 3}

PIECE_MAX = 2000


def get_varint(b, i):
    """The LEB128 varint at b[i:]: (value, index after), or None."""
    v, shift = 0, 0
    while i < len(b) and shift < 70:
        v |= (b[i] & 0x7f) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i
    return None


PIECE5 = 1002


def pointer(record):
    """A record pointing into the values table: ([the keys of its
    pieces], the value's length, its offset in the first piece, the size
    of a piece after the first, the bytes of the value in the first
    piece, the CRC-32 or None); None for a value in place. Format 4:
    0x00, first, length (pieces of 2,000 bytes, the last one the rest);
    format 5: and the offset (pieces of 1,002 bytes that values share);
    format 6: and the size of the first piece and the be32 CRC-32 of the
    value (pieces of its own: the first one filled its page, the next
    ones 2,000 bytes, the last one the rest)."""
    if not record or record[0] != 0:
        return None
    first = get_varint(record, 1)
    size = first and get_varint(record, first[1])
    if not size or not size[0]:
        return None
    off, piece, crc = (0, PIECE_MAX, None)
    head = min(size[0], PIECE_MAX)
    if len(record) - size[1] > 4:       # format 6
        h = get_varint(record, size[1])
        if not h or len(record) - h[1] != 4 or not 0 < h[0] <= size[0]:
            return None
        head, crc = h[0], struct.unpack(">I", record[-4:])[0]
    elif size[1] != len(record):
        o = get_varint(record, size[1])
        if not o or o[1] != len(record) or o[0] >= PIECE5:
            return None
        off, piece = o[0], PIECE5
        head = min(size[0], PIECE5 - off)
    n = 1 + (size[0] - head + piece - 1) // piece
    return ([(first[0] + i).to_bytes(8, "big") for i in range(n)], size[0],
            off, piece, head, crc)


def spans(p):
    """(key, start, length) of each piece's part of the value of p."""
    keys, size, off, piece, head, _ = p
    out, done = [], 0
    for i, k in enumerate(keys):
        start = off if i == 0 else 0
        n = min(head if i == 0 else piece, size - done)
        out.append((k, start, n))
        done += n
    return out


def resolve(store, record, pieces=None):
    """The value a record stands for: itself, or its pieces; None if a
    piece is missing or of the wrong size, or (format 6) the value fails
    its checksum. pieces: the values table, when
    the caller has read it."""
    p = pointer(record)
    if p is None:
        return record
    if pieces is None:
        pieces = dict(table_records(store, "values")[1])
    out = b""
    last = len(p[0]) - 1
    for i, (k, start, n) in enumerate(spans(p)):
        v = pieces.get(k)
        exact = i < last or p[5] is not None
        if v is None or (exact and len(v) != start + n) or \
                len(v) < start + n:
            return None
        out += v[start:start + n]
    if p[5] is not None and p[5] != zlib.crc32(out):
        return None     # format 6: the value fails its checksum
    return out


def block_entries(key, v):
    """The entries of a search block (objects-format.md, "The search
    index"): (term, df, postings) each."""
    term, i = key[1:], 0
    while i < len(v):
        shared, i = get_varint(v, i)
        slen, i = get_varint(v, i)
        term = term[:shared] + v[i:i + slen]
        i += slen
        df, i = get_varint(v, i)
        start = i
        for _ in range(2 * df):
            _, i = get_varint(v, i)
        yield term, df, v[start:i]


def search_terms(store):
    """The terms of the search table: (term, key holding it), "t" keys
    and the entries of "b" blocks, in byte order of term."""
    out = []
    for k, v in table_records(store, "search")[1]:
        if k[:1] == b"t":
            out.append((k[1:], k))
        elif k[:1] == b"b":
            out.extend((t, k) for t, _, _ in block_entries(k, v))
    return sorted(out)


def run_pairs(posts, count=None):
    """The (ordinal, tf) pairs of a run of (delta, tf) pairs."""
    i, ord_, out = 0, 0, []
    while (len(out) < count) if count is not None else (i < len(posts)):
        d, i = get_varint(posts, i)
        tf, i = get_varint(posts, i)
        ord_ += d
        out.append((ord_, tf))
    return out


def search_postings(store):
    """The search table as what it says, whatever its layout: the records
    other than postings ("s", "i", "o", "k", "K") as they are, then
    every term in byte order with its df and (ordinal, tf) pairs."""
    records = table_records(store, "search")[1]
    sealed, terms = {}, []
    for k, v in records:
        if k[:1] == b"c":
            sealed.setdefault(k[1:-5], []).extend(run_pairs(v))
    for k, v in records:
        if k[:1] == b"t":
            df, i = get_varint(v, 0)
            _, i = get_varint(v, i)
            n, i = get_varint(v, i)
            terms.append((k[1:], df, sealed.get(k[1:], []) +
                          run_pairs(v[i:], n)))
        elif k[:1] == b"b":
            terms.extend((t, df, run_pairs(p, df))
                         for t, df, p in block_entries(k, v))
    other = [(k, v) for k, v in records if k[:1] not in (b"t", b"b", b"c")]
    return other, sorted(terms)


def search_df(store):
    """The terms of the search table in byte order: (term, its df, the
    postings stored for it that name a session the index has)."""
    other, terms = search_postings(store)
    live = {k[1:5] for k, _ in other if k[:1] == b"o" and len(k) == 5}
    return [(t, df, sum(o.to_bytes(4, "big") in live for o, _ in pairs))
            for t, df, pairs in terms]


def search_v1(store):
    """Lay the search table out as aptix before blocks did (state
    version 1): every term of a block under a "t" key of its own."""
    _, records = table_records(store, "search")
    out = []
    for k, v in records:
        if k[:1] == b"s":
            v = b"\x01" + v[1:]
        if k[:1] != b"b":
            out.append((k, v))
            continue
        for term, df, posts in block_entries(k, v):
            i, last = 0, 0
            for _ in range(df):
                d, i = get_varint(posts, i)
                _, i = get_varint(posts, i)
                last += d
            out.append((b"t" + term, varint(df) + varint(last) +
                        varint(df) + posts))
    sections = [(h, out if section_name(h) == "search" else r)
                for h, r in dump(store)]
    replace_all(store, sections)


def locate(store, sid):
    """(table, key) of a session's index record, or None."""
    v = get(store, "sessions", sid)
    if v is None:
        return None
    if len(v) == 9 and v[0] == 4:
        return "timeline", v[1:] + sid
    return "sessions", sid


def session_record(store, sid):
    """The index record of session sid (bytes), or None."""
    where = locate(store, sid)
    v = where and get(store, *where)
    return None if v is None else resolve(store, v)


def layout(store):
    """Lines "<table> <kind> <count>" of the index tables' records."""
    seen = {}
    for header, records in dump(store):
        table = section_name(header)
        for k, v in records:
            if table == "sessions":
                kind = ("pointer" if v[0] == 0 else
                        "located" if len(v) == 9 and v[0] == 4 else
                        "record v%d" % v[0])
            elif table in ("children", "timeline"):
                kind = "key %d value %s" % (len(k), "+" if v else "0")
            else:
                continue
            kind = table + " " + kind
            seen[kind] = seen.get(kind, 0) + 1
    return ["%s %d" % (k, seen[k]) for k in sorted(seen)]


def value_layout(store):
    """Lines "<table> <kind> <count>" of how values are kept (above)."""
    seen, named = {}, set()
    for table in ("objects", "sessions", "timeline"):
        for k, v in table_records(store, table)[1]:
            p = pointer(v)
            if p is None:
                kind = "in-place"
            else:
                named.update(p[0])
                kind = ("pointer 6" if p[5] is not None else
                        "pointer 5" if p[3] == PIECE5 else "pointer 4")
            kind = table + " " + kind
            seen[kind] = seen.get(kind, 0) + 1
    try:
        keys = [k for k, _ in table_records(store, "values")[1]]
    except subprocess.CalledProcessError:
        keys = []
    out = ["%s %d" % (k, seen[k]) for k in sorted(seen)]
    return out + ["values unnamed %d" % sum(1 for k in keys
                                            if k not in named)]


def corrupt(store, key, how, sealed=False):
    """Damage the bytes of an object's value, where they are stored;
    sealed: and make a format-6 pointer's CRC-32 that of the damaged
    value, so that it reaches the decoder."""
    v = get(store, "objects", key)
    if v is None:
        return 1
    p = pointer(v)
    if p is None:
        if how == "flip":
            i = len(v) // 2
            v = v[:i] + bytes([v[i] ^ 0x55]) + v[i + 1:]
        elif how == "truncate":
            v = v[:-4]
        elif how == "header":
            v = b"\xff\xff"
        else:
            return 2
        put(store, "objects", key, v)
        return 0
    parts = spans(p)
    if how == "flip":
        i = p[1] // 2
        for k, start, n in parts:
            if i < n:
                at = start + i
                break
            i -= n
    elif how == "truncate":
        k, start, n = parts[-1]
        at = start + n - 4
    elif how == "header":
        k, at, _ = parts[0]
    else:
        return 2
    piece = get(store, "values", k)
    if piece is None:
        return 1
    if how == "flip":
        piece = piece[:at] + bytes([piece[at] ^ 0x55]) + piece[at + 1:]
    elif how == "truncate":
        piece = piece[:max(at, 1)]
    else:
        piece = piece[:at] + b"\xff\xff" + piece[at + 2:]
    put(store, "values", k, piece)
    if sealed and p[5] is not None:
        value = b"".join(get(store, "values", k)[start:start + n]
                         for k, start, n in spans(p))
        put(store, "objects", key,
            v[:-4] + struct.pack(">I", zlib.crc32(value)))
    return 0


PSIZE = 4096


def le(b, off, n):
    return int.from_bytes(b[off:off + n], "little")


def data_file(store):
    return os.path.join(store, "data.mdb")


def table_root(store, table, older=False):
    """Walk LMDB's main tree (liblmdb 0.9, 64-bit) to a table's root."""
    with open(data_file(store), "rb") as f:
        metas = []
        for i in range(2):
            f.seek(i * PSIZE)
            m = f.read(160)
            metas.append((le(m, 144, 8), le(m, 128, 8)))  # txnid, root
        pg = (min(metas) if older else max(metas))[1]
        while True:
            f.seek(pg * PSIZE)
            p = f.read(PSIZE)
            flags, lower = le(p, 10, 2), le(p, 12, 2)
            nodes = [le(p, 16 + 2 * i, 2) for i in range((lower - 16) // 2)]
            if flags & 1:  # branch: follow the last child whose key <= name
                child = None
                for i, off in enumerate(nodes):
                    ks = le(p, off + 6, 2)
                    key = p[off + 8:off + 8 + ks]
                    if i == 0 or key <= table.encode():
                        child = le(p, off, 2) | le(p, off + 2, 2) << 16 | \
                            le(p, off + 4, 2) << 32
                pg = child
                continue
            for off in nodes:
                ks = le(p, off + 6, 2)
                if p[off + 8:off + 8 + ks] == table.encode():
                    return le(p, off + 8 + ks + 40, 8)
            return None


def read_page(store, n):
    """Page n: (flags, [(key, node offset)])."""
    with open(data_file(store), "rb") as f:
        f.seek(n * PSIZE)
        p = f.read(PSIZE)
    flags, lower = le(p, 10, 2), le(p, 12, 2)
    nodes = [le(p, 16 + 2 * i, 2) for i in range((lower - 16) // 2)]
    return p, flags, [(p[off + 8:off + 8 + le(p, off + 6, 2)], off)
                      for off in nodes]


def leaves(store, table):
    """The leaf pages of a table's tree, in key order: [(page, [keys])]."""
    out, todo = [], [table_root(store, table)]
    while todo:
        pg = todo.pop(0)
        p, flags, nodes = read_page(store, pg)
        if flags & 1:   # a branch: its children in order
            todo[:0] = [le(p, off, 2) | le(p, off + 2, 2) << 16 |
                        le(p, off + 4, 2) << 32 for _, off in nodes]
        elif flags & 2:
            out.append((pg, [k for k, _ in nodes]))
    return out


def value_bases(v):
    """The ids a stored value names as bases (objects-format.md: a based
    value's base, a spliced blob's bases)."""
    if not v or v[0] & 0x1f == 0:
        return []
    i = get_varint(v, 1)[1]
    out = []
    if v[0] & 0x20:
        out.append(v[i:i + 32])
        i += 32
    if v[0] & 0x40 and v[0] & 0x1f == 1:
        n, i = get_varint(v, i)
        for _ in range(n):
            out.append(v[i:i + 32])
            i = get_varint(v, i + 32)[1] + 1
    return out


def lost_with_page(store, pg):
    """The objects a lost page of the values table takes: those with a
    piece on it, then those based or spliced on a lost one."""
    keys = set(dict(leaves(store, "values"))[pg])
    pieces = dict(table_records(store, "values")[1])
    objs = table_records(store, "objects")[1]
    lost = set(k for k, v in objs
               if (pointer(v) or [[]])[0] and keys & set(pointer(v)[0]))
    values = dict((k, resolve(store, v, pieces)) for k, v in objs)
    more = True
    while more:
        more = False
        for k, v in values.items():
            if k not in lost and lost & set(value_bases(v)):
                lost.add(k)
                more = True
    return sorted(lost)


def damage_page(store, n, how):
    with open(data_file(store), "r+b") as f:
        f.seek(n * PSIZE)
        if how == "zero":
            f.write(bytes(PSIZE))
        elif how == "noise":
            f.write(hashlib.sha256(b"noise").digest() * (PSIZE // 32))
        elif how == "header":
            f.write((n ^ 0x5a5a).to_bytes(8, "little"))
        else:
            return 2
    return 0


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    store, cmd, args = argv[1], argv[2], argv[3:]
    if cmd == "get" and len(args) == 2:
        v = get(store, args[0], arg_bytes(args[1]))
        if v is None:
            return 1
        print(v.hex())
    elif cmd == "value" and len(args) == 2:
        v = get(store, args[0], arg_bytes(args[1]))
        if v is None:
            return 1
        v = resolve(store, v)
        if v is None:
            sys.stderr.write("lib-store.py: a piece of the value is "
                             "missing or of the wrong size\n")
            return 1
        print(v.hex())
    elif cmd == "pieces" and len(args) == 2:
        v = get(store, args[0], arg_bytes(args[1]))
        p = v is not None and pointer(v)
        if not p:
            return 1
        for k in p[0]:
            print(k.hex())
    elif cmd == "value-layout" and not args:
        for line in value_layout(store):
            print(line)
    elif cmd == "layout" and not args:
        for line in layout(store):
            print(line)
    elif cmd == "sharing" and len(args) == 1:
        piece = arg_bytes(args[0])
        for k, v in table_records(store, "objects")[1]:
            p = pointer(v)
            if p and any(key == piece for key, _, _ in spans(p)):
                print(k.hex())
    elif cmd == "put" and len(args) == 3:
        put(store, args[0], arg_bytes(args[1]), arg_bytes(args[2]))
    elif cmd == "del" and len(args) == 2:
        return 0 if delete(store, args[0], arg_bytes(args[1])) else 1
    elif cmd == "values" and len(args) == 1:
        pieces = dict(table_records(store, "values")[1])
        for k, v in table_records(store, args[0])[1]:
            v = resolve(store, v, pieces)
            print(k.hex(), "-" if v is None else v.hex())
    elif cmd == "search-df" and not args:
        for t, df, n in search_df(store):
            print(t.hex(), df, n)
    elif cmd == "search-postings" and not args:
        other, terms = search_postings(store)
        for k, v in other:
            print(k.hex(), v.hex())
        for t, df, pairs in terms:
            print(t.hex(), df, " ".join("%d:%d" % p for p in pairs))
    elif cmd == "search-terms" and not args:
        for t, _ in search_terms(store):
            print(t.hex())
    elif cmd == "search-key-of" and len(args) == 1:
        keys = [k for t, k in search_terms(store) if t == arg_bytes(args[0])]
        if not keys:
            return 1
        print(keys[0].hex())
    elif cmd == "search-v1" and not args:
        search_v1(store)
    elif cmd == "keys" and len(args) == 1:
        for k, _ in table_records(store, args[0])[1]:
            print(k.hex())
    elif cmd == "record" and len(args) == 1:
        v = session_record(store, arg_bytes(args[0]))
        if v is None:
            return 1
        print(v.hex())
    elif cmd == "put-record" and len(args) == 2:
        sid, rec = arg_bytes(args[0]), arg_bytes(args[1])
        where = locate(store, sid)
        if where is None:
            put(store, "sessions", sid, b"\x04" + rec[68:76])
            where = "timeline", rec[68:76] + sid
        put(store, where[0], where[1], rec)
    elif cmd == "seal" and len(args) == 1:
        rec = arg_bytes(args[0])
        if len(rec) >= 84 and rec[0] >= 4 and rec[3] & 4:
            rec = rec[:-4] + struct.pack(">I", zlib.crc32(rec[:-4]))
        print(rec.hex())
    elif cmd == "seal-conv" and len(args) == 1:
        # a conversation record of version 3 ends with its CRC-32
        rec = arg_bytes(args[0])
        if rec[0] >= 3:
            rec = rec[:-4] + struct.pack(">I", zlib.crc32(rec[:-4]))
        print(rec.hex())
    elif cmd == "conv-v1" and len(args) == 1:
        # the version 1 layout of a conversation record: its first 56
        # bytes, then title and workspace
        rec = arg_bytes(args[0])
        p = 136 + 1 + rec[136]
        p += 1 + rec[p]
        print((b"\x01" + rec[1:56] + rec[136:p]).hex())
    elif cmd == "del-record" and len(args) == 1:
        sid = arg_bytes(args[0])
        where = locate(store, sid)
        if where is None:
            return 1
        if where[0] == "timeline":
            delete(store, "timeline", where[1])
        delete(store, "sessions", sid)
    elif cmd == "put-object" and len(args) == 2:
        with open(args[1], "rb") as f:
            data = f.read()
        t = args[0]
        oid = hashlib.sha256(b"%s %d\0" % (t.encode(), len(data)) +
                             data).digest()
        put(store, "objects", oid,
            bytes([TYPES[t] | 0x80]) + varint(len(data)) + data)
        print(oid.hex())
    elif cmd == "corrupt" and len(args) == 2:
        return corrupt(store, bytes.fromhex(args[0]), args[1])
    elif cmd == "corrupt" and len(args) == 3 and args[2] == "sealed":
        return corrupt(store, bytes.fromhex(args[0]), args[1], True)
    elif cmd == "pages" and not args:
        print(os.path.getsize(data_file(store)) // PSIZE)
    elif cmd == "root" and (len(args) == 1 or
                            (len(args) == 2 and args[1] == "older")):
        r = table_root(store, args[0], len(args) == 2)
        if r is None:
            return 1
        print(r)
    elif cmd == "lost-with" and len(args) == 1:
        for k in lost_with_page(store, int(args[0])):
            print(k.hex())
    elif cmd == "leaves" and len(args) == 1:
        for pg, keys in leaves(store, args[0]):
            print(pg, " ".join(k.hex() for k in keys))
    elif cmd == "page" and len(args) == 2:
        return damage_page(store, int(args[0]), args[1])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
