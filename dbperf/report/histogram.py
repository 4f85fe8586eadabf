"""Reading a cell's stored latency histogram: HdrHistogram's V2 compressed encoding (base64), as dbperf-driver writes
it with the hdrhistogram crate. The format is HdrHistogram's own (its interval logs hold the same strings), so its
Java, Go and Python tools read it too; this decoder needs only the standard library."""

from __future__ import annotations

import base64
import math
import struct
import zlib
from dataclasses import dataclass

from dbperf.records import Histogram

# The low byte's 0x10 is the word size flag some writers set (the Rust crate does): compare without it.
V2_COOKIE = 0x1C849303
V2_COMPRESSED_COOKIE = 0x1C849304
COOKIE_MASK = ~0x10 & 0xFFFFFFFF


class HistogramError(ValueError):
    pass


@dataclass(frozen=True)
class Buckets:
    """(value, count) pairs in ascending order: each value is the highest value its bucket stands for, in the
    histogram's unit."""
    unit: str
    pairs: tuple[tuple[int, int], ...]

    @property
    def total(self) -> int:
        return sum(c for _, c in self.pairs)

    def percentile(self, p: float) -> int:
        """The value at percentile p (0..100], as HdrHistogram's value_at_percentile."""
        total = self.total
        if total == 0:
            return 0
        rank = max(1, math.ceil(p / 100 * total))
        seen = 0
        for value, count in self.pairs:
            seen += count
            if seen >= rank:
                return value
        return self.pairs[-1][0]


def _varints(data: bytes) -> list[int]:
    """ZigZag LEB128 (at most 9 bytes, the 9th all value) as HdrHistogram encodes counts."""
    out, i = [], 0
    while i < len(data):
        value, shift = 0, 0
        for n in range(9):
            b = data[i]
            i += 1
            if n == 8:
                value |= b << shift
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return out


def decode(h: Histogram) -> Buckets:
    if h.format != "hdrhistogram-v2-deflate-base64":
        raise HistogramError(f"unknown histogram format {h.format!r}")
    raw = base64.b64decode(h.data)
    cookie, length = struct.unpack_from(">II", raw)
    if cookie & COOKIE_MASK != V2_COMPRESSED_COOKIE:
        raise HistogramError("not a compressed V2 HdrHistogram")
    body = zlib.decompress(raw[8:8 + length])
    cookie, payload_len, _offset, digits, lowest, _highest, _ratio = struct.unpack_from(">Iiiiqqd", body)
    if cookie & COOKIE_MASK != V2_COOKIE:
        raise HistogramError("not a V2 HdrHistogram")
    counts = _varints(body[40:40 + payload_len])
    sub_bucket_count = 1 << math.ceil(math.log2(2 * 10 ** digits))
    half_magnitude = int(math.log2(sub_bucket_count)) - 1
    half = sub_bucket_count // 2
    unit_magnitude = lowest.bit_length() - 1
    pairs, index = [], 0
    for c in counts:
        if c < 0:
            index += -c
            continue
        if c:
            bucket = (index >> half_magnitude) - 1
            sub = (index & (half - 1)) + half
            if bucket < 0:
                sub -= half
                bucket = 0
            value = sub << (bucket + unit_magnitude)
            pairs.append((value + (1 << (bucket + unit_magnitude)) - 1, c))  # the highest equivalent value
        index += 1
    return Buckets(unit=h.unit, pairs=tuple(pairs))
