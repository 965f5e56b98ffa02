#!/usr/bin/env bash
# Checks the Unity package as a user installs it: the tarball scripts/unity-pack.sh
# builds (everything under package/, the native libraries inside), unpacked:
#
#   - package.json is valid JSON with name, version, displayName and unity, and every
#     sample path it lists exists;
#   - every file and folder Unity imports has a .meta file (not the hidden ones, not
#     "~" folders themselves, whose contents do), each .meta has a 32-hex-digit GUID and
#     belongs to an asset, and no GUID appears twice;
#   - every .asmdef is valid JSON with a unique name, a references array and
#     allowUnsafeCode; the runtime allows unsafe code; each sample folder has exactly one
#     .asmdef, which references Tickwire.Runtime and allows unsafe code, and each of the
#     sample's scripts is in the asmdef's rootNamespace;
#   - the native plugins of every platform built here are present (Linux x86_64,
#     Windows x86_64), each exports exactly the functions of include/tickwire.h (no
#     tw_debug_* test hook), and each .meta enables it for its own Standalone target;
#   - LICENSE.md, CHANGELOG.md and Third Party Notices.md are there, and the notices name
#     every crate compiled into the library (cargo tree, when cargo is available);
#   - the runtime and then each sample compile with mcs the way Unity compiles them:
#     one assembly per .asmdef, named after it, with only the assemblies the .asmdef
#     references, -unsafe only if it sets allowUnsafeCode, against stand-ins of the
#     Unity APIs (bindings/csharp/Tests/UnitySim/UnityStubs.cs, as tests/run.sh's Unity
#     code path), of the Input System package (InputSystemStubs.cs) and of Steamworks.NET
#     (SteamworksStubs.cs, the Steam sample's); each sample twice: without the defines of
#     its asmdef's versionDefines, and with them (the optional package installed);
#   - each sample with a MonoBehaviour has a scene whose scripts and fields are its own.
#
#   scripts/unity-package-check.sh TARBALL
#
# Needs tar, jq, mcs, binutils (nm, readelf, objdump). Writes under build/unity-package-check/.
# The last line is "N passed, N failed"; the exit status is non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 TARBALL (made by scripts/unity-pack.sh)" >&2; exit 2; }
TGZ="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
OUT="$ROOT/build/unity-package-check"
STUBS_CS="$ROOT/bindings/csharp/Tests/UnitySim/UnityStubs.cs"
INPUT_SYSTEM_STUBS_CS="$ROOT/bindings/csharp/Tests/UnitySim/InputSystemStubs.cs"
STEAMWORKS_STUBS_CS="$ROOT/bindings/csharp/Tests/UnitySim/SteamworksStubs.cs"
MCS=(mcs -langversion:7.2 -warnaserror)
rm -rf "$OUT"
mkdir -p "$OUT/extracted" "$OUT/asm"

CHECK_PREFIX="unity package: "
# shellcheck source=tests/check.sh
source "$ROOT/tests/check.sh"

# --- the tarball -----------------------------------------------------------------------
PKG="$OUT/extracted/package"
unpack() {
    local outside
    outside="$(tar -tzf "$TGZ" | grep -v '^package/' || true)"
    [ -z "$outside" ] || { echo "entries outside package/: $outside"; return 1; }
    tar -C "$OUT/extracted" -xzf "$TGZ" &&
        [ -f "$PKG/package.json" ] &&
        echo "$(tar -tzf "$TGZ" | grep -vc '/$') files, $(du -k "$TGZ" | cut -f1) KiB"
}
check "unpack the tarball (everything under package/)" unpack
[ -f "$PKG/package.json" ] || { echo "$passed passed, $failed failed"; exit 1; }

# --- package.json ------------------------------------------------------------------------
package_json() {
    jq -e '(.name | type == "string" and length > 0) and (.version | test("^[0-9]+\\.[0-9]+\\.[0-9]+"))
           and (.displayName | type == "string") and (.unity | test("^[0-9]{4}\\.[0-9]+$"))' \
        "$PKG/package.json" >/dev/null || { echo "package.json lacks name, version, displayName or unity"; return 1; }
    local path bad=0 n=0
    while IFS= read -r path; do
        n=$((n + 1))
        [ -d "$PKG/$path" ] || { echo "sample path $path is not a folder of the package"; bad=1; }
    done < <(jq -r '.samples[]?.path' "$PKG/package.json")
    [ "$n" -ge 1 ] || { echo "package.json lists no sample"; return 1; }
    echo "$(jq -r '.name + " " + .version' "$PKG/package.json"), $n samples"
    return "$bad"
}
check "package.json is valid, its sample paths exist" package_json

