#!/usr/bin/env bash
# Installs tickwire for C and C++ programs:
#
#   PREFIX/include/tickwire.h           the C header (the contract)
#   PREFIX/include/tickwire.hpp         the C++17 RAII wrapper (header-only)
#   PREFIX/lib/libtickwire.so.N         shared library, named as its SONAME (N: the ABI
#   PREFIX/lib/libtickwire.so           version), and the link to it (.dylib on macOS)
#   PREFIX/lib/libtickwire.a            static library
#   PREFIX/lib/pkgconfig/tickwire.pc    pkg-config: cflags, libs, Libs.private for
#                                        pkg-config --static (with cc -static)
#   PREFIX/lib/cmake/tickwire/          find_package(tickwire) -> tickwire::tickwire,
#                                        tickwire::tickwire_static
#
# Windows: when the library directory holds tickwire.dll (a Windows build), the layout
# is Windows': PREFIX/bin/tickwire.dll, and in PREFIX/lib the import library and the
# static library under the toolchain's names: libtickwire.dll.a and libtickwire.a from
# x86_64-pc-windows-gnu (MinGW), tickwire.dll.lib and tickwire.lib from
# x86_64-pc-windows-msvc. tickwireConfig.cmake picks the pair that matches the compiler
# (MINGW or MSVC). scripts/windows.sh package cross-builds the MinGW one from Linux.
#
# Run `scripts/install.sh --help` for the options; usage() below is the one list of them.
# Every file is relocatable: move PREFIX as a whole.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: scripts/install.sh PREFIX [--lib-dir DIR]
       scripts/install.sh --help

Installs tickwire's header, libraries, pkg-config file and CMake package into PREFIX.

Arguments and options:
  PREFIX          where to install (created if missing): PREFIX/include, PREFIX/lib
                  (and PREFIX/bin for a Windows build). Relocatable: move it as a whole.
  --lib-dir DIR   install the libraries already built in DIR (for example target/debug,
                  or target-win/x86_64-pc-windows-gnu/release) without building.
                  Without it: cargo build --release --lib, then install from
                  ${CARGO_TARGET_DIR:-target}/release.
  -h, --help      print this help and exit.

Environment:
  CARGO_TARGET_DIR              where cargo builds (without --lib-dir); default target/.
  TICKWIRE_NATIVE_STATIC_LIBS   the system libraries a static link needs (the .pc
                                file's Libs.private); the default is the platform's list
                                from rustc --print native-static-libs.

Linux: the shared library is installed as libtickwire.so.N, its SONAME (N is
TW_ABI_VERSION of include/tickwire.h), with the link libtickwire.so -> libtickwire.so.N
for -ltickwire; programs record libtickwire.so.N.

Then:
  cc game.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs tickwire)
  cc -static game.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --static --cflags --libs tickwire)
  cmake -DCMAKE_PREFIX_PATH=PREFIX ...   (find_package(tickwire): tickwire::tickwire,
                                          tickwire::tickwire_static)
USAGE
}
bad_usage() {
    usage >&2
    exit 2
}
PREFIX=""
LIB_DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help)
        usage
        exit 0
        ;;
    --lib-dir)
        [ $# -ge 2 ] || bad_usage
        LIB_DIR="$2"
        shift 2
        ;;
    -*) bad_usage ;;
    *)
        [ -z "$PREFIX" ] || bad_usage
        PREFIX="$1"
        shift
        ;;
    esac
done
[ -n "$PREFIX" ] || bad_usage

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -z "$LIB_DIR" ]; then
    (cd "$ROOT" && cargo build --release --lib)
    LIB_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi

VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
[ -n "$VERSION" ] || { echo "install.sh: no version in Cargo.toml" >&2; exit 1; }
WINDOWS_GNU_LIBS="-lws2_32 -luserenv -lntdll -lbcrypt -ladvapi32 -lkernel32"
if [ -f "$LIB_DIR/tickwire.dll" ]; then
    # A Windows build: the DLL goes to bin/ (where Windows looks for it beside programs),
    # the link-time libraries to lib/, whichever toolchain's names are present.
    libs=()
    for f in libtickwire.dll.a libtickwire.a tickwire.dll.lib tickwire.lib; do
        [ -f "$LIB_DIR/$f" ] && libs+=("$LIB_DIR/$f")
    done
    [ "${#libs[@]}" -gt 0 ] || { echo "install.sh: $LIB_DIR has tickwire.dll but no import library" >&2; exit 1; }
    mkdir -p "$PREFIX/bin" "$PREFIX/lib"
    install -m 0755 "$LIB_DIR/tickwire.dll" "$PREFIX/bin/"
    install -m 0644 "${libs[@]}" "$PREFIX/lib/"
    NATIVE_STATIC_LIBS="${TICKWIRE_NATIVE_STATIC_LIBS:-$WINDOWS_GNU_LIBS}"
else
    case "$(uname -s)" in
    Darwin)
        SHARED=libtickwire.dylib
        NATIVE_STATIC_LIBS="${TICKWIRE_NATIVE_STATIC_LIBS:--liconv -lSystem -lc -lm}"
        ;;
    MINGW* | MSYS* | CYGWIN*)
        echo "install.sh: no tickwire.dll in $LIB_DIR" >&2
        exit 1
        ;;
    *)
        SHARED=libtickwire.so
        # rustc --print native-static-libs says -lgcc_s too: the unwinder, which the C
        # compiler's driver links by itself (libgcc_s, or libgcc_eh with -static, where
        # -lgcc_s would fail: there is no libgcc_s.a).
        NATIVE_STATIC_LIBS="${TICKWIRE_NATIVE_STATIC_LIBS:--lutil -lrt -lpthread -lm -ldl -lc}"
        ;;
    esac
    for f in "$SHARED" libtickwire.a; do
        [ -f "$LIB_DIR/$f" ] || { echo "install.sh: $LIB_DIR/$f not found (build it first)" >&2; exit 1; }
    done
    mkdir -p "$PREFIX/lib"
    if [ "$SHARED" = libtickwire.so ]; then
        # The file takes its SONAME (build.rs), libtickwire.so links to it for -ltickwire.
        ABI="$(sed -n 's/^#define TW_ABI_VERSION \([0-9]*\)$/\1/p' "$ROOT/include/tickwire.h")"
        [ -n "$ABI" ] || { echo "install.sh: no TW_ABI_VERSION in include/tickwire.h" >&2; exit 1; }
        SONAME="libtickwire.so.$ABI"
        if command -v readelf >/dev/null 2>&1; then
            built="$(readelf -d "$LIB_DIR/$SHARED" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
            [ "$built" = "$SONAME" ] || {
                echo "install.sh: $LIB_DIR/$SHARED has SONAME '${built}', expected $SONAME (rebuild it)" >&2
                exit 1
            }
        fi
        rm -f "$PREFIX/lib/$SHARED" "$PREFIX/lib/$SONAME"
        install -m 0755 "$LIB_DIR/$SHARED" "$PREFIX/lib/$SONAME"
        ln -s "$SONAME" "$PREFIX/lib/$SHARED"
    else
        install -m 0755 "$LIB_DIR/$SHARED" "$PREFIX/lib/"
    fi
    install -m 0644 "$LIB_DIR/libtickwire.a" "$PREFIX/lib/"
fi

mkdir -p "$PREFIX/include" "$PREFIX/lib/pkgconfig" "$PREFIX/lib/cmake/tickwire"
install -m 0644 "$ROOT/include/tickwire.h" "$ROOT/bindings/cpp/tickwire.hpp" "$PREFIX/include/"
sed -e "s|@VERSION@|$VERSION|g" -e "s|@NATIVE_STATIC_LIBS@|$NATIVE_STATIC_LIBS|g" \
    "$ROOT/packaging/tickwire.pc.in" >"$PREFIX/lib/pkgconfig/tickwire.pc"
install -m 0644 "$ROOT/packaging/tickwireConfig.cmake" "$PREFIX/lib/cmake/tickwire/"
sed -e "s|@VERSION@|$VERSION|g" "$ROOT/packaging/tickwireConfigVersion.cmake.in" \
    >"$PREFIX/lib/cmake/tickwire/tickwireConfigVersion.cmake"
echo "installed tickwire $VERSION into $PREFIX"
