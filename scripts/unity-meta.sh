#!/usr/bin/env bash
# Writes the Unity .meta file of every asset (file and folder) of the Unity package:
#
#   scripts/unity-meta.sh [PACKAGE_DIR]     default examples-csharp/unity/com.tickwire.runtime
#
# Unity identifies an asset by the GUID in its .meta file: without the .meta files a
# git-URL or tarball install (read-only, in the package cache) gets new GUIDs on every
# machine, and the native plugins lose their import settings. The GUID here is
# deterministic: the MD5 of "com.tickwire.runtime/" and the asset's path in the package,
# so running this again writes the same files, and a new file gets its own GUID.
#
# What gets a .meta is what Unity imports: not the package folder itself, not hidden
# names (starting with "."), not names ending in "~" (Samples~: Unity copies a sample's
# folder into Assets/ when it is imported, and the .meta files inside come along, so
# those do get one), and not the .meta files.
#
# The importer follows the file type: folders, C# scripts, assembly definitions, the
# package manifest, text, scenes, and native plugins, which are enabled for exactly their own
# platform and CPU (Linux/x86_64/libtickwire.so: Editor and Standalone on Linux x86_64;
# Windows/x86_64/tickwire.dll: Editor and Standalone on Windows x86_64).
# scripts/unity-package-check.sh checks the result.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PKG="${1:-$ROOT/examples-csharp/unity/com.tickwire.runtime}"
PKG="$(cd "$PKG" && pwd)"
NAME="$(basename "$PKG")"

guid_of() { printf '%s/%s' "$NAME" "$1" | md5sum | cut -c1-32; }

tail_lines() {
    printf '  userData: \n  assetBundleName: \n  assetBundleVariant: \n'
}

# The platform rows of a PluginImporter. $1: Editor OS (Linux, Windows), $2: the
# Standalone target enabled (Linux64, Win64).
plugin_importer() {
    local os="$1" standalone="$2" t
    cat <<EOF
PluginImporter:
  externalObjects: {}
  serializedVersion: 2
  iconMap: {}
  executionOrder: {}
  defineConstraints: []
  isPreloaded: 0
  isOverridable: 0
  isExplicitlyReferenced: 0
  validateReferences: 1
  platformData:
  - first:
      : Any
    second:
      enabled: 0
      settings:
        Exclude Android: 1
        Exclude Editor: 0
        Exclude Linux64: $([ "$standalone" = Linux64 ] && echo 0 || echo 1)
        Exclude OSXUniversal: 1
        Exclude Win: 1
        Exclude Win64: $([ "$standalone" = Win64 ] && echo 0 || echo 1)
        Exclude iOS: 1
  - first:
      Any: 
    second:
      enabled: 0
      settings: {}
  - first:
      Editor: Editor
    second:
      enabled: 1
      settings:
        CPU: x86_64
        DefaultValueInitialized: true
        OS: $os
EOF
    for t in Linux64 OSXUniversal Win Win64; do
        if [ "$t" = "$standalone" ]; then
            printf '  - first:\n      Standalone: %s\n    second:\n      enabled: 1\n      settings:\n        CPU: x86_64\n' "$t"
        else
            printf '  - first:\n      Standalone: %s\n    second:\n      enabled: 0\n      settings:\n        CPU: None\n' "$t"
        fi
    done
    tail_lines
}

write_meta() {
    local rel="$1" path="$PKG/$1" meta
    meta="$path.meta"
    {
        printf 'fileFormatVersion: 2\nguid: %s\n' "$(guid_of "$rel")"
        if [ -d "$path" ]; then
            printf 'folderAsset: yes\nDefaultImporter:\n  externalObjects: {}\n'
            tail_lines
            return
        fi
        case "$rel" in
        *.cs)
            printf 'MonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n'
            printf '  executionOrder: 0\n  icon: {instanceID: 0}\n'
            tail_lines
            ;;
        *.asmdef)
            printf 'AssemblyDefinitionImporter:\n  externalObjects: {}\n'
            tail_lines
            ;;
        package.json)
            printf 'PackageManifestImporter:\n  externalObjects: {}\n'
            tail_lines
            ;;
        *.unity)
            # A scene.
            printf 'DefaultImporter:\n  externalObjects: {}\n'
            tail_lines
            ;;
        *.md | *.txt | *.json)
            printf 'TextScriptImporter:\n  externalObjects: {}\n'
            tail_lines
            ;;
        */Linux/x86_64/libtickwire.so) plugin_importer Linux Linux64 ;;
        */Windows/x86_64/tickwire.dll) plugin_importer Windows Win64 ;;
        *.so | *.dll | *.dylib | *.a | *.bundle)
            echo "unity-meta.sh: no import settings known for the plugin $rel" >&2
            exit 1
            ;;
        *)
            printf 'DefaultImporter:\n  externalObjects: {}\n'
            tail_lines
            ;;
        esac
    } >"$meta"
}

written=0
# Depth-first from the package root, pruning hidden names; "~" folders get no .meta
# but their contents do.
while IFS= read -r -d '' path; do
    rel="${path#"$PKG"/}"
    case "$(basename "$rel")" in
    *.meta | *~) continue ;;
    esac
    write_meta "$rel"
    written=$((written + 1))
done < <(find "$PKG" -mindepth 1 -name '.*' -prune -o -print0 | sort -z)
# Remove .meta files whose asset is gone.
removed=0
while IFS= read -r -d '' meta; do
    if [ ! -e "${meta%.meta}" ]; then
        rm -f "$meta"
        removed=$((removed + 1))
    fi
done < <(find "$PKG" -name '*.meta' -print0)
echo "unity-meta.sh: wrote $written .meta files, removed $removed stale ones, in $PKG"
