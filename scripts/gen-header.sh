#!/usr/bin/env bash
# Regenerates include/cuzk.h from src/ffi with the pinned cbindgen (installing it if needed).
# With --check, fails when the committed header differs from the generated one.
set -euo pipefail
cd "$(dirname "$0")/.."
want=0.29.4
if ! command -v cbindgen >/dev/null || [ "$(cbindgen --version | awk '{print $2}')" != "$want" ]; then
  cargo install --locked --quiet cbindgen --version "$want"
fi
out=include/cuzk.h
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp)
  trap 'rm -f "$tmp"' EXIT
  cbindgen --quiet --config cbindgen.toml --crate cuzk --output "$tmp" .
  if ! diff -u "$out" "$tmp"; then
    echo "include/cuzk.h is out of date: run scripts/gen-header.sh and commit it" >&2
    exit 1
  fi
  echo "include/cuzk.h is up to date"
else
  cbindgen --quiet --config cbindgen.toml --crate cuzk --output "$out" .
  echo "wrote $out"
fi
