#!/usr/bin/env bash
# Writes "Third Party Notices.md" of the Unity package: the crates compiled into the
# native libraries of Runtime/Plugins (cargo tree of the tickwire package, normal
# dependencies on every target, no proc-macros: those run at build time only), with
# their licenses, and the license text of each one that is not offered under
# Apache-2.0 (the Apache-2.0 text is in the package's LICENSE.md).
#
#   scripts/unity-notices.sh [PACKAGE_DIR]    default examples-csharp/unity/com.tickwire.runtime
#
# Run it again when Cargo.lock changes; scripts/unity-package-check.sh fails when a crate
# of the tree is missing from the file. Needs cargo and python3.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PKG="${1:-$ROOT/examples-csharp/unity/com.tickwire.runtime}"
cd "$ROOT"
tree="$(cargo tree -p tickwire --target all -e normal,no-proc-macro --prefix none --format '{p}|{l}|{r}' 2>/dev/null |
    sed 's/ (\*)$//' | grep -v '^tickwire' | sort -u)"
metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
cargo metadata --format-version 1 --locked >"$metadata" 2>/dev/null
TREE="$tree" METADATA="$metadata" python3 - "$PKG/Third Party Notices.md" <<'PY'
import glob, json, os, sys

out = sys.argv[1]
with open(os.environ["METADATA"], encoding="utf-8") as fh:
    meta = json.load(fh)
dirs = {(p["name"], p["version"]): os.path.dirname(p["manifest_path"]) for p in meta["packages"]}
rows = []
for line in os.environ["TREE"].splitlines():
    pkg, lic, repo = line.split("|", 2)
    name, version = pkg.split(" ")[:2]
    rows.append((name, version.lstrip("v"), lic, repo))

lines = [
    "# Third-party notices",
    "",
    "The native libraries in `Runtime/Plugins/` are tickwire (MIT OR Apache-2.0, see",
    "`LICENSE.md`) compiled together with the Rust standard library (MIT OR Apache-2.0,",
    "copyright the Rust Project Developers, https://github.com/rust-lang/rust) and the",
    "crates below. Each is used under the first license named in the last column; the",
    "Apache License 2.0 text is in `LICENSE.md`, and the text of every other license used",
    "follows the table. The C# sources of this package are tickwire's own.",
    "",
    "Written by `scripts/unity-notices.sh` from `cargo tree` (every target, no build-time",
    "crates).",
    "",
    "| crate | version | license | repository | used under |",
    "|---|---|---|---|---|",
]
texts = []
for name, version, lic, repo in rows:
    alternatives = [a.strip(" ()") for a in lic.replace("/", " OR ").split(" OR ")]
    if "Apache-2.0" in alternatives:
        used = "Apache-2.0"
    else:
        used = lic
        files = sorted(glob.glob(os.path.join(dirs[(name, version)], "LICENSE*")) +
                       glob.glob(os.path.join(dirs[(name, version)], "COPYING*")))
        if not files:
            sys.exit("unity-notices.sh: no license file in the sources of %s %s" % (name, version))
        for f in files:
            with open(f, encoding="utf-8") as fh:
                texts.append("## %s %s: %s\n\n```\n%s\n```\n" % (name, version, os.path.basename(f), fh.read().strip()))
    lines.append("| %s | %s | %s | %s | %s |" % (name, version, lic, repo, used))
lines.append("")
lines.append("# License texts")
lines.append("")
lines.extend(texts)
with open(out, "w", encoding="utf-8") as fh:
    fh.write("\n".join(lines).rstrip() + "\n")
print("unity-notices.sh: %d crates, %d license texts, in %s" % (len(rows), len(texts), out))
PY
