#!/usr/bin/env bash
# Windows from this Debian machine: cross-builds tickwire for x86_64-pc-windows-gnu
# (mingw-w64) and runs it under Wine. Installs what it needs from Debian when missing.
#
#   scripts/windows.sh smoke    the library (DLL, import library, static library), every
#                               C example, the C ABI misuse test and the relay identity
#                               test, built with mingw
#                               as strict C11 and run under Wine; the install layout, a
#                               CMake consumer built with the mingw-w64 toolchain and
#                               run under Wine, the Unity plugin copy, and last the DLL
#                               without test hooks into build/windows/shipped/ (the Unity
#                               package's; tests/run.sh runs this)
#   scripts/windows.sh cargo [ARGS...]
#                               `cargo test --workspace` with every test binary run under
#                               Wine (a few minutes; not in the default run); ARGS go to
#                               cargo test (e.g. `--test c_abi ffi_relay::`)
#   scripts/windows.sh bench    `tickwire bench loopback`, release, natively and under Wine
#   scripts/windows.sh package [PREFIX]
#                               the release DLL, installed into PREFIX (default
#                               build/windows/tickwire); scripts/unity-pack.sh then packs
#                               it into the Unity package's tarball
#   scripts/windows.sh all      smoke, cargo, bench
#
# Toolchain (see shared/reference/windows.md): rustup cannot download targets here, so
# Debian's own Rust (rustc-web, with std sources) builds std for the target
# (-Z build-std, through RUSTC_BOOTSTRAP); the rustup toolchain on PATH is untouched.
# Everything it writes goes under target-win/ and build/windows/ (the Wine prefix too).
#
# Wine 8.0 lacks bcryptprimitives.dll, whose ProcessPrng Rust's std imports; a test-only
# stand-in (scripts/windows/processprng.c) goes into the throw-away prefix, never into
# a package.
#
# The last line is "N passed, N failed"; the exit status is non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MODE="${1:-smoke}"
TARGET=x86_64-pc-windows-gnu
OUT="$ROOT/build/windows"
WIN_TARGET_DIR="$ROOT/target-win"
WINE=/usr/lib/wine/wine64

# --- tools ---------------------------------------------------------------------------
missing=()
[ -x /usr/bin/rustc ] && /usr/bin/rustc --version 2>/dev/null | grep -q . || missing+=(rustc-web)
[ -x /usr/bin/cargo ] || missing+=(cargo-web)
[ -d /usr/lib/rustlib/src/rust/library ] || missing+=(rust-web-src)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(gcc-mingw-w64-x86-64)
command -v x86_64-w64-mingw32-g++-posix >/dev/null 2>&1 || missing+=(g++-mingw-w64-x86-64-posix)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v nasm >/dev/null 2>&1 || missing+=(nasm) # aws-lc-sys assembles AWS-LC's x86-64 code with it for Windows
[ -x "$WINE" ] || missing+=(wine64)
# shellcheck source=scripts/apt-install.sh
source "$ROOT/scripts/apt-install.sh"
apt_install_missing ${missing[@]+"${missing[@]}"}

export RUSTC=/usr/bin/rustc
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_DIR="$WIN_TARGET_DIR"
export WINEPREFIX="$OUT/wine-prefix"
export WINEDEBUG=-all
CARGO=(/usr/bin/cargo)
BUILD_STD=(-Z build-std=std,panic_unwind --target "$TARGET")
WIN_CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include")
mkdir -p "$OUT"

CHECK_PREFIX="windows: "
# shellcheck source=tests/check.sh
source "$ROOT/tests/check.sh"

# A Wine prefix of our own, with the ProcessPrng stand-in in system32.
prepare_wine() {
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        "$WINE" wineboot --init >"$OUT/wineboot.log" 2>&1 || { tail -n 20 "$OUT/wineboot.log"; return 1; }
        /usr/lib/wine/wineserver -w 2>/dev/null || true
    fi
    x86_64-w64-mingw32-gcc -shared -O2 -o "$OUT/bcryptprimitives.dll" scripts/windows/processprng.c \
        scripts/windows/processprng.def -ladvapi32 &&
        cp "$OUT/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
}

# Runs a Windows program under Wine with a time limit.
run_wine() {
    timeout 300 "$WINE" "$@"
}

build_library() {
    "${CARGO[@]}" build "${BUILD_STD[@]}" --lib -p tickwire --features test-hooks
}

