#!/usr/bin/env bash
# Keeps the Unity package's copy of the C# bindings identical to bindings/csharp/Tickwire
# (the one source of truth), and optionally drops a native library into its Plugins.
#
#   scripts/sync-unity-package.sh                     copy the sources into the package
#   scripts/sync-unity-package.sh --check             exit 1 if the copy differs (tests/run.sh)
#   scripts/sync-unity-package.sh --native LIB_DIR    also copy LIB_DIR/libtickwire.so to
#                                                      Runtime/Plugins/Linux/x86_64/ (the one
#                                                      platform this machine builds)
#
# Why a copy: Unity imports only files inside the package folder, and symbolic links
# do not survive git on Windows or the package manager's tarballs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/bindings/csharp/Tickwire"
DST="$ROOT/examples-csharp/unity/com.tickwire.runtime/Runtime/Tickwire"
PLUGINS="$ROOT/examples-csharp/unity/com.tickwire.runtime/Runtime/Plugins"

mode=copy
native=""
while [ $# -gt 0 ]; do
    case "$1" in
    --check) mode=check; shift ;;
    --native) [ $# -ge 2 ] || { echo "$0: --native needs LIB_DIR" >&2; exit 2; }; native="$2"; shift 2 ;;
    *) echo "usage: $0 [--check] [--native LIB_DIR]" >&2; exit 2 ;;
    esac
done

if [ "$mode" = check ]; then
    # Only .cs files are compared: Unity adds .meta files next to the copies.
    if diff -r -x '*.meta' "$SRC" "$DST"; then
        echo "the Unity package's Runtime/Tickwire matches bindings/csharp/Tickwire"
        exit 0
    fi
    echo "the Unity package's copy differs: run scripts/sync-unity-package.sh" >&2
    exit 1
fi

mkdir -p "$DST"
# Remove copies whose source is gone (keep Unity's .meta files of surviving ones).
(cd "$DST" && find . -name '*.cs' -type f) | while read -r f; do
    [ -f "$SRC/$f" ] || rm -f "$DST/$f" "$DST/$f.meta"
done
(cd "$SRC" && find . -name '*.cs' -type f) | while read -r f; do
    mkdir -p "$DST/$(dirname "$f")"
    cp "$SRC/$f" "$DST/$f"
done
echo "copied bindings/csharp/Tickwire into the Unity package"

if [ -n "$native" ]; then
    mkdir -p "$PLUGINS/Linux/x86_64"
    cp "$native/libtickwire.so" "$PLUGINS/Linux/x86_64/"
    echo "copied $native/libtickwire.so into Runtime/Plugins/Linux/x86_64/"
fi