# --- .meta files -------------------------------------------------------------------------
# What Unity imports: below the package folder, no hidden name, not a "~" folder itself.
assets() {
    (cd "$PKG" && find . -mindepth 1 -name '.*' -prune -o -print | sed 's,^\./,,' | grep -v '\.meta$' | grep -v '~$' | sort)
}
meta_files() {
    local a bad=0 n=0 meta guid
    while IFS= read -r a; do
        n=$((n + 1))
        meta="$PKG/$a.meta"
        if [ ! -f "$meta" ]; then
            echo "no .meta for $a"
            bad=1
            continue
        fi
        head -n 1 "$meta" | grep -qx 'fileFormatVersion: 2' || { echo "$a.meta: no fileFormatVersion: 2"; bad=1; }
        guid="$(sed -n 's/^guid: //p' "$meta")"
        [[ "$guid" =~ ^[0-9a-f]{32}$ ]] || { echo "$a.meta: bad guid '$guid'"; bad=1; }
        if [ -d "$PKG/$a" ]; then
            grep -qx 'folderAsset: yes' "$meta" || { echo "$a.meta: a folder without folderAsset: yes"; bad=1; }
        fi
    done < <(assets)
    # Every .meta belongs to an asset.
    while IFS= read -r -d '' meta; do
        [ -e "${meta%.meta}" ] || { echo "orphan ${meta#"$PKG"/}"; bad=1; }
    done < <(find "$PKG" -name '*.meta' -print0)
    echo "$n assets, $(find "$PKG" -name '*.meta' | wc -l) .meta files"
    return "$bad"
}
check ".meta file for every file and folder Unity imports, none orphaned" meta_files
unique_guids() {
    local dups
    dups="$(find "$PKG" -name '*.meta' -exec sed -n 's/^guid: //p' {} + | sort | uniq -d)"
    [ -z "$dups" ] || { echo "GUIDs used twice: $dups"; return 1; }
    echo "$(find "$PKG" -name '*.meta' | wc -l) GUIDs, all different"
}
check "GUIDs unique" unique_guids

# --- assembly definitions ------------------------------------------------------------------
RUNTIME_ASMDEF="$PKG/Runtime/Tickwire.Runtime.asmdef"
asmdefs_valid() {
    local f bad=0 names
    while IFS= read -r -d '' f; do
        jq -e '(.name | type == "string" and length > 0) and (.references | type == "array")
               and (.allowUnsafeCode | type == "boolean")' "$f" >/dev/null 2>&1 ||
            { echo "${f#"$PKG"/}: not JSON, or no name, references array or allowUnsafeCode"; bad=1; }
    done < <(find "$PKG" -name '*.asmdef' -print0)
    [ "$bad" -eq 0 ] || return 1
    names="$(find "$PKG" -name '*.asmdef' -exec jq -r .name {} \; | sort)"
    [ -z "$(echo "$names" | uniq -d)" ] || { echo "asmdef names used twice: $(echo "$names" | uniq -d)"; return 1; }
    [ "$(jq -r .name "$RUNTIME_ASMDEF")" = Tickwire.Runtime ] && [ "$(jq -r .allowUnsafeCode "$RUNTIME_ASMDEF")" = true ] ||
        { echo "Runtime/Tickwire.Runtime.asmdef: not named Tickwire.Runtime, or no unsafe code"; return 1; }
    echo "asmdefs: $(echo "$names" | tr '\n' ' ')"
}
check "asmdefs are valid JSON with name, references and allowUnsafeCode, names unique" asmdefs_valid
RUNTIME_GUID="$(sed -n 's/^guid: //p' "$RUNTIME_ASMDEF.meta" 2>/dev/null || true)"
SAMPLES=()
while IFS= read -r path; do SAMPLES+=("$path"); done < <(jq -r '.samples[]?.path' "$PKG/package.json")
sample_asmdefs() {
    local s defs def ns bad=0 f
    for s in "${SAMPLES[@]}"; do
        mapfile -t defs < <(find "$PKG/$s" -name '*.asmdef')
        [ "${#defs[@]}" -eq 1 ] || { echo "$s: ${#defs[@]} asmdefs, want 1"; bad=1; continue; }
        def="${defs[0]}"
        jq -e --arg g "GUID:$RUNTIME_GUID" '(.references | index("Tickwire.Runtime") != null or index($g) != null)
               and .allowUnsafeCode == true' "$def" >/dev/null ||
            { echo "${def#"$PKG"/}: does not reference Tickwire.Runtime or does not allow unsafe code"; bad=1; }
        ns="$(jq -r '.rootNamespace // ""' "$def")"
        [ -n "$ns" ] || { echo "${def#"$PKG"/}: no rootNamespace"; bad=1; continue; }
        while IFS= read -r -d '' f; do
            grep -qE "^namespace ${ns//./\\.}( |\$)" "$f" || { echo "${f#"$PKG"/}: not in namespace $ns"; bad=1; }
        done < <(find "$PKG/$s" -name '*.cs' -print0)
        echo "$s: $(jq -r .name "$def"), namespace $ns"
    done
    return "$bad"
}
check "each sample has one asmdef (references Tickwire.Runtime, unsafe code) and its namespace" sample_asmdefs

