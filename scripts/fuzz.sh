#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ (tickwire_fuzzing, crates/fuzzing) on nightly
# Rust, each for SECONDS (default 60), or only the TARGETs named. Installs cargo-fuzz if
# missing.
#
# Each run starts from the committed corpus (fuzz/corpus/<target>/, less the inputs
# on the corpus test's skip list, copied to build/fuzz/seeds/<target>/) and writes the new inputs it finds to build/fuzz/corpus/<target>/ and any crash, hang or
# out-of-memory input to build/fuzz/artifacts/<target>/; its log is
# build/fuzz/logs/<target>.log. A crash worth keeping goes into fuzz/corpus/<target>/
# as regress-<what> (the stable test crates/fuzzing/tests/fuzz_corpus.rs replays it
# from then on).
#
# Prints the executions per target and every crash; the last line is
# "N passed, N failed", and the exit status is non-zero if a target failed.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# FUZZ_ARGS adds libFuzzer flags, e.g. FUZZ_ARGS="-fork=1 -ignore_crashes=1
# -ignore_timeouts=1" to go on past known crashes and collect them all.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

secs=60
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
    secs="$1"
    shift
fi
if [ $# -gt 0 ]; then
    targets=("$@")
else
    targets=()
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
for t in "${targets[@]}"; do
    if [ ! -f "fuzz/fuzz_targets/$t.rs" ]; then
        echo "unknown target: $t (have: $(ls fuzz/fuzz_targets | sed 's/\.rs$//' | tr '\n' ' '))" >&2
        exit 2
    fi
done

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "needs the nightly toolchain: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz
fi

OUT="$ROOT/build/fuzz"
mkdir -p "$OUT/logs"
echo "== cargo +nightly fuzz build (debug assertions on)"
(cd fuzz && cargo +nightly fuzz build)

# The corpus test's skip list ("<target>/<file>: why" lines in
# crates/fuzzing/tests/fuzz_corpus.rs): inputs that still crash on this branch, left
# out of the seeds so that the run fuzzes instead of stopping at them.
skipped="$(grep -oE '^ *"[a-z0-9_]+/[^:"]+: ' crates/fuzzing/tests/fuzz_corpus.rs | sed -E 's/^ *"//; s/: $//' || true)"

passed=0
failed=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "$OUT/corpus/$t" "$OUT/artifacts/$t"
    rm -rf "$OUT/seeds/$t"
    mkdir -p "$OUT/seeds/$t"
    cp fuzz/corpus/"$t"/* "$OUT/seeds/$t/"
    for s in $skipped; do
        if [ "${s%%/*}" = "$t" ]; then
            echo "   leaving out fuzz/corpus/$s (skip list in crates/fuzzing/tests/fuzz_corpus.rs)"
            rm -f "$OUT/seeds/$s"
        fi
    done
    log="$OUT/logs/$t.log"
    echo "== $t: ${secs}s"
    status=0
    (cd fuzz && cargo +nightly fuzz run "$t" "$OUT/corpus/$t" "$OUT/seeds/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t/" ${FUZZ_ARGS:-}) >"$log" 2>&1 || status=$?
    execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)"
    cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)"
    if [ "$status" -eq 0 ]; then
        line="$t: ${execs:-?} executions in ${secs}s (${cov:-no coverage line})"
        passed=$((passed + 1))
        echo "ok: $line"
        summary+=("ok      $line")
    else
        line="$t: stopped after ${execs:-?} executions (${cov:-no coverage line})"
        failed=$((failed + 1))
        echo "FAILED: $line, exit status $status"
        grep -E "panicked at|^thread '.*' panicked|ERROR: libFuzzer|SUMMARY:|Test unit written to|out-of-memory|timeout" "$log" |
            head -12 | sed 's/^/    /' || true
        summary+=("FAILED  $line; see $log")
    fi
done

echo "== summary"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
