#!/usr/bin/env bash
# Copies native libraries built here into the Unity package's Plugins folder:
#
#   scripts/unity-plugins.sh LIB_DIR...   for each LIB_DIR, copies
#                                         libtickwire.so -> Runtime/Plugins/Linux/x86_64/
#                                         tickwire.dll   -> Runtime/Plugins/Windows/x86_64/
#
# e.g. `scripts/unity-plugins.sh target/release target-win/x86_64-pc-windows-gnu/release`
# after `cargo build --release` and `scripts/windows.sh package`.
# TICKWIRE_UNITY_PLUGINS overrides the destination (unity-pack.sh and the tests copy
# into build/).
# Runtime/Plugins/README.md lists the other platforms. The C# sources need no copying:
# the package's Runtime/Tickwire is the binding itself.
#
# The copies lose their debug information (strip --strip-debug; the release profile
# keeps line tables, debug = 1); the exported symbols stay. scripts/unity-pack.sh uses
# this to put the libraries into the package's tarball (they are never committed; git
# ignores copies made into the source folder for a local Unity project), and then
# scripts/unity-meta.sh writes their .meta files (import settings per platform).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLUGINS="${TICKWIRE_UNITY_PLUGINS:-$ROOT/examples-csharp/unity/com.tickwire.runtime/Runtime/Plugins}"

[ $# -ge 1 ] || { echo "usage: $0 LIB_DIR..." >&2; exit 2; }
copied=0
for dir in "$@"; do
    if [ -f "$dir/libtickwire.so" ]; then
        mkdir -p "$PLUGINS/Linux/x86_64"
        strip --strip-debug -o "$PLUGINS/Linux/x86_64/libtickwire.so" "$dir/libtickwire.so"
        echo "copied $dir/libtickwire.so into Plugins/Linux/x86_64/"
        copied=$((copied + 1))
    fi
    if [ -f "$dir/tickwire.dll" ]; then
        mkdir -p "$PLUGINS/Windows/x86_64"
        # strip writes the current time into the PE header's TimeDateStamp unless
        # SOURCE_DATE_EPOCH is set: 0 makes the copy a function of the input alone, so
        # rebuilding the package does not churn the committed DLL and the smoke test can
        # compare bytes (it failed when the two strips fell in different seconds).
        SOURCE_DATE_EPOCH=0 x86_64-w64-mingw32-strip --strip-debug \
            -o "$PLUGINS/Windows/x86_64/tickwire.dll" "$dir/tickwire.dll"
        echo "copied $dir/tickwire.dll into Plugins/Windows/x86_64/"
        copied=$((copied + 1))
    fi
done
[ "$copied" -gt 0 ] || { echo "$0: no libtickwire.so or tickwire.dll in $*" >&2; exit 1; }
