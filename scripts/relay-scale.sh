#!/usr/bin/env bash
# Issue 15's scale targets as a new user and as the full run check them, outside the
# test suite (which runs the short versions): the relay_scale tests with the far links
# at RELAY_SCALE_MINUTES of game time (default 10), the lab's far-link and wide-match
# tests, `tickwire bench relay` (release), and the README's demo at 16 and at 32
# clients on --latency-ms 100 --jitter-ms 30 --loss-pct 8 (30 s of real time each,
# release build), each of which must exit 0.
#
# Each step's output goes to build/relay-scale/<step>.log; the last line is
# "N passed, N failed", and the exit status is non-zero if a step failed.
#
# Usage: scripts/relay-scale.sh
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
LOGS="$ROOT/build/relay-scale"
mkdir -p "$LOGS"
export RELAY_SCALE_MINUTES="${RELAY_SCALE_MINUTES:-10}"

passed=0
failed=0
# check NAME LOG COMMAND...: runs COMMAND, its output to LOG (and the tail on failure).
check() {
    local name="$1" log="$2"
    shift 2
    echo "== $name"
    if "$@" >"$LOGS/$log.log" 2>&1; then
        passed=$((passed + 1))
        echo "   ok ($LOGS/$log.log)"
    else
        failed=$((failed + 1))
        echo "   FAILED ($LOGS/$log.log):"
        tail -n 15 "$LOGS/$log.log" | sed 's/^/   | /'
    fi
}

check "relay_scale tests, far links at $RELAY_SCALE_MINUTES minutes of game time" relay_scale \
    cargo test -p tickwire-proto --test proto relay_scale:: -- --nocapture --test-threads 1
grep -h "game time;" "$LOGS/relay_scale.log" | sed -e 's/^test [a-z0-9_:]* \.\.\. //' -e 's/^/   /' || true
check "lab far links and wide matches (lab_scale)" lab_scale \
    cargo test -p tickwire-lab --test lab lab_scale:: -- --nocapture --test-threads 1

check "build tickwire (release)" build cargo build --release -p tickwire-cli
TICKWIRE="$TARGET_DIR/release/tickwire"
check "tickwire bench relay" bench "$TICKWIRE" bench relay
sed -n '/^link/,$p' "$LOGS/bench.log" | sed 's/^/   /'
for clients in 16 32; do
    check "tickwire demo --clients $clients --seconds 30 --latency-ms 100 --jitter-ms 30 --loss-pct 8" "demo-$clients" \
        timeout 300 "$TICKWIRE" demo --clients "$clients" --seconds 30 --latency-ms 100 --jitter-ms 30 --loss-pct 8
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
