#!/usr/bin/env bash
# Copies native libraries built here into the Unity package's Plugins folder:
#
#   scripts/unity-plugins.sh LIB_DIR...   for each LIB_DIR, copies
#                                         libtickwire.so -> Runtime/Plugins/Linux/x86_64/
#                                         tickwire.dll   -> Runtime/Plugins/Windows/x86_64/
#
# e.g. `scripts/unity-plugins.sh target/release target-win/x86_64-pc-windows-gnu/release`
# after `cargo build --release` and `scripts/windows.sh package` (which runs this too).
# TICKWIRE_UNITY_PLUGINS overrides the destination (the tests copy into build/).
# Runtime/Plugins/README.md lists the other platforms. The C# sources need no copying:
# the package's Runtime/Tickwire is the binding itself.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLUGINS="${TICKWIRE_UNITY_PLUGINS:-$ROOT/examples-csharp/unity/com.tickwire.runtime/Runtime/Plugins}"

[ $# -ge 1 ] || { echo "usage: $0 LIB_DIR..." >&2; exit 2; }
copied=0
for dir in "$@"; do
    if [ -f "$dir/libtickwire.so" ]; then
        mkdir -p "$PLUGINS/Linux/x86_64"
        cp "$dir/libtickwire.so" "$PLUGINS/Linux/x86_64/"
        echo "copied $dir/libtickwire.so into Plugins/Linux/x86_64/"
        copied=$((copied + 1))
    fi
    if [ -f "$dir/tickwire.dll" ]; then
        mkdir -p "$PLUGINS/Windows/x86_64"
        cp "$dir/tickwire.dll" "$PLUGINS/Windows/x86_64/"
        echo "copied $dir/tickwire.dll into Plugins/Windows/x86_64/"
        copied=$((copied + 1))
    fi
done
[ "$copied" -gt 0 ] || { echo "$0: no libtickwire.so or tickwire.dll in $*" >&2; exit 1; }
