#!/usr/bin/env python3
"""Prints a capture (tests/captures/*/session*.cap) chunk by chunk: direction, length, bytes escaped.
Usage: dump.py FILE [--pg]   (--pg splits each chunk into PostgreSQL messages: type and length)."""
import struct
import sys


def records(data):
    pos = 0
    while pos + 5 <= len(data):
        d, n = data[pos:pos + 1], struct.unpack(">I", data[pos + 1:pos + 5])[0]
        yield d.decode(), data[pos + 5:pos + 5 + n]
        pos += 5 + n


def pg_messages(chunk):
    pos = 0
    while pos + 5 <= len(chunk):
        t = chunk[pos:pos + 1]
        if t[0] < 0x20:  # untyped startup packet
            n = struct.unpack(">I", chunk[pos:pos + 4])[0]
            yield "startup", chunk[pos:pos + n]
            pos += n
            continue
        n = struct.unpack(">I", chunk[pos + 1:pos + 5])[0]
        yield t.decode(errors="replace"), chunk[pos + 5:pos + 1 + n]
        pos += 1 + n


def main():
    data = open(sys.argv[1], "rb").read()
    for d, chunk in records(data):
        if "--pg" in sys.argv:
            print(f"{d} {len(chunk)}: " + " ".join(f"{t}{repr(b[:60])[1:]}" for t, b in pg_messages(chunk)))
        else:
            print(f"{d} {len(chunk)}: {repr(chunk[:300])[1:]}")


if __name__ == "__main__":
    main()
