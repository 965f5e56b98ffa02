#!/usr/bin/env bash
# Everything: cargo test (all targets, the committed fuzz corpus replayed through the
# fuzz targets among them, plus doctests), then the C ABI checks: the C
# examples (loopback, P2P, relay, the external carrier, P2P through a rendezvous), the C misuse test and the C identity test built as strict C11,
# syntax-checked as C++17, run, and run under valgrind (against the debug and the
# optimized library). Then the bindings: C# (built with mcs -langversion:7.2, tests run
# under the Mono JIT and under Mono full AOT, the stand-in for IL2CPP), the C++ wrapper
# and its examples (run, and under valgrind), the Unity package (scripts/unity-pack.sh, scripts/unity-package-check.sh),
# and packaging (the SONAME, install to a temporary prefix, a CMake consumer, a
# pkg-config consumer, shared and static), and the transport benchmark's smoke
# (scripts/bench-transport.sh --smoke, against ENet), and the NAT lab (tests/nat/run.sh: network
# namespaces and real NATs, skipped without root). Then Windows: scripts/windows.sh smoke cross-builds the library
# for x86_64-pc-windows-gnu and runs the C examples, the misuse test and a MinGW CMake
# consumer under Wine (the full cargo suite under Wine is `scripts/windows.sh cargo`).
# Installs a C compiler, valgrind, Mono, binutils, cmake, NASM, pkg-config, libenet-dev, mingw-w64,
# Wine, iproute2, nftables and conntrack from Debian if they are missing. Everything it writes goes under build/ (and target-win/).
#
# The last line is "N passed, N failed" over every check, the cargo steps among them;
# the exit status is non-zero if any failed.
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
command -v mcs >/dev/null 2>&1 || missing+=(mono-mcs)
command -v mono >/dev/null 2>&1 || missing+=(mono-runtime)
[ -e /usr/lib/mono/4.5/mscorlib.dll ] || missing+=(libmono-corlib4.5-dll) # full AOT compiles it
command -v as >/dev/null 2>&1 && command -v ld >/dev/null 2>&1 || missing+=(binutils) # full AOT assembles and links
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkgconf)
command -v jq >/dev/null 2>&1 || missing+=(jq) # scripts/unity-package-check.sh reads the asmdefs
[ -e /usr/include/enet/enet.h ] || missing+=(libenet-dev) # the transport benchmark's smoke compares with ENet
command -v turnserver >/dev/null 2>&1 || missing+=(coturn) # the runtime's STUN test (runtime_stun.rs) asks a real coturn; it runs its own on a free port, clear of the daemon the package may start
# tests/nat/run.sh (the NAT lab: namespaces, nftables NATs, conntrack); in /usr/sbin
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing+=(nftables)
command -v conntrack >/dev/null 2>&1 || [ -x /usr/sbin/conntrack ] || missing+=(conntrack)
command -v nasm >/dev/null 2>&1 || missing+=(nasm) # the Windows cross-build's AWS-LC (scripts/windows.sh)
# tests/serve/run.sh: promtool lints `tickwire serve`'s metrics and a real Prometheus scrapes them
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# shellcheck source=scripts/apt-install.sh
source "$ROOT/scripts/apt-install.sh"
apt_install_missing ${missing[@]+"${missing[@]}"}

# --- cargo ---------------------------------------------------------------------------
# Each cargo step is a check of its own, counted in the last line like the rest.
# shellcheck source=tests/check.sh
source "$ROOT/tests/check.sh"
check "cargo fmt --all --check" cargo fmt --all --check
check "cargo clippy --workspace --all-targets -- -D warnings" cargo clippy --workspace --all-targets -- -D warnings
check "RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps" env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
check "cargo test --workspace --all-targets" cargo test --workspace --all-targets
check "cargo test --workspace --doc" cargo test --workspace --doc
# Timing tests of real-clock mechanisms (a busy poller's doubling): alone, on an
# otherwise idle machine, since a test thread preempted by its neighbours cannot poll
# steadily. They are #[ignore]d in the parallel run above.
check "cargo test -p tickwire-runtime --lib -- --ignored busy_poller_ --test-threads=1" \
    cargo test -p tickwire-runtime --lib -- --ignored busy_poller_ --test-threads=1
# The fuzz targets are a workspace member (tickwire-fuzzing, crates/fuzzing): the runs
# above lint them and replay every committed input of fuzz/corpus/ through them
# (its tests/fuzz_corpus.rs). It turns on tickwire-proto's `fuzzing` feature, so those
# runs build proto with it: lint proto alone as well, as shipped (without it) and with it.
check "cargo clippy -p tickwire-proto --all-targets -- -D warnings (no fuzzing feature)" \
    cargo clippy -p tickwire-proto --all-targets -- -D warnings
