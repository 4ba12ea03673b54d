#!/usr/bin/env bash
# Makes every symbol of a cuzk static library local except its C API (cuzk_*), in place.
#
# Why: libcuzk.a carries its own Rust standard library, blst and (with --features cuda) sppark.
# A program that links it beside another static library carrying any of them (Curio and Lotus
# link filecoin-ffi's libfilcrypto.a: blst, sppark, a Rust std) otherwise fails with "multiple
# definition" errors, or, where the linker takes one copy for both, binds one library's calls
# to the other's code (sppark's GPU table, blst of another version). The archive's objects are
# linked into one relocatable object (`ld -r`), every global but cuzk_* made local, the LLVM
# bitcode sections dropped (a linker plugin for another LLVM cannot read them), and the object
# archived alone. A library made so (its one member named below) is left as it is.
# Usage: scripts/localize-staticlib.sh path/to/libcuzk.a
set -euo pipefail
lib=${1:?usage: $0 path/to/libcuzk.a}
member=cuzk-localized.o
if [[ "$(ar t "$lib")" == "$member" ]]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ld -r --whole-archive "$lib" -o "$tmp/all.o"
# Unique symbols (function-local statics of inline C++ functions) cannot be made local: weak first.
"$(dirname "$0")/elf_unique_to_weak.py" "$tmp/all.o" >/dev/null
objcopy --wildcard --keep-global-symbol='cuzk_*' \
  --remove-section=.llvmbc --remove-section=.llvmcmd --remove-section=.llvm_addrsig \
  "$tmp/all.o" "$tmp/$member"
rm -f "$tmp/all.o"
(cd "$tmp" && ar rcs lib.a "$member")
mv "$tmp/lib.a" "$lib"
left=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^cuzk_/' | wc -l)
if [[ $left != 0 ]]; then
  echo "localize-staticlib: $left global symbols other than cuzk_* remain in $lib" >&2
  exit 1
fi
