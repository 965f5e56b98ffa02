#!/usr/bin/env bash
# Copies the native library built on this machine into the Unity package's Plugins:
#
#   scripts/unity-plugins.sh LIB_DIR    copy LIB_DIR/libtickwire.so to Runtime/Plugins/Linux/x86_64/
#                                       (e.g. target/release after cargo build --release)
#
# Linux x86_64 is the one platform this machine builds; Runtime/Plugins/README.md lists
# the others. The C# sources need no copying: the package's Runtime/Tickwire is the
# binding itself.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLUGINS="$ROOT/examples-csharp/unity/com.tickwire.runtime/Runtime/Plugins"

[ $# -eq 1 ] || { echo "usage: $0 LIB_DIR" >&2; exit 2; }
lib="$1/libtickwire.so"
[ -f "$lib" ] || { echo "$0: no $lib (build it with cargo build --release)" >&2; exit 1; }

mkdir -p "$PLUGINS/Linux/x86_64"
cp "$lib" "$PLUGINS/Linux/x86_64/"
echo "copied $lib into Runtime/Plugins/Linux/x86_64/"