smoke() {
    local lib="$WIN_TARGET_DIR/$TARGET/debug"
    check "prepare the Wine prefix (ProcessPrng stand-in)" prepare_wine
    check "build tickwire.dll, libtickwire.dll.a and libtickwire.a (with the test hooks)" build_library
    mkdir -p "$OUT/bin"
    cp "$lib/tickwire.dll" "$OUT/bin/" 2>/dev/null || true
    for src in examples-c/loopback.c examples-c/p2p.c examples-c/relay.c examples-c/rendezvous.c tests/c/abi_misuse.c tests/c/relay_identity.c; do
        local name
        name="$(basename "$src" .c)"
        # winpthread statically: clock_gettime and nanosleep, and no extra DLL to ship.
        check "$name: build with mingw as strict C11" x86_64-w64-mingw32-gcc "${WIN_CFLAGS[@]}" "$src" \
            -L"$lib" -ltickwire -l:libwinpthread.a -o "$OUT/bin/$name.exe"
        if [ -f "$OUT/bin/$name.exe" ]; then
            check "$name: run under Wine" run_wine "$OUT/bin/$name.exe"
        else
            check "$name: run under Wine (not built)" false
        fi
    done
    # The static library links into a program that needs no tickwire.dll.
    static_link() {
        x86_64-w64-mingw32-gcc "${WIN_CFLAGS[@]}" examples-c/loopback.c "$lib/libtickwire.a" \
            -lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -l:libwinpthread.a -o "$OUT/static/loopback_static.exe" &&
            ! x86_64-w64-mingw32-objdump -p "$OUT/static/loopback_static.exe" | grep -qi 'tickwire.dll' &&
            run_wine "$OUT/static/loopback_static.exe"
    }
    mkdir -p "$OUT/static"
    check "loopback linked against libtickwire.a: needs no tickwire.dll, runs" static_link

    local prefix="$OUT/prefix"
    rm -rf "$prefix"
    install_layout() {
        scripts/install.sh "$prefix" --lib-dir "$lib" >/dev/null &&
            for f in bin/tickwire.dll lib/libtickwire.dll.a lib/libtickwire.a include/tickwire.h \
                include/tickwire.hpp lib/cmake/tickwire/tickwireConfig.cmake lib/pkgconfig/tickwire.pc; do
                [ -f "$prefix/$f" ] || { echo "missing $prefix/$f"; return 1; }
            done
    }
    check "install.sh lays out bin/tickwire.dll and lib/libtickwire.{dll.a,a}" install_layout
    cmake_consumer() {
        local b="$OUT/cmake-consumer"
        rm -rf "$b"
        cmake -S tests/cmake-consumer -B "$b" -DCMAKE_TOOLCHAIN_FILE="$ROOT/tests/cmake-consumer/mingw-w64-x86_64.cmake" \
            -DCMAKE_PREFIX_PATH="$prefix" >"$OUT/cmake-configure.log" 2>&1 || { cat "$OUT/cmake-configure.log"; return 1; }
        cmake --build "$b" -j 2 >"$OUT/cmake-build.log" 2>&1 || { cat "$OUT/cmake-build.log"; return 1; }
        # The static program carries the library inside: no tickwire.dll import.
        if x86_64-w64-mingw32-objdump -p "$b/loopback_static.exe" | grep -qi 'tickwire.dll'; then
            echo "loopback_static.exe imports tickwire.dll"
            return 1
        fi
        (cd "$b" && timeout 300 ctest --output-on-failure)
    }
    check "CMake consumer with MinGW: find_package(tickwire), C shared, C static and C++ under Wine" cmake_consumer
    unity_plugins() {
        local dest="$OUT/unity-plugins"
        rm -rf "$dest"
        # The copy is the library less its debug information, with a PE timestamp of 0
        # (see unity-plugins.sh). The strip here runs at least a second later on purpose:
        # without the fixed timestamp the bytes differ.
        TICKWIRE_UNITY_PLUGINS="$dest" scripts/unity-plugins.sh "$lib" >/dev/null &&
            sleep 1.1 &&
            SOURCE_DATE_EPOCH=0 x86_64-w64-mingw32-strip --strip-debug -o "$OUT/tickwire.stripped.dll" "$lib/tickwire.dll" &&
            cmp "$OUT/tickwire.stripped.dll" "$dest/Windows/x86_64/tickwire.dll"
    }
    check "unity-plugins.sh puts tickwire.dll in Plugins/Windows/x86_64" unity_plugins
    # Last, since it replaces the DLL the checks above ran: the library as shipped (no
    # test hooks), which tests/run.sh packs into the Unity package.
    shipped_library() {
        "${CARGO[@]}" build "${BUILD_STD[@]}" --lib -p tickwire &&
            mkdir -p "$OUT/shipped" && cp "$lib/tickwire.dll" "$OUT/shipped/"
    }
    check "build tickwire.dll without the test hooks into build/windows/shipped (for the Unity package)" shipped_library
}

package() {
    local prefix="${1:-$OUT/tickwire}"
    local lib="$WIN_TARGET_DIR/$TARGET/release"
    release_library() { "${CARGO[@]}" build "${BUILD_STD[@]}" --release --lib -p tickwire; }
    check "build the release tickwire.dll, libtickwire.dll.a and libtickwire.a" release_library
    check "install into $prefix" scripts/install.sh "$prefix" --lib-dir "$lib"
}

