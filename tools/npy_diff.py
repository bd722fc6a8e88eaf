#!/usr/bin/env python3
"""Compares two .npy files that etc-run wrote (f32, f16, bf16 as '<V2', i32, i64, u8), with no
numpy needed: the same dtype and shape, then the same bytes or not, and for floats how far
apart. tools/gpu_ab.sh -x uses it to check each variant's outputs against the first variant's.

    python3 tools/npy_diff.py A.npy B.npy
    -> "bit-equal (N elements)"                                         exit 0
    -> "differ in K of N elements, max |a - b| D where |a| is at most M" exit 1
    -> "A.npy: ..." (unreadable, or a dtype or shape that differs)       exit 2
"""
import ast
import math
import struct
import sys

# descr -> (struct format of one element, is float, bf16)
DTYPES = {
    "<f4": ("f", True, False),
    "<f2": ("e", True, False),
    "<V2": ("H", True, True),
    "|V2": ("H", True, True),
    "<i4": ("i", False, False),
    "<i8": ("q", False, False),
    "|u1": ("B", False, False),
}


class NpyError(Exception):
    pass


def read(path):
    """(descr, shape, raw data bytes) of a version 1 or 2 .npy file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise NpyError(f"{path}: {e.strerror}") from e
    if data[:6] != b"\x93NUMPY" or len(data) < 10:
        raise NpyError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        n, at = struct.unpack("<H", data[8:10])[0], 10
    elif major in (2, 3):
        if len(data) < 12:
            raise NpyError(f"{path}: a truncated header")
        n, at = struct.unpack("<I", data[8:12])[0], 12
    else:
        raise NpyError(f"{path}: .npy version {major} is not supported")
    try:
        header = ast.literal_eval(data[at:at + n].decode("latin1").strip())
        descr, shape = header["descr"], tuple(header["shape"])
        fortran = header["fortran_order"]
    except (ValueError, SyntaxError, KeyError, TypeError) as e:
        raise NpyError(f"{path}: an unreadable header") from e
    if descr not in DTYPES:
        raise NpyError(f"{path}: dtype '{descr}' is not supported ({' '.join(sorted(DTYPES))})")
    if fortran:
        raise NpyError(f"{path}: Fortran order is not supported")
    body = data[at + n:]
    size = struct.calcsize(DTYPES[descr][0]) * math.prod(shape)
    if len(body) != size:
        raise NpyError(f"{path}: {len(body)} bytes of data where its shape needs {size}")
    return descr, shape, body


def values(descr, body):
    fmt, _, bf16 = DTYPES[descr]
    n = len(body) // struct.calcsize(fmt)
    raw = struct.unpack(f"<{n}{fmt}", body)
    if bf16:  # the upper 16 bits of an f32
        return struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *(v << 16 for v in raw)))
    return raw


def diff(path_a, path_b):
    """(exit status, message)."""
    da, sa, ba = read(path_a)
    db, sb, bb = read(path_b)
    if da != db or sa != sb:
        raise NpyError(f"{path_b}: dtype {db} and shape {list(sb)} where {path_a} has {da} and {list(sa)}")
    n = math.prod(sa)
    if ba == bb:
        return 0, f"bit-equal ({n} elements)"
    va, vb = values(da, ba), values(db, bb)
    differ = sum(1 for x, y in zip(va, vb) if x != y and not (x != x and y != y))
    if not DTYPES[da][1]:
        return 1, f"differ in {differ} of {n} elements"
    finite = [(x, y) for x, y in zip(va, vb) if math.isfinite(x) and math.isfinite(y)]
    gap = max((abs(x - y) for x, y in finite), default=0.0)
    top = max((abs(x) for x, _ in finite), default=0.0)
    odd = sum(1 for x, y in zip(va, vb) if math.isfinite(x) != math.isfinite(y))
    more = f"; {odd} finite in one and not the other" if odd else ""
    return 1, f"differ in {differ} of {n} elements, max |a - b| {gap:.6g} where |a| is at most {top:.6g}{more}"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        status, message = diff(argv[1], argv[2])
    except NpyError as e:
        print(e)
        return 2
    print(message)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