# --- native plugins ------------------------------------------------------------------------
HEADER_FNS="$(grep -E '^[a-z_0-9 ]+[ *]tw_[a-z0-9_]+\(' "$ROOT/include/tickwire.h" | sed -E 's/^.*[ *](tw_[a-z0-9_]+)\(.*$/\1/' | sort -u)"
ABI="$(sed -n 's/^#define TW_ABI_VERSION \([0-9]*\)$/\1/p' "$ROOT/include/tickwire.h")"
# $1: the plugin's .meta, $2: the Standalone target it must enable alone.
enabled_for() {
    awk -v want="$2" '
        /^      Standalone: / { target = $2; next }
        target != "" && /^      enabled: / { if ($2 == 1) on[target] = 1; target = "" }
        END {
            n = 0; for (t in on) { n++; if (t != want) bad = 1 }
            exit !(on[want] && n == 1 && !bad)
        }' "$1" && grep -q '^PluginImporter:' "$1"
}
same_functions() {
    local what="$1" exported="$2"
    echo "$what: $(echo "$exported" | grep -c .) tw_* exports, the header has $(echo "$HEADER_FNS" | grep -c .)"
    diff <(echo "$HEADER_FNS") <(echo "$exported")
}
linux_plugin() {
    local so="$PKG/Runtime/Plugins/Linux/x86_64/libtickwire.so"
    [ -f "$so" ] || { echo "missing Runtime/Plugins/Linux/x86_64/libtickwire.so"; return 1; }
    readelf -h "$so" | grep -q 'Machine: *Advanced Micro Devices X86-64' || { echo "not x86_64"; return 1; }
    readelf -d "$so" | grep -q "Library soname: \[libtickwire.so.$ABI\]" || { echo "SONAME is not libtickwire.so.$ABI"; return 1; }
    enabled_for "$so.meta" Linux64 || { echo "its .meta does not enable it for Standalone Linux64 alone"; return 1; }
    same_functions libtickwire.so "$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 ~ /^tw_/ {print $3}' | sort -u)"
}
check "Linux x86_64 plugin: present, SONAME, exactly the header's functions, enabled for Linux only" linux_plugin
windows_plugin() {
    local dll="$PKG/Runtime/Plugins/Windows/x86_64/tickwire.dll"
    [ -f "$dll" ] || { echo "missing Runtime/Plugins/Windows/x86_64/tickwire.dll"; return 1; }
    objdump -f "$dll" | grep -q 'file format pei-x86-64' || { echo "not a PE x86-64 DLL"; return 1; }
    enabled_for "$dll.meta" Win64 || { echo "its .meta does not enable it for Standalone Win64 alone"; return 1; }
    same_functions tickwire.dll "$(objdump -p "$dll" | sed -n '/Ordinal\/Name Pointer/,/^$/p' | grep -oE '\btw_[a-z0-9_]+$' | sort -u)"
}
check "Windows x86_64 plugin: present, PE x86-64, exactly the header's functions, enabled for Win64 only" windows_plugin