cargo_tests() {
    # (arguments: passed to cargo test)
    check "prepare the Wine prefix (ProcessPrng stand-in)" prepare_wine
    # an_engine_stall_under_bulk_traffic_stays_bounded_and_fair: six peers send at their
    # full legal rate (28 MB in 4 s) while an honest one sends inputs, and the test
    # wants every honest input but 5 within 150 ms. Under Wine each recv is a round trip
    # to wineserver (4x a native send in the bench), so on this 2-core machine the
    # network thread cannot drain the socket at that rate and the OS drops datagrams
    # before they reach the per-peer queues: 47-50 of 56 arrived in 2 of 3 runs. It
    # measures the emulator's recv cost, not the library; it runs natively every time.
    # Doctests stay on Linux (they are the same code, and rustdoc would have to be
    # Debian's too). binding_a_foreign_address_fails: Wine 8.0 lets bind() to an address the machine
    # does not have succeed (it binds 0.0.0.0), so the error it expects cannot happen.
    # tickwire-webrtc-carrier is left out: its WebRTC stack (str0m, and aws-lc-sys, C
    # built by its own build script) has not been cross-built for mingw here, and it
    # tests the external carrier, which is the same code on every platform.
    # The real-socket tests hold timing limits (an input's wait, a tick rate) that
    # assume socket calls cost what a kernel call costs; under Wine each is a round
    # trip to wineserver, so it gets the same kernel-like priority as in the bench.
    cargo_under_wine() {
        local args=("$@")
        [ "${#args[@]}" -gt 0 ] || args=(--lib --bins --tests)
        keep_wineserver_prioritised &
        local keeper=$!
        local rc=0
        # RUST_BACKTRACE=0: a panic hook runs on the thread that panicked, and the
        # network thread is shared by every host; under Wine, capturing a backtrace
        # takes seconds, so a test that panics one host on purpose
        # (runtime_service's flood-and-panic test) would see the others stall for it.
        RUST_BACKTRACE=0 CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$WINE" "${CARGO[@]}" test "${BUILD_STD[@]}" --workspace \
            --exclude tickwire-cli --exclude tickwire-webrtc-carrier --no-fail-fast "${args[@]}" -- --skip binding_a_foreign_address_fails \
            --skip an_engine_stall_under_bulk_traffic_stays_bounded_and_fair || rc=$?
        kill "$keeper" 2>/dev/null || true
        wait "$keeper" 2>/dev/null || true
        return "$rc"
    }
    check "cargo test --workspace under Wine" cargo_under_wine "$@"
}

# Renices every wineserver to -15 while it runs (test binaries start and stop their own).
keep_wineserver_prioritised() {
    exec >/dev/null 2>&1
    while true; do
        for p in $(pgrep -x wineserver64; pgrep -x wineserver); do renice -n -15 -p "$p" || true; done
        sleep 0.5
    done
}

# Under Wine every socket call and every wait is a round trip to wineserver, a user
# process that stands in for the Windows kernel. The bench's engines busy-poll both of
# this machine's 2 cores, so at normal priority wineserver waits for a scheduler slice
# (about 1 ms) on every hop: a cost real Windows does not have, where these are system
# calls run on the caller's thread. wineserver is given kernel-like priority for the run
# (root can renice; otherwise the figure is reported as measured, with that caveat).
wine_bench() {
    "$WINE" "$@" &
    local bench_pid=$!
    local i
    for i in $(seq 1 50); do
        if pgrep -x wineserver64 >/dev/null 2>&1 || pgrep -x wineserver >/dev/null 2>&1; then break; fi
        sleep 0.1
    done
    local p
    for p in $(pgrep -x wineserver64; pgrep -x wineserver); do
        renice -n -15 -p "$p" >/dev/null 2>&1 && echo "(wineserver $p reniced to -15)" ||
            echo "(could not renice wineserver: figures include its scheduling delay)"
    done
    wait "$bench_pid"
}

bench() {
    check "prepare the Wine prefix (ProcessPrng stand-in)" prepare_wine
    bench_both() {
        "${CARGO[@]}" build "${BUILD_STD[@]}" --release -p tickwire-cli &&
            echo "-- native (Linux, rustup toolchain, release):" &&
            (env -u RUSTC -u RUSTC_BOOTSTRAP CARGO_TARGET_DIR="$ROOT/target" cargo run -q --release -p tickwire-cli -- bench loopback) &&
            echo "-- Windows build under Wine (release):" &&
            wine_bench "$WIN_TARGET_DIR/$TARGET/release/tickwire.exe" bench loopback
    }
    check "tickwire bench loopback, natively and under Wine" bench_both
}

case "$MODE" in
smoke) smoke ;;
cargo)
    shift
    cargo_tests "$@"
    ;;
bench) bench ;;
package) package "${2:-}" ;;
all)
    smoke
    cargo_tests
    bench
    ;;
*)
    echo "usage: $0 [smoke|cargo|bench|all]" >&2
    exit 2
    ;;
esac

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
