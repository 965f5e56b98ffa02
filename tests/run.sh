#!/usr/bin/env bash
# Everything: cargo test (all targets, plus doctests), then the C ABI checks: the C
# example and the C misuse test built as strict C11, syntax-checked as C++17, run, and
# run under valgrind. Installs a C compiler and valgrind if they are missing.
#
# The last line is "N passed, N failed" for the non-cargo checks; the exit status is
# non-zero if anything (cargo included) failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
LIB_DIR="$TARGET_DIR/debug"
OUT="$ROOT/build/c"

# --- tools -------------------------------------------------------------------------
missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "== installing: ${missing[*]}"
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# --- cargo ---------------------------------------------------------------------------
cargo_ok=1
echo "== cargo test --all-targets"
cargo test --all-targets || cargo_ok=0
echo "== cargo test --doc"
cargo test --doc || cargo_ok=0
echo "== cargo build --lib (the cdylib the C programs link)"
cargo build --lib || cargo_ok=0

# --- C checks ------------------------------------------------------------------------
passed=0
failed=0
check() {
    local name="$1"
    shift
    echo "== $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "ok: $name"
    else
        failed=$((failed + 1))
        echo "FAILED: $name"
    fi
}

CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include")
CXXFLAGS=(-x c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$ROOT/include")
LDFLAGS=(-L"$LIB_DIR" -ltickwire)
VALGRIND=(valgrind --quiet --leak-check=full --error-exitcode=99 --suppressions="$ROOT/tests/c/valgrind.supp")
mkdir -p "$OUT"

# The header on its own, included twice, as C11 and as C++17.
printf '#include "tickwire.h"\n#include "tickwire.h"\nint tw_header_only_check(void);\n' >"$OUT/header_only.c"
check "header: strict C11" cc "${CFLAGS[@]}" -c "$OUT/header_only.c" -o "$OUT/header_only.o"
check "header: C++17 syntax" c++ "${CXXFLAGS[@]}" "$OUT/header_only.c"

programs=(examples-c/loopback.c tests/c/abi_misuse.c)
for src in "${programs[@]}"; do
    name="$(basename "$src" .c)"
    check "$name: build as strict C11" cc "${CFLAGS[@]}" "$src" "${LDFLAGS[@]}" -o "$OUT/$name"
    check "$name: C++17 syntax check" c++ "${CXXFLAGS[@]}" "$src"
done

run_program() {
    # A caught panic in the misuse test prints a panic note; keep it short.
    LD_LIBRARY_PATH="$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" RUST_BACKTRACE=0 timeout 120 "$@"
}
for src in "${programs[@]}"; do
    name="$(basename "$src" .c)"
    if [ -x "$OUT/$name" ]; then
        check "$name: run" run_program "$OUT/$name"
        check "$name: valgrind" run_program "${VALGRIND[@]}" "$OUT/$name"
    else
        check "$name: run (not built)" false
        check "$name: valgrind (not built)" false
    fi
done

if [ "$cargo_ok" -ne 1 ]; then
    echo "cargo: FAILED (see above)"
fi
echo "$passed passed, $failed failed"
if [ "$failed" -ne 0 ] || [ "$cargo_ok" -ne 1 ]; then
    exit 1
fi
