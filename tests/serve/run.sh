#!/usr/bin/env bash
# `tickwire serve` as a fleet runs it (issue 36), against real and stand-in neighbours:
# - 20 matches made by connect tokens, 4 players each, one of them joining mid-match
#   from a client's snapshot, played to the end in sync (`tickwire bench serve`);
# - the Agones SDK sidecar: a stand-in (tests/serve/agones_standin.py) that checks every
#   request against the SDK's published REST API; Ready, Health, the player capacity and
#   counts, and Shutdown must come in that order (no Agones cluster can run here);
# - /metrics linted by `promtool check metrics` and scraped by a real Prometheus;
# - SIGTERM mid-match: the server drains (a new match is refused), no match is cut short,
#   and it exits with its figures.
# Prints one line per check, then "N passed, N failed"; exits 1 on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TW="${TICKWIRE_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/tickwire}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -n "${TW_KEEP:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

passed=0
failed=0
ok() { echo "ok     $1"; passed=$((passed + 1)); }
bad() { echo "FAILED $1"; failed=$((failed + 1)); }
check() { # check NAME CONDITION...
    local name="$1"
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
wait_for() { # wait_for SECONDS COMMAND...: until the command succeeds
    local until=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -ge "$until" ] && return 1
        sleep 0.2
    done
}

[ -x "$TW" ] || { bad "the tickwire binary ($TW) exists: cargo build --release -p tickwire-cli"; finish; }
command -v promtool >/dev/null && command -v prometheus >/dev/null || { bad "promtool and prometheus (Debian's prometheus) are installed"; finish; }

"$TW" token key >"$WORK/key"

# The SDK stand-in.
python3 "$ROOT/tests/serve/agones_standin.py" --log "$WORK/agones.jsonl" --allocate-after 2 >"$WORK/standin.out" 2>&1 &
PIDS+=($!)
wait_for 5 grep -q '^port ' "$WORK/standin.out" || { bad "the Agones stand-in starts"; finish; }
AGONES_PORT="$(awk '/^port /{print $2}' "$WORK/standin.out")"

# The server, its options partly from a config file.
cat >"$WORK/serve.conf" <<EOF
# a config file of tickwire serve
max-matches = 100
# every client of the load generator comes from 127.0.0.1
max-clients-per-ip = 0
health-secs = 1
drain-secs = 40
log-format = json
EOF
AGONES_SDK_HTTP_PORT="$AGONES_PORT" "$TW" serve --config "$WORK/serve.conf" --bind 127.0.0.1:0 \
    --key-file "$WORK/key" --metrics 127.0.0.1:0 --admin 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE=$!
PIDS+=($SERVE)
wait_for 5 grep -q '^admin ' "$WORK/serve.out" || { bad "tickwire serve starts: $(cat "$WORK/serve.err")"; finish; }
ADDR="$(awk '/^listening /{print $2}' "$WORK/serve.out")"
METRICS="$(awk '/^metrics /{print $2}' "$WORK/serve.out")"
ADMIN="$(awk '/^admin /{print $2}' "$WORK/serve.out")"
ok "tickwire serve listens on $ADDR (metrics $METRICS)"

# 20 matches for 24 s; the fourth player of each joins at 8 s.
"$TW" bench serve --server "$ADDR" --key-file "$WORK/key" --matches 20 --players 4 --late-players 1 \
    --seconds 24 --match-base 100 >"$WORK/bench.out" 2>&1 &
BENCH=$!
PIDS+=($BENCH)

# A real Prometheus scrapes the server every second.
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tickwire-serve
    static_configs:
      - targets: ['$(echo "$METRICS" | sed -e 's|^http://||' -e 's|/metrics$||')']
EOF
PROM_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)

# Mid-match (12 s in: everyone has joined): the metrics as the server has them.
sleep 12
curl -sf "$METRICS" >"$WORK/metrics.txt"
check "promtool check metrics: the scrape is clean" promtool check metrics <"$WORK/metrics.txt"
check "the metrics say 20 matches and 80 players" \
    grep -qx 'tickwire_serve_matches 20' "$WORK/metrics.txt"
