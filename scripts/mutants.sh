#!/usr/bin/env bash
# Hand-made mutants: each plants one fault that a test claims to catch (a verifier that says yes,
# a C ABI that writes or reads past a caller's struct, a field inserted before a struct's v1 end,
# a reservation never given back so a waiter hangs) and requires the named check to FAIL
# against it, then restores the source. Run after `make fixtures` (the 2KiB parameters and C1).
#   scripts/mutants.sh [NAME...]    # default: every mutant; a list at the end, non-zero if any survived
# Each mutant rebuilds the library (about a minute on 2 cores); the whole list took 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
P=${FIL_PROOFS_PARAMETER_CACHE:-/var/tmp/filecoin-proof-parameters}
export FIL_PROOFS_PARAMETER_CACHE=$P
LOG=${LOG:-target/mutants}
mkdir -p "$LOG" tests/c/build
ASAN_CC="${CC:-cc} -std=c11 -Wall -Wextra -Werror -Iinclude -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer"

# mutate FILE OLD NEW: replaces the one occurrence of OLD (fails if it is not there exactly once).
mutate() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
n = s.count(old)
if n != 1:
    sys.exit(f"mutant does not apply to {p}: {n} matches of {old!r}")
open(p, "w").write(s.replace(old, new))
EOF
}

test_abi() {
  cargo build --release --locked -q &&
    $ASAN_CC -o tests/c/build/test_abi_asan tests/c/test_abi.c -Ltarget/release -lcuzk \
      -Wl,-rpath,"$PWD/target/release" &&
    CUZK_TEST_PARAMS=$P timeout 300 tests/c/build/test_abi_asan
}

# name | file | old | new | the check that must fail
declare -a NAMES FILES OLDS NEWS CHECKS
add() { NAMES+=("$1"); FILES+=("$2"); OLDS+=("$3"); NEWS+=("$4"); CHECKS+=("$5"); }

add verify-says-yes src/porep/verify.rs \
  '    let parsed = super::parse_c1(c1_json)?;' \
  '    if !proof.is_empty() { return Ok(true); } let parsed = super::parse_c1(c1_json)?;' \
  'timeout 900 cargo test --release --locked --test e2e_2kib real_2kib_sector_proves_and_filecoin_proofs_verifies'
add self-check-says-yes src/engine/assembly.rs \
  '        if !ok {' \
  '        if false && !ok {' \
  'timeout 900 cargo test --release --locked --test e2e_2kib self_check_catches_a_wrong_proof'
add config-field-in-v1-padding src/ffi/config.rs \
  '    pub synthesis_lookahead: u32,
' \
  '    pub synthesis_lookahead: u32,
    pub inserted_into_padding: u32,
' \
  'cargo build --release --locked'
add config-read-past-caller src/ffi/config.rs \
  'std::mem::size_of_val(&$default) <= size {' \
  'std::mem::size_of_val(&$default) <= std::mem::size_of::<cuzk_config>() {' \
  test_abi
add out-struct-written-whole src/ffi/boundary.rs \
  'p as *mut u8, self.len);' \
  'p as *mut u8, std::mem::size_of::<T>());' \
  test_abi
add reservation-never-released src/budget.rs \
  '            st.used -= self.bytes;
            if self.resident {' \
  '            if self.resident {' \
  'timeout 600 cargo test --release --locked --lib budget::tests::too_big_fails_fast_and_waiters_wake'

want=("$@")
survived=() killed=()
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]} f=${FILES[$i]}
  if ((${#want[@]})) && [[ ! " ${want[*]} " == *" $name "* ]]; then continue; fi
  echo "== mutant $name ($f)"
  cp "$f" "$f.orig"
  if ! mutate "$f" "${OLDS[$i]}" "${NEWS[$i]}"; then
    mv "$f.orig" "$f"; survived+=("$name (did not apply)"); continue
  fi
  t0=$SECONDS
  eval "${CHECKS[$i]}" > "$LOG/$name.log" 2>&1
  rc=$?
  mv "$f.orig" "$f"
  if ((rc == 0)); then
    survived+=("$name"); echo "   SURVIVED: '${CHECKS[$i]}' passed against it"
  else
    killed+=("$name"); echo "   killed in $((SECONDS - t0)) s (exit $rc):"
    grep -E "panicked|HUNG|timed out|FAIL|SEGV|error(\[E[0-9]+\])?:|assertion" "$LOG/$name.log" | head -4 | sed 's/^/     /'
  fi
done
# Leave the library built from the real source.
cargo build --release --locked -q
echo "mutants killed: ${#killed[@]}, survived: ${#survived[@]}"
if ((${#survived[@]})); then printf 'SURVIVED: %s\n' "${survived[@]}" >&2; exit 1; fi
