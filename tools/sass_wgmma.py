#!/usr/bin/env python3
"""How a cubin's wgmma products are grouped, function by function, without a GPU or cuobjdump.

    python3 tools/sass_wgmma.py FILE.cubin|FILE.fatbin [--function SUBSTRING]

For every sm_90a ELF image in FILE (a cubin, or a fatbin's uncompressed images) and every code
section holding HGMMA instructions, prints one line: the function, its HGMMA count, and how many
of them end a group (`gsb0`: the product the WARPGROUP.DEPBAR after it waits for). ptxas keeps a
stage's products asynchronous by issuing them back to back with only the last one on gsb0 (8
products, 1 group); where it serializes them (ptxas info C7509, C7510, ...), every HGMMA is a
group of its own. `serialized` is printed when every HGMMA is.

The encoding read here is sm_90a's (128-bit instructions; checked against `cuobjdump -sass` on an
H200, session 58): the low 12 bits of the first word are 0x9f0 for HGMMA, and an HGMMA's bits 20
to 22 of the second word are 0 exactly when it carries gsb0.
"""
import argparse
import struct
import sys

HGMMA = 0x9F0
ELF_MAGIC = b"\x7fELF\x02\x01"  # 64-bit, little-endian


def sections(data, base):
    """{name: (offset, size)} of the ELF image at data[base:]."""
    shoff, = struct.unpack_from("<Q", data, base + 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, base + 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, base + shoff + i * shentsize) for i in range(shnum)]
    str_off, str_size = heads[shstrndx][4], heads[shstrndx][5]
    names = data[base + str_off: base + str_off + str_size]
    out = {}
    for name, _type, _flags, _addr, offset, size in heads:
        out[names[name: names.index(b"\0", name)].decode()] = (base + offset, size)
    return out, shoff + shentsize * shnum


def groups(data, offset, size):
    """(HGMMA count, HGMMA on gsb0) in one code section."""
    total = ends = 0
    for a in range(offset, offset + size - 15, 16):
        w0, w1 = struct.unpack_from("<QQ", data, a)
        if w0 & 0xFFF == HGMMA:
            total += 1
            ends += ((w1 >> 20) & 7) == 0
    return total, ends


def scan(data, function=""):
    """[(function, HGMMA count, groups)] for every sm_90a image in data."""
    rows, pos = [], 0
    while (base := data.find(ELF_MAGIC, pos)) >= 0:
        try:
            secs, end = sections(data, base)
        except (struct.error, ValueError):
            pos = base + 4
            continue
        sm = struct.unpack_from("<I", data, base + 0x30)[0] >> 8 & 0xFF  # e_flags' SM (0x5a: 90)
        if sm == 90:
            for name, (offset, size) in secs.items():
                if name.startswith(".text.") and function in name:
                    total, ends = groups(data, offset, size)
                    if total:
                        rows.append((name[len(".text."):], total, ends))
        pos = base + end
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--function", default="", help="only functions whose name holds this")
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        rows = scan(f.read(), args.function)
    if not rows:
        print(f"{args.file}: no sm_90a function with HGMMA", file=sys.stderr)
        return 1
    for name, total, ends in rows:
        print(f"{name} HGMMA {total} groups {ends}{' serialized' if total == ends else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