check "cargo clippy -p tickwire-proto --all-targets --features fuzzing -- -D warnings" \
    cargo clippy -p tickwire-proto --all-targets --features fuzzing -- -D warnings
# The shipped library first (no test hooks), kept aside for the layering checks; then
# the library the C programs link, with the tw_debug_* hooks the misuse test calls.
SHIPPED="$ROOT/build/shipped"
mkdir -p "$SHIPPED"
build_shipped() {
    cargo build --lib -p tickwire && cp "$LIB_DIR/libtickwire.so" "$LIB_DIR/libtickwire.a" "$SHIPPED/"
}
check "cargo build --lib -p tickwire (the shipped library, no test hooks)" build_shipped
check "cargo build --lib -p tickwire --features test-hooks (the library the C checks link)" \
    cargo build --lib -p tickwire --features test-hooks
# The same, optimized: the C programs run under valgrind against it too (below).
check "cargo build --release --lib -p tickwire --features test-hooks (valgrind on optimized code)" \
    cargo build --release --lib -p tickwire --features test-hooks

# The shared library's SONAME is libtickwire.so.N (build.rs; N = TW_ABI_VERSION), the
# name programs linked with -ltickwire look for at run time. cargo writes only
# libtickwire.so: give each build directory the SONAME link, as install.sh does.
ABI="$(sed -n 's/^#define TW_ABI_VERSION \([0-9]*\)$/\1/p' include/tickwire.h)"
SONAME="libtickwire.so.$ABI"
for dir in "$LIB_DIR" "$TARGET_DIR/release"; do
    [ -f "$dir/libtickwire.so" ] && ln -sfn libtickwire.so "$dir/$SONAME"
done

# --- layering: what each crate may contain ---------------------------------------------
# The protocol crate is sans-IO: no socket, thread-pool, channel or libc crate below it.
proto_has_no_io_crates() {
    local deps
    deps="$(cargo tree -p tickwire-proto -e normal --prefix none --format '{p}' | sed 's/ .*//' | sort -u)"
    echo "tickwire-proto depends on: $(echo "$deps" | tr '\n' ' ')"
    ! echo "$deps" | grep -Ex 'socket2|crossbeam-channel|crossbeam-.*|libc|mio|tokio|getrandom|windows-sys'
}
check "tickwire-proto depends on no socket, thread, channel or OS crate (cargo tree)" proto_has_no_io_crates
# The shipped library's tickwire-proto is built without the `fuzzing` feature (only
# tickwire-fuzzing turns it on, and nothing shipped depends on that).
shipped_has_no_fuzzing() {
    local tree
    tree="$(cargo tree -p tickwire -e features --prefix none)" || return 1
    ! echo "$tree" | grep -F fuzzing
}
check "the shipped library's tickwire-proto has no fuzzing feature (cargo tree)" shipped_has_no_fuzzing
# The WebRTC carrier test's stack (str0m, its DTLS and crypto) is for that test alone.
# (AWS-LC's crates are no mark of it: hosts seal their packets with AWS-LC through
# aws-lc-sys, crates/runtime/src/aws_lc_aead.rs; str0m's own crypto crates start with "str0m".)
shipped_has_no_webrtc_stack() {
    local tree
    tree="$(cargo tree -p tickwire -e normal,build --prefix none --format '{p}')" || return 1
    ! echo "$tree" | grep -E '^(str0m|dimpl|sctp-proto|tickwire-webrtc-carrier)'
}
check "the shipped library pulls in no WebRTC stack (cargo tree)" shipped_has_no_webrtc_stack
# The shipped library exports the header's functions and nothing of the tests or the lab.
shipped_has_no_test_code() {
    local exported header
    exported="$(nm -D --defined-only "$SHIPPED/libtickwire.so" | awk '$2 == "T" && $3 ~ /^tw_/ {print $3}' | sort)"
    header="$(grep -oE '\btw_[a-z0-9_]+\(' include/tickwire.h | tr -d '(' | sort -u)"
    echo "$(echo "$exported" | wc -l) tw_* functions exported"
    if echo "$exported" | grep -q '^tw_debug_'; then echo "exports a tw_debug_* hook"; return 1; fi
    if nm -C "$SHIPPED/libtickwire.a" 2>/dev/null | grep -qE 'tickwire_lab|tw_debug_'; then
        echo "the static library holds lab code or a test hook"; return 1
    fi
    if nm -C "$SHIPPED/libtickwire.so" | grep -qE 'tickwire_lab'; then echo "the shared library holds lab code"; return 1; fi
    # Every exported function is declared in the header, and the other way round.
    diff <(echo "$exported") <(comm -12 <(echo "$header") <(echo "$exported")) >/dev/null &&
        [ "$(echo "$exported" | wc -l)" -eq "$(comm -12 <(echo "$header") <(echo "$exported") | wc -l)" ]
}
check "the shipped library exports no tw_debug_* hook and holds no lab code (nm)" shipped_has_no_test_code

CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -I"$ROOT/include")
CXXFLAGS=(-x c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$ROOT/include")
LDFLAGS=(-L"$LIB_DIR" -ltickwire)
VALGRIND=(valgrind --quiet --trace-children=yes --leak-check=full --error-exitcode=99 --suppressions="$ROOT/tests/c/valgrind.supp")
mkdir -p "$OUT"

# The header on its own, included twice, as C11 and as C++17.
printf '#include "tickwire.h"\n#include "tickwire.h"\nint tw_header_only_check(void);\n' >"$OUT/header_only.c"
check "header: strict C11" cc "${CFLAGS[@]}" -c "$OUT/header_only.c" -o "$OUT/header_only.o"
check "header: C++17 syntax" c++ "${CXXFLAGS[@]}" "$OUT/header_only.c"
# The cold-memory probe of docs/benchmarks.md builds (it is run by hand: it sleeps).
check "cold_pages probe: build as strict C11" cc "${CFLAGS[@]}" -O2 bench/probe/cold_pages.c -o "$OUT/cold_pages"

programs=(examples-c/loopback.c examples-c/p2p.c examples-c/relay.c examples-c/carrier.c examples-c/rendezvous.c tests/c/abi_misuse.c tests/c/log_hook.c tests/c/relay_identity.c)
for src in "${programs[@]}"; do
    name="$(basename "$src" .c)"
    check "$name: build as strict C11" cc "${CFLAGS[@]}" "$src" "${LDFLAGS[@]}" -o "$OUT/$name"
    check "$name: C++17 syntax check" c++ "${CXXFLAGS[@]}" "$src"
done

# Runs a program with the native library from $1 (only there) on the path.
run_program_in() {
    local libs="$1"
    shift
    # A caught panic in the misuse test prints a panic note; keep it short.
    LD_LIBRARY_PATH="$libs" RUST_BACKTRACE=0 timeout 120 "$@"
}
run_program() {
    run_program_in "$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}
# Each program also runs under valgrind against the optimized library, as a game ships
# it: there the compiler may load a field before the branch that decides whether it is
# used, and a load of bytes never written is what valgrind reports (issue 18, 2: an
# optimized tw_session_poll_event of a plain P2P session read a relay client's field of
# the session, and only a release build showed it). Same binaries, the other library.
RELEASE_LIB_DIR="$TARGET_DIR/release"
for src in "${programs[@]}"; do
    name="$(basename "$src" .c)"
    if [ -x "$OUT/$name" ]; then
        check "$name: run" run_program "$OUT/$name"
        check "$name: valgrind" run_program "${VALGRIND[@]}" "$OUT/$name"
        check "$name: valgrind, optimized library" run_program_in "$RELEASE_LIB_DIR" "${VALGRIND[@]}" "$OUT/$name"
    else
        check "$name: run (not built)" false
        check "$name: valgrind (not built)" false
        check "$name: valgrind, optimized library (not built)" false
    fi
done

# --- C# bindings (Mono) ---------------------------------------------------------------
CS="$ROOT/build/csharp"
UNITY_PKG="$ROOT/examples-csharp/unity/com.tickwire.runtime"
# The one copy of the binding is the Unity package's (Unity imports only files inside a
# package); every build below compiles it. The tests stay out of the package.
CS_SRC="$UNITY_PKG/Runtime/Tickwire"
CS_TESTS="$ROOT/bindings/csharp/Tests"
MCS=(mcs -langversion:7.2 -unsafe -warnaserror)
mkdir -p "$CS/unity" "$CS/stale" "$CS/pre-relay" "$CS/pre-security" "$CS/pre-nat"

# Every tw_* function of the header has exactly one DllImport of the same name in
# TwNative.cs, and the other way round; every DllImport is Cdecl with ExactSpelling.
# (The tw_debug_* test hooks are not in the header; the tests declare them, TestHooks.cs.)
native_names_match() {
    local header csharp imports
    header="$(grep -E '^[a-z_0-9 ]+[ *]tw_[a-z0-9_]+\(' include/tickwire.h | sed -E 's/^.*[ *](tw_[a-z0-9_]+)\(.*$/\1/' | sort)"
    csharp="$(grep -E 'static extern .* tw_[a-z0-9_]+\(' "$CS_SRC/Native/TwNative.cs" | sed -E 's/^.* (tw_[a-z0-9_]+)\(.*$/\1/' | sort)"
    imports="$(grep -c 'DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)' "$CS_SRC/Native/TwNative.cs")"
    [ -n "$header" ] && [ "$(echo "$header" | wc -l)" -ge 25 ] || { echo "found too few prototypes in the header"; return 1; }
    [ -z "$(echo "$csharp" | uniq -d)" ] || { echo "duplicate imports: $(echo "$csharp" | uniq -d)"; return 1; }
    [ "$imports" -eq "$(echo "$csharp" | wc -l)" ] || { echo "$imports Cdecl+ExactSpelling imports for $(echo "$csharp" | wc -l) externs"; return 1; }
    diff <(echo "$header") <(echo "$csharp") && echo "$(echo "$header" | wc -l) functions, the same in both"
}
check "C#: TwNative.cs imports exactly the header's functions" native_names_match
check "C#: build Tickwire.dll" "${MCS[@]}" -target:library -out:"$CS/Tickwire.dll" -recurse:"$CS_SRC/*.cs"
check "C#: build the test program" "${MCS[@]}" -r:"$CS/Tickwire.dll" -out:"$CS/Tickwire.Tests.exe" "$CS_TESTS"/*.cs
check "C#: build the relay session example" "${MCS[@]}" -r:"$CS/Tickwire.dll" -out:"$CS/RelaySessionExample.exe" examples-csharp/relay-session/*.cs
check "C#: build the host-level relay example" "${MCS[@]}" -r:"$CS/Tickwire.dll" -out:"$CS/RelayExample.exe" examples-csharp/relay/*.cs
check "C#: build the P2P example" "${MCS[@]}" -r:"$CS/Tickwire.dll" -out:"$CS/P2PExample.exe" examples-csharp/p2p/*.cs

# The Unity code path, against stand-ins of the Unity APIs it uses: the lifecycle hooks
# (editor defines), the iOS import name, and the package samples.
build_unity_path() {
    "${MCS[@]}" -target:library -out:"$CS/unity/UnityStubs.dll" "$CS_TESTS/UnitySim/UnityStubs.cs" &&
        "${MCS[@]}" -target:library -define:UNITY_5_3_OR_NEWER -define:UNITY_EDITOR -r:"$CS/unity/UnityStubs.dll" \
            -out:"$CS/unity/Tickwire.dll" -recurse:"$UNITY_PKG/Runtime/*.cs" &&
        "${MCS[@]}" -target:library -r:"$CS/unity/UnityStubs.dll" -r:"$CS/unity/Tickwire.dll" -out:"$CS/unity/SampleRelay.dll" \
            "$UNITY_PKG/Samples~/Relay"/*.cs &&
        "${MCS[@]}" -target:library -r:"$CS/unity/UnityStubs.dll" -r:"$CS/unity/Tickwire.dll" -out:"$CS/unity/SampleRendezvous.dll" \
            "$UNITY_PKG/Samples~/Rendezvous"/*.cs &&
        "${MCS[@]}" -r:"$CS/unity/UnityStubs.dll" -r:"$CS/unity/Tickwire.dll" -r:"$CS/unity/SampleRelay.dll" \
            -r:"$CS/unity/SampleRendezvous.dll" -out:"$CS/unity/UnitySim.exe" "$CS_TESTS/UnitySim/UnitySim.cs" &&
        "${MCS[@]}" -target:library -r:"$CS/unity/UnityStubs.dll" -r:"$CS/unity/Tickwire.dll" -out:"$CS/unity/SampleP2P.dll" \
            "$UNITY_PKG/Samples~/P2P"/*.cs &&
        "${MCS[@]}" -target:library -out:"$CS/unity/com.rlabrecque.steamworks.net.dll" "$CS_TESTS/UnitySim/SteamworksStubs.cs" &&
        "${MCS[@]}" -target:library -define:TICKWIRE_STEAMWORKS -r:"$CS/unity/Tickwire.dll" \
            -r:"$CS/unity/com.rlabrecque.steamworks.net.dll" -out:"$CS/unity/SampleSteam.dll" "$UNITY_PKG/Samples~/Steam"/*.cs &&
        mkdir -p "$CS/unity/ios" &&
        "${MCS[@]}" -target:library -define:UNITY_5_3_OR_NEWER -define:UNITY_IOS -r:"$CS/unity/UnityStubs.dll" \
            -out:"$CS/unity/ios/Tickwire.dll" -recurse:"$UNITY_PKG/Runtime/*.cs" &&
        grep -q __Internal "$CS/unity/ios/Tickwire.dll" && ! grep -q __Internal "$CS/Tickwire.dll"
}
check "C#: build the Unity code path against API stand-ins (editor, iOS, samples (relay, P2P, rendezvous); the Steam sample against Steamworks.NET stand-ins)" build_unity_path
run_indented() { "$@" 2>&1 | sed -u 's/^/    /'; }

# The C compiler's view of every struct, enum and numeric constant, for the C# test's
# offset, enumerator and constant comparisons (--offsets).
offsets() {
    bash "$CS_TESTS/gen-offsets.sh" include/tickwire.h >"$CS/offsets.c" &&
        cc "${CFLAGS[@]}" "$CS/offsets.c" -o "$CS/offsets" && "$CS/offsets" >"$CS/offsets.txt" &&
        echo "$(grep -c '^sizeof' "$CS/offsets.txt") structs, $(grep -c '^offsetof' "$CS/offsets.txt") members," \
            "$(grep -c '^enum' "$CS/offsets.txt") enumerators, $(grep -c '^define' "$CS/offsets.txt") constants"
}
check "C#: C offsets of every struct member, values of every enumerator and constant" offsets
check "C#: build a stale stand-in library" cc "${CFLAGS[@]}" -shared -fPIC "$CS_TESTS/stale_library.c" -o "$CS/stale/libtickwire.so"
check "C#: build a stand-in library from before the relay additions" cc "${CFLAGS[@]}" -shared -fPIC -DTW_STALE_BEFORE_RELAY \
    "$CS_TESTS/stale_library.c" -o "$CS/pre-relay/libtickwire.so"
check "C#: build a stand-in library from before encryption" cc "${CFLAGS[@]}" -shared -fPIC -DTW_STALE_BEFORE_SECURITY \
    "$CS_TESTS/stale_library.c" -o "$CS/pre-security/libtickwire.so"
check "C#: build a stand-in library from before NAT traversal" cc "${CFLAGS[@]}" -shared -fPIC -DTW_STALE_BEFORE_NAT \
    "$CS_TESTS/stale_library.c" -o "$CS/pre-nat/libtickwire.so"

# Runs a C# program with the native library from $1 on the path. Its own lines
# (ok/FAILED per test, "N passed, N failed") are indented under the check's name.
run_mono() {
    local libs="$1"
    shift
    LD_LIBRARY_PATH="$libs" RUST_BACKTRACE=0 timeout 300 "$@" 2>&1 | sed -u 's/^/    /'
}
check "C#: tests under the Mono JIT" run_mono "$LIB_DIR" mono "$CS/Tickwire.Tests.exe" --offsets "$CS/offsets.txt"
check "C#: a stale native library is refused" run_mono "$CS/stale" mono "$CS/Tickwire.Tests.exe" --expect-stale-library
check "C#: a native library from before the relay additions is refused" run_mono "$CS/pre-relay" mono "$CS/Tickwire.Tests.exe" --expect-pre-relay-library
check "C#: a native library from before encryption is refused" run_mono "$CS/pre-security" mono "$CS/Tickwire.Tests.exe" --expect-pre-security-library
check "C#: a native library from before NAT traversal is refused" run_mono "$CS/pre-nat" mono "$CS/Tickwire.Tests.exe" --expect-pre-nat-library
check "C#: a missing native library is reported" run_mono "" mono "$CS/Tickwire.Tests.exe" --expect-missing-library
check "C#: Unity lifecycle simulation (domain reload, play mode) and the relay and rendezvous samples' components" run_mono "$LIB_DIR" mono "$CS/unity/UnitySim.exe"
check "C#: relay session example" run_mono "$LIB_DIR" mono "$CS/RelaySessionExample.exe" --clients 3 --seconds 3 --latency-ms 30 --loss 0.01
check "C#: host-level relay example" run_mono "$LIB_DIR" mono "$CS/RelayExample.exe" --clients 3 --seconds 1 --latency-ms 10
check "C#: P2P example" run_mono "$LIB_DIR" mono "$CS/P2PExample.exe" --seconds 2 --latency-ms 30 --loss 0.02

# Mono full AOT: nothing may be JIT-compiled at run time, as under IL2CPP. mscorlib's
# AOT image (about 10 s to make) is kept in build/ while the system's mscorlib is the same.
AOT="$CS/aot"
aot_compile() {
    mkdir -p "$AOT"
    if ! cmp -s /usr/lib/mono/4.5/mscorlib.dll "$AOT/mscorlib.dll" || [ ! -f "$AOT/mscorlib.dll.so" ]; then
        rm -f "$AOT/mscorlib.dll.so"
        cp /usr/lib/mono/4.5/mscorlib.dll "$AOT/"
        (cd "$AOT" && MONO_PATH="$AOT" mono --aot=full mscorlib.dll >"$AOT/mscorlib.aot.log" 2>&1) ||
            { tail -n 20 "$AOT/mscorlib.aot.log"; return 1; }
    fi
    cp "$CS/Tickwire.dll" "$CS/Tickwire.Tests.exe" "$AOT/"
    (cd "$AOT" && MONO_PATH="$AOT" mono --aot=full Tickwire.dll >"$AOT/tickwire.aot.log" 2>&1 &&
        MONO_PATH="$AOT" mono --aot=full Tickwire.Tests.exe >>"$AOT/tickwire.aot.log" 2>&1) ||
        { tail -n 20 "$AOT/tickwire.aot.log"; return 1; }
}
check "C#: full AOT compile (mscorlib, Tickwire.dll, tests)" aot_compile
check "C#: tests under Mono full AOT" run_mono "$LIB_DIR" env MONO_PATH="$AOT" mono --full-aot "$AOT/Tickwire.Tests.exe" --offsets "$CS/offsets.txt"

# --- C++ wrapper ------------------------------------------------------------------------
CPP="$ROOT/build/cpp"
mkdir -p "$CPP"
CPPFLAGS=(-std=c++17 -Wall -Wextra -Werror -pedantic -I"$ROOT/include" -I"$ROOT/bindings/cpp")
printf '#include "tickwire.hpp"\n#include "tickwire.hpp"\nint tw_hpp_only_check();\n' >"$CPP/hpp_only.cpp"
check "C++: tickwire.hpp alone, included twice" c++ "${CPPFLAGS[@]}" -fsyntax-only "$CPP/hpp_only.cpp"
check "C++: build the example" c++ "${CPPFLAGS[@]}" bindings/cpp/example.cpp "${LDFLAGS[@]}" -o "$CPP/example"
check "C++: run the example" run_program "$CPP/example"
check "C++: the example under valgrind" run_program "${VALGRIND[@]}" "$CPP/example"
check "C++: build the session example (synctest, P2P pair, relay match)" c++ "${CPPFLAGS[@]}" bindings/cpp/session_example.cpp "${LDFLAGS[@]}" -o "$CPP/session_example"
check "C++: run the session example" run_program "$CPP/session_example" 2
check "C++: the session example under valgrind" run_program "${VALGRIND[@]}" "$CPP/session_example" 2
check "C++: build the carrier example (a P2P pair and a relay match bound to remote:<id>, an in-memory carrier with loss and jitter)" c++ "${CPPFLAGS[@]}" bindings/cpp/carrier_example.cpp "${LDFLAGS[@]}" -o "$CPP/carrier_example"
check "C++: run the carrier example" run_program "$CPP/carrier_example" 3
check "C++: the carrier example under valgrind" run_program "${VALGRIND[@]}" "$CPP/carrier_example" 3
check "C++: build the rendezvous example (an in-process tickwire::Rendezvous, tickets, two P2P matches met through it)" c++ "${CPPFLAGS[@]}" bindings/cpp/rendezvous_example.cpp "${LDFLAGS[@]}" -o "$CPP/rendezvous_example"
check "C++: run the rendezvous example (open: DIRECT; private: RELAYED)" run_program "$CPP/rendezvous_example"
check "C++: the rendezvous example under valgrind" run_program "${VALGRIND[@]}" "$CPP/rendezvous_example"

# --- packaging: install, then consume with CMake and with pkg-config --------------------
PKG="$ROOT/build/cmake-consumer"
rm -rf "$PKG"
mkdir -p "$PKG"
# The shipped .so names its ABI version (build.rs), and install.sh installs it as that.
soname_is_abi_version() {
    local got
    got="$(readelf -d "$SHIPPED/libtickwire.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
    echo "SONAME: '$got' (TW_ABI_VERSION $ABI)"
    [ -n "$ABI" ] && [ "$got" = "$SONAME" ]
}
check "native library: the SONAME is libtickwire.so.TW_ABI_VERSION (readelf -d)" soname_is_abi_version
# --help lists every option the argument loop takes and every variable the script reads.
install_help_documents_every_option() {
    local help options vars missing=0 o
    help="$(scripts/install.sh --help)" || return 1
    echo "$help" | head -n 1 | grep -q '^usage:' || { echo "--help does not start with usage:"; return 1; }
    options="$(grep -oE '^ +(-[a-z-]+ \| )?--[a-z-]+\)' scripts/install.sh | tr -d ' )' | tr '|' '\n' | sort -u)"
    vars="$(grep -oE '\$\{(TICKWIRE|CARGO)_[A-Z_]+' scripts/install.sh | tr -d '${' | sort -u)"
    [ "$(echo "$options" | wc -l)" -ge 3 ] || { echo "found too few options in install.sh: $options"; return 1; }
    for o in $options $vars; do
        if ! echo "$help" | grep -qE "(^|[ ,])$o([ ,]|\$)"; then
            echo "--help does not document $o"
            missing=1
        fi
    done
    echo "documented: $(echo $options $vars)"
    # A wrong option is refused with the usage on stderr and status 2.
    local rc=0
    scripts/install.sh "$PKG/unused" --no-such-option 2>/dev/null || rc=$?
    [ "$rc" -eq 2 ] && [ ! -e "$PKG/unused" ] || { echo "an unknown option gave status $rc"; missing=1; }
    return "$missing"
}
check "install.sh --help documents every option and variable it reads" install_help_documents_every_option
check "install.sh into a temporary prefix" scripts/install.sh "$PKG/prefix" --lib-dir "$LIB_DIR"
installed_soname_layout() {
    [ -f "$PKG/prefix/lib/$SONAME" ] && [ ! -L "$PKG/prefix/lib/$SONAME" ] || { echo "no file lib/$SONAME"; return 1; }
    [ "$(readlink "$PKG/prefix/lib/libtickwire.so")" = "$SONAME" ] || { echo "lib/libtickwire.so is not a link to $SONAME"; return 1; }
}
check "install.sh: lib/$SONAME, and lib/libtickwire.so linking to it" installed_soname_layout
# A program linked with -ltickwire records the SONAME, not libtickwire.so.
records_soname() {
    local needed
    needed="$(readelf -d "$1" | sed -n 's/.*Shared library: \[\(libtickwire[^]]*\)\].*/\1/p')"
    echo "$(basename "$1") needs: $needed"
    [ "$needed" = "$SONAME" ]
}
cmake_consumer() {
    cmake -S tests/cmake-consumer -B "$PKG/build" -DCMAKE_PREFIX_PATH="$PKG/prefix" >"$PKG/configure.log" 2>&1 ||
        { cat "$PKG/configure.log"; return 1; }
    cmake --build "$PKG/build" -j 2 >"$PKG/build.log" 2>&1 || { cat "$PKG/build.log"; return 1; }
    # The static build must not need libtickwire.so at run time.
    if ldd "$PKG/build/loopback_static" | grep -q tickwire; then
        echo "loopback_static depends on libtickwire.so"
        return 1
    fi
    records_soname "$PKG/build/loopback" || return 1
    (cd "$PKG/build" && timeout 300 ctest --output-on-failure)
}
check "CMake consumer: find_package(tickwire), build and ctest (C shared, C static, C++)" cmake_consumer
pkg_config_consumer() {
    local pc=(env PKG_CONFIG_PATH="$PKG/prefix/lib/pkgconfig" pkg-config)
    [ "$("${pc[@]}" --modversion tickwire)" = "$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)" ] || return 1
    # shellcheck disable=SC2046
    cc "${CFLAGS[@]}" examples-c/loopback.c $("${pc[@]}" --cflags --libs tickwire) -o "$PKG/pc-loopback" &&
        records_soname "$PKG/pc-loopback" &&
        run_program_in "$PKG/prefix/lib" "$PKG/pc-loopback"
}
check "pkg-config consumer: build and run the C example (records $SONAME)" pkg_config_consumer
# pkg-config --static: the installed libtickwire.a and Libs.private make a whole static
# program (glibc warns that getaddrinfo and getpwuid_r want its shared libraries at run
# time: that is a warning, and this program uses neither).
pkg_config_static_consumer() {
    local pc=(env PKG_CONFIG_PATH="$PKG/prefix/lib/pkgconfig" pkg-config)
    local libs
    libs="$("${pc[@]}" --static --libs tickwire)" || return 1
    echo "pkg-config --static --libs tickwire: $libs"
    # shellcheck disable=SC2046,SC2086
    cc "${CFLAGS[@]}" -static examples-c/loopback.c $("${pc[@]}" --cflags tickwire) $libs -o "$PKG/pc-static-loopback" \
        2>"$PKG/pc-static.log" || { cat "$PKG/pc-static.log"; return 1; }
    if readelf -d "$PKG/pc-static-loopback" 2>/dev/null | grep -q NEEDED; then
        echo "the program still needs shared libraries:"
        readelf -d "$PKG/pc-static-loopback" | grep NEEDED
        return 1
    fi
    # No library path at all: nothing to load.
    run_program_in "" "$PKG/pc-static-loopback"
}
check "pkg-config --static consumer: cc -static links the installed libtickwire.a, no shared library needed, runs" \
    pkg_config_static_consumer

# --- benchmarks: the short forms, which check behaviour and never speed ----------------
# bench/transport: ENet and tickwire, plaintext and encrypted, through the
# same harness; every message of the ping-pongs echoed, every reliable message through
# the lossy proxy delivered, every figure finite. Its lines are indented under this one.
check "transport benchmark smoke: scripts/bench-transport.sh --smoke (ENet vs tickwire; delivery, not speed)" \
    run_indented scripts/bench-transport.sh --smoke

# --- the NAT lab ---------------------------------------------------------------------------
# tests/nat/: network namespaces with real NATs (nftables, conntrack) between them, for the
# NAT traversal tests; its own run checks that each NAT measures as claimed (RFC 4787
# mapping and filtering, a double NAT, hairpinning) and leaves nothing behind. Without root
# and network namespaces it prints a skip line and passes. Its lines are indented under this one.
check "NAT lab: tests/nat/run.sh (EIM+EIF, EIM+ADF, EIM+APDF, EDM, double NAT, hairpin, measured by tests/nat/probe.py)" \
    run_indented tests/nat/run.sh
# NAT traversal through those NATs: every pair of NAT kinds plays a 60 s P2P match met
# through `tickwire rendezvous` (`tickwire peer` each side, 25 ms added to each one's
# sends), plus a mapping flushed mid-match, UDP blocked between the peers mid-match, and
# a private match whose relay recording must not compress. About 2.5 minutes (the rows
# run in parallel); the table and its checks are indented under this line.
# Runs a script with the release `tickwire` built first.
with_release_cli() {
    cargo build --release -p tickwire-cli >/dev/null 2>&1 || {
        echo "cargo build --release -p tickwire-cli failed"
        return 1
    }
    run_indented "$@"
}
nat_matrix() { with_release_cli tests/nat/matrix.sh; }
check "NAT traversal: tests/nat/matrix.sh (the matrix of NAT pairs; flush, blocked, private)" nat_matrix

# --- tickwire serve ------------------------------------------------------------------------
# The fleet server (tests/serve/run.sh): 20 matches made by tokens, each with a mid-match
# joiner, played to the end in sync by `tickwire bench serve`; the Agones SDK's calls checked
# by a stand-in sidecar against the published API, in order; /metrics linted by promtool and
# scraped by a real Prometheus; SIGTERM mid-match drains with no match cut short. About 40 s.
serve_suite() { with_release_cli tests/serve/run.sh; }
check "tickwire serve: tests/serve/run.sh (20 matches, Agones stand-in, promtool, Prometheus, drain)" serve_suite

# --- Windows (cross-built, run under Wine) ----------------------------------------------
check "Windows smoke: scripts/windows.sh smoke (DLL, C examples, misuse test, CMake consumer under Wine)" \
    scripts/windows.sh smoke

# --- the Unity package ------------------------------------------------------------------
# The tarball a user installs, built from the libraries without test hooks (Linux: the
# shipped build above; Windows: the smoke's), then checked as installed: .meta files and
# unique GUIDs, valid asmdefs, the Linux and Windows plugins, license files, and each
# sample compiled on its own asmdef against the same API stand-ins. Its lines are
# indented under this one.
UNITY_TGZ="$ROOT/build/unity-package/com.tickwire.runtime.tgz"
unity_package() {
    scripts/unity-pack.sh --out "$UNITY_TGZ" "$SHIPPED" "$ROOT/build/windows/shipped" && scripts/unity-package-check.sh "$UNITY_TGZ"
}
check "Unity package: scripts/unity-pack.sh, then scripts/unity-package-check.sh (.meta files, asmdefs, plugins, samples compile with mcs)" \
    run_indented unity_package

echo "$passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    exit 1
fi