# --- license, changelog, notices -------------------------------------------------------------
legal_files() {
    local f bad=0
    for f in LICENSE.md CHANGELOG.md "Third Party Notices.md"; do
        [ -s "$PKG/$f" ] || { echo "missing $f"; bad=1; }
    done
    grep -q 'MIT' "$PKG/LICENSE.md" && grep -q 'Apache License' "$PKG/LICENSE.md" || { echo "LICENSE.md lacks MIT or Apache-2.0"; bad=1; }
    grep -q "^## $(jq -r .version "$PKG/package.json")" "$PKG/CHANGELOG.md" || { echo "CHANGELOG.md has no section for the package version"; bad=1; }
    if command -v cargo >/dev/null 2>&1; then
        local crates c
        crates="$(cd "$ROOT" && cargo tree -p tickwire --target all -e normal,no-proc-macro --prefix none --format '{p}' 2>/dev/null |
            sed 's/ (\*)$//' | grep -v '^tickwire' | sort -u | awk '{print $1 "|" substr($2, 2)}')"
        [ -n "$crates" ] || { echo "cargo tree listed nothing"; return 1; }
        for c in $crates; do
            grep -qF "| ${c%|*} | ${c#*|} |" "$PKG/Third Party Notices.md" ||
                { echo "Third Party Notices.md does not name ${c%|*} ${c#*|} (run scripts/unity-notices.sh)"; bad=1; }
        done
        echo "the notices name all $(echo "$crates" | wc -l) crates of the library"
    fi
    return "$bad"
}
check "LICENSE.md, CHANGELOG.md, Third Party Notices.md (every crate of the library named)" legal_files

# --- each sample has a scene ---------------------------------------------------------------------
# $1: the sample's folder. It holds a .unity scene; every script the scene uses
# (m_Script guid) is a .cs of the sample (by its .meta's guid), named after its class, and
# every field the scene sets on it is one of that script's [SerializeField]s.
sample_scene() {
    local dir="$1" scene guid meta cs fields f bad=0 n=0
    mapfile -t scenes < <(find "$dir" -name '*.unity' | sort)
    [ "${#scenes[@]}" -gt 0 ] || { echo "no .unity scene in $dir"; return 1; }
    for scene in "${scenes[@]}"; do
        head -n 1 "$scene" | grep -q '^%YAML 1.1$' || { echo "$scene: not a Unity YAML scene"; bad=1; }
        while IFS= read -r guid; do
            meta="$(grep -l "^guid: $guid\$" "$dir"/*.cs.meta 2>/dev/null | head -n 1)"
            [ -n "$meta" ] || { echo "$scene: script guid $guid is no script of the sample"; bad=1; continue; }
            cs="${meta%.meta}"
            grep -q "class $(basename "$cs" .cs)\b" "$cs" || { echo "$cs: no class named after the file"; bad=1; }
            # The fields set under this script's MonoBehaviour blocks.
            fields="$(awk -v g="$guid" '
                /^--- / { inside = 0 }
                $0 ~ "m_Script: .*guid: " g { inside = 1; next }
                inside && /^  [a-zA-Z_]+:/ && $1 !~ /^m_/ { sub(":", "", $1); print $1 }' "$scene" | sort -u)"
            for f in $fields; do
                grep -q "\[SerializeField\] private [a-z]* $f\b" "$cs" ||
                    { echo "$scene sets $f, which $(basename "$cs") does not serialize"; bad=1; }
                n=$((n + 1))
            done
        done < <(grep -o 'm_Script: {fileID: 11500000, guid: [0-9a-f]*' "$scene" | awk '{print $NF}' | sort -u)
    done
    echo "${#scenes[@]} scene(s), $n serialized fields checked"
    return "$bad"
}

