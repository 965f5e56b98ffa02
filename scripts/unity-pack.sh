#!/usr/bin/env bash
# Builds the Unity package's tarball, the form a user installs (Package Manager, "Add
# package from tarball"):
#
#   scripts/unity-pack.sh [--out FILE] LIB_DIR...
#
# It copies the package's sources (examples-csharp/unity/com.tickwire.runtime, hidden
# files left out), puts the native libraries found in the LIB_DIRs under
# Runtime/Plugins/<platform>/ (scripts/unity-plugins.sh: libtickwire.so for Linux
# x86_64, tickwire.dll for Windows x86_64, stripped of debug information), writes their
# .meta files (scripts/unity-meta.sh: the import settings of each platform, GUIDs
# derived from the path), and packs everything under package/ as npm pack does. The
# default FILE is build/unity-package/com.tickwire.runtime-<version>.tgz.
#
# The libraries are built, never committed: a release package comes from
#   cargo build --release --lib -p tickwire
#   scripts/windows.sh package
#   scripts/unity-pack.sh target/release target-win/x86_64-pc-windows-gnu/release
# and tests/run.sh packs the libraries it builds without the test hooks, then checks
# the tarball (scripts/unity-package-check.sh).
#
# The sources' own .meta files are committed; a source file without one is an error
# here (run scripts/unity-meta.sh and commit the result), so that the tarball never
# carries a .meta the repository lacks. Needs tar, strip (binutils) and, for a DLL,
# x86_64-w64-mingw32-strip.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/examples-csharp/unity/com.tickwire.runtime"
NAME="$(basename "$SRC")"
STAGE_ROOT="$ROOT/build/unity-package/stage"
STAGE="$STAGE_ROOT/$NAME"
out=""

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --out)
        [ $# -ge 2 ] || { echo "$0: --out needs a file" >&2; exit 2; }
        out="$2"
        shift 2
        ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--out FILE] LIB_DIR... (see --help)" >&2; exit 2; }

version="$(sed -n 's/^ *"version": *"\([^"]*\)".*$/\1/p' "$SRC/package.json" | head -n 1)"
[ -n "$version" ] || { echo "$0: no version in $SRC/package.json" >&2; exit 1; }
out="${out:-$ROOT/build/unity-package/$NAME-$version.tgz}"

rm -rf "$STAGE_ROOT"
mkdir -p "$STAGE_ROOT" "$(dirname "$out")"
# The sources as committed; hidden names stay out of the package.
tar -C "$(dirname "$SRC")" --exclude='.*' -cf - "$NAME" | tar -C "$STAGE_ROOT" -xf -
if find "$STAGE/Runtime/Plugins" -name '*.so' -o -name '*.dll' -o -name '*.dylib' -o -name '*.a' | grep -q .; then
    echo "$0: $SRC/Runtime/Plugins holds native libraries; the package takes only the LIB_DIRs' (remove them)" >&2
    exit 1
fi
find "$STAGE" -name '*.meta' | sort >"$STAGE_ROOT/metas.before"

TICKWIRE_UNITY_PLUGINS="$STAGE/Runtime/Plugins" "$ROOT/scripts/unity-plugins.sh" "$@"
"$ROOT/scripts/unity-meta.sh" "$STAGE" >/dev/null

# Every new .meta must belong to a library just added (or its folders): any other is a
# source file whose .meta was never committed.
find "$STAGE" -name '*.meta' | sort >"$STAGE_ROOT/metas.after"
missing="$(comm -13 "$STAGE_ROOT/metas.before" "$STAGE_ROOT/metas.after" |
    grep -vE "^$STAGE/Runtime/Plugins/(Linux|Windows)(/x86_64(/(libtickwire\.so|tickwire\.dll))?)?\.meta$" || true)"
if [ -n "$missing" ]; then
    echo "$0: these sources have no committed .meta (run scripts/unity-meta.sh and commit):" >&2
    echo "$missing" | sed "s,^$STAGE/,  ,; s,\.meta$,," >&2
    exit 1
fi
rm -f "$STAGE_ROOT/metas.before" "$STAGE_ROOT/metas.after"

tar -C "$STAGE_ROOT" --transform "s,^$NAME,package," -czf "$out" "$NAME"
echo "$out: $(tar -tzf "$out" | grep -vc '/$') files, $(du -k "$out" | cut -f1) KiB"
