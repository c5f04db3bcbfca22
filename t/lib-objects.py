#!/usr/bin/env python3
"""lib-objects.py - the stored values of an aptix store's objects, for tests.

Usage: lib-objects.py <store-dir>

Prints one line per object: its id and its stored value (objects-format.md,
"Storage"), both in hex. A record of the objects table that points into the
values table (store format 4: the byte 0x00, the varint number of the first
piece, the varint length; format 5: and the varint offset of the value in
its first piece; format 6: the varint size of the first piece and the
be32 CRC-32 of the value) is given as the value its pieces make. Reads the
store with mdb_dump (lmdb-utils); no aptix process may be writing it.
"""
import subprocess
import sys


def records(store, table):
    out = subprocess.run(["mdb_dump", "-s", table, store], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         universal_newlines=True).stdout
    lines = [l[1:] for l in out.split("\n") if l.startswith(" ")]
    return [(bytes.fromhex(k), bytes.fromhex(v))
            for k, v in zip(lines[0::2], lines[1::2])]


def varint(b, i):
    n, shift = 0, 0
    while True:
        n |= (b[i] & 0x7f) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i


def resolve(value, pieces):
    if not value or value[0] != 0:
        return value
    first, i = varint(value, 1)
    length, i = varint(value, i)
    # format 5: the offset in the first piece; the values of a write
    # follow one another in pieces of 1,002 bytes. Format 6: the size of
    # the first piece and the value's CRC-32 (4 bytes), pieces of its
    # own, the next ones of 2,000 bytes (as in format 4)
    off, head = 0, None
    if len(value) - i > 4:
        head = varint(value, i)[0]
    elif i < len(value):
        off = varint(value, i)[0]
    out = pieces[first][off:off + (head or length)]
    seq = first + 1
    while len(out) < length:
        out += pieces[seq][:length - len(out)]
        seq += 1
    return out


def main():
    store = sys.argv[1]
    try:
        pieces = {int.from_bytes(k, "big"): v
                  for k, v in records(store, "values")}
    except subprocess.CalledProcessError:
        pieces = {}	# a store of format 3 or older
    for key, value in records(store, "objects"):
        print(key.hex(), resolve(value, pieces).hex())


if __name__ == "__main__":
    main()
