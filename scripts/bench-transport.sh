#!/usr/bin/env bash
# The transport benchmark of issues 17 and 35 (bench/transport/): tickwire, plaintext and
# encrypted, against ENet 1.3.17 from Debian's libenet-dev, both through their C APIs.
#
#   scripts/bench-transport.sh           the full run (about 8 minutes), prints the table
#   scripts/bench-transport.sh --smoke   a short run that checks behaviour, not speed;
#                                        last line "N passed, N failed", exit 1 on failure
#
# Installs libenet-dev (and a C compiler) from Debian if missing: ENet is never vendored.
# Builds the release library (cargo build --release --lib -p tickwire) and the harness
# into build/bench-transport/. Extra arguments go to the harness (--reps N, --only NAME,
# --lib NAME, ...: the header of bench/transport/main.c lists them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
LIB_DIR="$TARGET_DIR/release"
OUT="$ROOT/build/bench-transport"

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc)
[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
[ -e /usr/include/enet/enet.h ] || missing+=(libenet-dev)
# shellcheck source=scripts/apt-install.sh
source "$ROOT/scripts/apt-install.sh"
apt_install_missing ${missing[@]+"${missing[@]}"}

echo "== cargo build --release --lib -p tickwire"
cargo build --release --lib -p tickwire
# The library's SONAME is libtickwire.so.<TW_ABI_VERSION>: give it that name too.
ABI="$(sed -n 's/^#define TW_ABI_VERSION \([0-9]*\)$/\1/p' include/tickwire.h)"
ln -sfn libtickwire.so "$LIB_DIR/libtickwire.so.$ABI"

mkdir -p "$OUT"
echo "== cc bench/transport/*.c"
# -rdynamic: the harness's malloc family (alloc_count.c) is what both libraries call.
cc -std=c11 -Wall -Wextra -Werror -pedantic -O2 -g -I"$ROOT/include" bench/transport/*.c \
    -rdynamic -L"$LIB_DIR" -ltickwire -lenet -lpthread -lm -o "$OUT/bench-transport"

echo "== bench-transport $* (tickwire $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'))"
LD_LIBRARY_PATH="$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$OUT/bench-transport" "$@"
