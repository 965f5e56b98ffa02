#!/usr/bin/env bash
# Installs tickwire for C and C++ programs:
#
#   PREFIX/include/tickwire.h           the C header (the contract)
#   PREFIX/include/tickwire.hpp         the C++17 RAII wrapper (header-only)
#   PREFIX/lib/libtickwire.so           shared library (.dylib on macOS)
#   PREFIX/lib/libtickwire.a            static library
#   PREFIX/lib/pkgconfig/tickwire.pc    pkg-config: cflags, libs, Libs.private for static
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
# Usage:
#   scripts/install.sh PREFIX                  builds with cargo build --release --lib first
#   scripts/install.sh PREFIX --lib-dir DIR    installs the libraries already built in DIR
#                                              (for example target/debug, or
#                                              target-win/x86_64-pc-windows-gnu/release)
#                                              without building
#
# Then: pkg-config --cflags --libs tickwire (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig), or
# cmake -DCMAKE_PREFIX_PATH=PREFIX. Every file is relocatable: move PREFIX as a whole.
set -euo pipefail

usage() {
    echo "usage: $0 PREFIX [--lib-dir DIR]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
PREFIX="$1"
shift
LIB_DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
    --lib-dir)
        [ $# -ge 2 ] || usage
        LIB_DIR="$2"
        shift 2
        ;;
    *) usage ;;
    esac
done

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
        NATIVE_STATIC_LIBS="${TICKWIRE_NATIVE_STATIC_LIBS:--lgcc_s -lutil -lrt -lpthread -lm -ldl -lc}"
        ;;
    esac
    for f in "$SHARED" libtickwire.a; do
        [ -f "$LIB_DIR/$f" ] || { echo "install.sh: $LIB_DIR/$f not found (build it first)" >&2; exit 1; }
    done
    mkdir -p "$PREFIX/lib"
    install -m 0755 "$LIB_DIR/$SHARED" "$PREFIX/lib/"
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