# --- compile as Unity does: one assembly per asmdef --------------------------------------------
# $1: the asmdef; the assembly is named after it and compiled from the .cs files below its
# folder (the runtime's: Runtime/), with the assemblies it references and the defines.
compile_asmdef() {
    local def="$1" dir name unsafe=() refs=() r
    shift
    dir="$(dirname "$def")"
    name="$(jq -r .name "$def")"
    [ "$(jq -r .allowUnsafeCode "$def")" = true ] && unsafe=(-unsafe)
    while IFS= read -r r; do
        [ "$r" = "GUID:$RUNTIME_GUID" ] && r=Tickwire.Runtime
        [ -f "$OUT/asm/$r.dll" ] || { echo "$name references $r, which is not built"; return 1; }
        refs+=("-r:$OUT/asm/$r.dll")
    done < <(jq -r '.references[]' "$def")
    mapfile -d '' sources < <(find "$dir" -name '*.cs' -print0 | sort -z)
    [ "${#sources[@]}" -gt 0 ] || { echo "$name: no scripts"; return 1; }
    "${MCS[@]}" "${unsafe[@]}" -target:library "$@" -r:"$OUT/asm/UnityEngine.dll" "${refs[@]}" \
        -out:"$OUT/asm/$name.dll" "${sources[@]}" && echo "$name.dll from ${#sources[@]} scripts ${unsafe[*]}"
}
# The stand-ins of UnityEngine and UnityEditor (one assembly, as the tests build them), and
# of the Input System package (Unity.InputSystem), which the samples reference.
check "build the Unity API stand-ins" "${MCS[@]}" -target:library -out:"$OUT/asm/UnityEngine.dll" "$STUBS_CS"
check "build the Input System stand-ins (Unity.InputSystem)" "${MCS[@]}" -target:library \
    -out:"$OUT/asm/Unity.InputSystem.dll" "$INPUT_SYSTEM_STUBS_CS"
# Steamworks.NET's assembly (com.rlabrecque.steamworks.net), which the Steam sample
# references: test-only stand-ins of the members it calls, never in the package.
check "build the Steamworks.NET stand-ins (com.rlabrecque.steamworks.net)" "${MCS[@]}" -target:library \
    -out:"$OUT/asm/com.rlabrecque.steamworks.net.dll" "$STEAMWORKS_STUBS_CS"
check "compile Tickwire.Runtime (editor defines) from the unpacked package" \
    compile_asmdef "$RUNTIME_ASMDEF" -define:UNITY_5_3_OR_NEWER -define:UNITY_EDITOR
for s in "${SAMPLES[@]}"; do
    def="$(find "$PKG/$s" -name '*.asmdef' | head -n 1)"
    if [ -n "$def" ]; then
        input_system="$(jq -r '.versionDefines[]? | select(.name == "com.unity.inputsystem") | .define' "$def")"
        mapfile -t version_defines < <(jq -r '.versionDefines[]? | "-define:" + .define' "$def")
        if [ -n "$input_system" ]; then
            check "sample $s compiles as imported, with its asmdef (legacy Input Manager)" \
                compile_asmdef "$def" -define:UNITY_5_3_OR_NEWER
            # With com.unity.inputsystem installed and active: the asmdef's versionDefines set
            # TICKWIRE_INPUT_SYSTEM, and Unity sets ENABLE_INPUT_SYSTEM.
            check "sample $s compiles with the Input System package active" compile_asmdef "$def" \
                -define:UNITY_5_3_OR_NEWER -define:ENABLE_INPUT_SYSTEM "${version_defines[@]}"
        else
            # Another optional package (the Steam sample: Steamworks.NET): first as when its
            # define is not set (a .unitypackage install without the define: the sample is
            # empty), then with every define of the asmdef's versionDefines (its UPM package).
            check "sample $s compiles as imported, with its asmdef (versionDefines not set)" \
                compile_asmdef "$def" -define:UNITY_5_3_OR_NEWER
            check "sample $s compiles with its versionDefines set (${version_defines[*]:-none})" compile_asmdef "$def" \
                -define:UNITY_5_3_OR_NEWER "${version_defines[@]}"
        fi
        if grep -rqE ':[[:space:]]*MonoBehaviour\b' --include='*.cs' "$PKG/$s"; then
            check "sample $s: a scene whose scripts and fields are the sample's" sample_scene "$PKG/$s"
        else
            echo "  (sample $s has no MonoBehaviour: no scene to check)"
        fi
    else
        check "sample $s compiles as imported (no asmdef)" false
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