grep -qx 'tickwire_serve_players 80' "$WORK/metrics.txt" || bad "80 players in the metrics: $(grep '^tickwire_serve_players ' "$WORK/metrics.txt")"
metric() { awk -v n="$1" '$1 == n {print $2}' "$WORK/metrics.txt"; }
# (A match's first players may also start from one another's snapshots: at least 20.)
snapshots_ok() {
    [ "$(metric tickwire_serve_snapshots_from_clients_total)" -ge 20 ] &&
        [ "$(metric tickwire_serve_snapshot_uploads_refused_total)/$(metric tickwire_serve_minority_checksums_total)" = "0/0" ]
}
check "every joiner's snapshot came from a client ($(metric tickwire_serve_snapshots_from_clients_total)), none refused, no checksum in the minority" snapshots_ok
admin_lists_20() {
    curl -sf "$ADMIN" | python3 -c '
import json, sys
m = json.load(sys.stdin)
sys.exit(0 if len(m) == 20 and all(x["players"] == 4 for x in m) else 1)'
}
check "the admin endpoint lists the 20 matches, 4 players each" admin_lists_20

# SIGTERM mid-match: the server drains.
kill -TERM "$SERVE"
sleep 1
"$TW" bench serve --server "$ADDR" --key-file "$WORK/key" --matches 1 --players 2 --late-players 0 \
    --seconds 4 --match-base 900 >"$WORK/late.out" 2>&1
check "while draining, a new match is refused (its clients never play)" test $? -eq 1
grep -q '"refused","peer":[0-9]*,"why":"draining"' "$WORK/serve.out" || bad "the server logged the draining refusal"

# Prometheus kept scraping all along: the most matches it saw in the last minute.
prom_saw_20() {
    curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=max_over_time(tickwire_serve_matches[1m])' |
        grep -q '"value":\[[0-9.]*,"20"\]'
}
check "a real Prometheus scraped it (max_over_time(tickwire_serve_matches[1m]) is 20)" wait_for 10 prom_saw_20

wait "$BENCH"
check "every client of the 20 matches synchronized, kept its connection, never desynced, followed at >= 59.5 t/s" \
    grep -q ': yes$' "$WORK/bench.out"
sed 's/^/    /' "$WORK/bench.out"
wait "$SERVE"
check "the server exits 0 after the drain" test $? -eq 0
SUMMARY="$(tail -1 "$WORK/serve.out")"
echo "    $SUMMARY"
check "no match was cut short; all 20 ended by themselves while draining" \
    bash -c "echo '$SUMMARY' | grep -q '\"matches_started\":20,\"matches_ended\":20,\"drained\":20,\"cut_short\":0'"
count() { grep -c "\"event\":\"$1\"" "$WORK/serve.out"; }
check "the JSON log: 20 matches started, 80 players joined, 20 matches ended vacant" \
    test "$(count match_started)/$(count player_joined)/$(grep -c '"event":"match_ended","match":[0-9]*,"end":"vacant"' "$WORK/serve.out")" = "20/80/20"
check "every log line is a JSON object" python3 -c "
import json, sys
for line in open('$WORK/serve.out'):
    if line.startswith(('listening ', 'metrics ', 'admin ')):
        continue
    json.loads(line)
"

# What the sidecar saw, in order.
check "the Agones calls: all in the published API, Ready first, Health beats, capacity, counts, Shutdown last" python3 - "$WORK/agones.jsonl" <<'EOF'
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
bad = [c for c in calls if not c["ok"]]
if bad:
    sys.exit(f"calls outside the API: {bad}")
posts = [(c["method"], c["path"], c["body"]) for c in calls if c["path"] != "/watch/gameserver"]
names = [p[1] for p in posts]
assert names[0] == "/ready", names[:3]
assert names[-1] == "/shutdown", names[-3:]
assert names.count("/shutdown") == 1
assert names.count("/health") >= 10, names.count("/health")
caps = [b["count"] for m, p, b in posts if p == "/alpha/player/capacity"]
assert caps == ["4096"], caps
players = [b["value"] for m, p, b in posts if p == "/metadata/label" and b["key"] == "players"]
matches = [b["value"] for m, p, b in posts if p == "/metadata/label" and b["key"] == "matches"]
assert "80" in players and "20" in matches and players[-1] == "0", (players, matches)
assert names.index("/alpha/player/capacity") < names.index("/metadata/label")
assert any(c["path"] == "/watch/gameserver" for c in calls), "the GameServer was watched"
EOF
check "the server saw the GameServer Allocated (the watch)" grep -q 'the GameServer is Allocated' "$WORK/serve.out"

finish
