#!/usr/bin/env python3
"""Turns the STB_GNU_UNIQUE symbols of an ELF64 little-endian relocatable object into weak
ones, in place (scripts/localize-staticlib.sh: objcopy cannot make a unique symbol local).

GCC gives function-local statics of inline functions (sppark's GPU table `gpus_t::all()`, its
NTT parameters) unique binding: one copy per process, shared with any other library that has
the same names. Weak, they can be made local like the rest. Prints how many it changed."""
import struct
import sys

STB_WEAK, STB_GNU_UNIQUE, SHT_SYMTAB = 2, 10, 2


def main(path):
    with open(path, "r+b") as f:
        elf = bytearray(f.read())
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            sys.exit(f"{path}: not an ELF64 little-endian object")
        shoff, = struct.unpack_from("<Q", elf, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
        if shnum == 0:  # more sections than fit: the count is in section 0's size
            shnum, = struct.unpack_from("<Q", elf, shoff + 0x20)
        changed = 0
        for i in range(shnum):
            sh = shoff + i * shentsize
            sh_type, = struct.unpack_from("<I", elf, sh + 4)
            if sh_type != SHT_SYMTAB:
                continue
            off, size = struct.unpack_from("<QQ", elf, sh + 0x18)
            entsize, = struct.unpack_from("<Q", elf, sh + 0x38)
            for s in range(off, off + size, entsize):
                info = elf[s + 4]
                if info >> 4 == STB_GNU_UNIQUE:
                    elf[s + 4] = (STB_WEAK << 4) | (info & 0xF)
                    changed += 1
        f.seek(0)
        f.write(elf)
    print(changed)


if __name__ == "__main__":
    main(sys.argv[1])
