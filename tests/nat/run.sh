#!/usr/bin/env bash
# The NAT lab's own test: builds each topology of tests/nat/lab.sh, runs
# tests/nat/probe.py in its namespaces, and checks that every NAT behaves as the lab
# claims (RFC 4787 mapping and filtering, a double NAT, hairpinning, lab_flush, and the
# netem delay when the kernel has it), then tears it down. One line per check, then
# "N passed, N failed"; non-zero exit on a failure. Without root or network namespaces
# (or nft, conntrack) it prints a skip line and "0 passed, 0 failed" and exits 0.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROBE="$HERE/probe.py"

# shellcheck source=tests/nat/lab.sh
source "$HERE/lab.sh"
lab_able_or_skip
lab_init
TMP="$(mktemp -d)"
trap 'lab_cleanup; rm -rf "$TMP"' EXIT
start_time=$(date +%s.%N)

passed=0
failed=0
# result NAME OK DETAIL
result() {
    if [ "$2" = 1 ]; then
        passed=$((passed + 1))
        echo "ok: $1: $3"
    else
        failed=$((failed + 1))
        echo "FAILED: $1: $3"
    fi
}
# get KEY LINE: the value of KEY=value in the probe's line
get() { sed -n "s/.*\(^\| \)$1=\([^ ]*\).*/\2/p" <<<"$2"; }

A=203.0.113.10:3478
A2=203.0.113.10:3479
B=203.0.113.20:3478

# The reflectors on the public hosts: A on two ports (its PROBE answer comes from both),
# B relays for A to addresses it never heard from.
start_servers() {
    rm -f "$TMP"/*.ready
    lab_spawn A python3 "$PROBE" reflect --bind "$A" --bind "$A2" --partner "$B" --ready "$TMP/A.ready"
    lab_spawn B python3 "$PROBE" reflect --bind "$B" --ready "$TMP/B.ready"
    local i
    for i in $(seq 200); do
        [ -e "$TMP/A.ready" ] && [ -e "$TMP/B.ready" ] && return 0
        sleep 0.02
    done
    echo "reflectors did not start" >&2
    return 1
}

# build KIND: a fresh topology with its reflectors.
build() {
    lab_cleanup
    if ! lab_topology "$1" >"$TMP/build.log" 2>&1 || ! start_servers; then
        result "$1: build" 0 "$(tr '\n' ' ' <"$TMP/build.log")"
        return 1
    fi
}

# classify KIND MAPPING FILTERING MAPPED_IP: the client probe from p1 and p2 at once, each
# must measure MAPPING (or "not EIM") and FILTERING with the public address MAPPED_IP.
classify() {
    local kind="$1" want_map="$2" want_filter="$3" want_ip="$4" peer line ok map
    lab_exec p1 python3 "$PROBE" client --a "$A" --a2 "$A2" --b "$B" >"$TMP/p1.out" 2>&1 &
    local pid1=$!
    lab_exec p2 python3 "$PROBE" client --a "$A" --a2 "$A2" --b "$B" >"$TMP/p2.out" 2>&1 &
    local pid2=$!
    wait "$pid1" "$pid2"
    for peer in p1 p2; do
        line="$(cat "$TMP/$peer.out")"
        map="$(get mapping "$line")"
        ok=1
        if [ "$want_map" = "not EIM" ]; then
            case "$map" in ADM | APDM) ;; *) ok=0 ;; esac
        else
            [ "$map" = "$want_map" ] || ok=0
        fi
        [ "$(get filtering "$line")" = "$want_filter" ] || ok=0
        [ "$(get mapped_ip "$line")" = "$want_ip" ] || ok=0
        [ "$(get unmapped "$line")" = dropped ] || ok=0
        result "$kind $peer" "$ok" "mapping $map (want $want_map), filtering $(get filtering "$line") (want $want_filter); mapped by A $(get mapped_A "$line"), A:3479 $(get mapped_A2 "$line"), B $(get mapped_B "$line") (local $(get local "$line")); unsolicited from A:3479 $(get from_A2 "$line"), from B $(get from_B "$line"), to an unmapped port $(get unmapped "$line")"
        echo "$kind $peer $line" >>"$TMP/table"
    done
}

# hairpin KIND WANT(yes|no): p2 makes a mapping (via A) and waits; p1 sends to p2's public
# mapped address. With hairpinning the packet reaches p2 from p1's public mapping, and
# p2's answer comes back from p2's public mapping.
hairpin() {
    local kind="$1" want="$2" line ok=1 saw
    rm -f "$TMP/p2.addr"
    lab_exec p2 python3 "$PROBE" hairpin-listen --a "$A" --out "$TMP/p2.addr" --timeout 2 >"$TMP/hl.out" 2>&1 &
    local pid=$!
    line="$(lab_exec p1 python3 "$PROBE" hairpin-send --a "$A" --peer-file "$TMP/p2.addr" --timeout 1 2>&1)"
    wait "$pid"
    saw="$(get seen_from "$(cat "$TMP/hl.out")")"
    if [ "$want" = yes ]; then
        [ "$(get hairpin "$line")" = yes ] || ok=0
        [ "$(get reply_from "$line")" = "$(get peer_mapped "$line")" ] || ok=0
        [ "$(get peer_saw "$line")" = "$(get own_mapped "$line")" ] || ok=0
        [ "$saw" = "$(get own_mapped "$line")" ] || ok=0
    else
        [ "$(get hairpin "$line")" = no ] || ok=0
        [ "$saw" = none ] || ok=0
    fi
    result "$kind: hairpin $want" "$ok" "p1 (mapped $(get own_mapped "$line")) to p2's mapped $(get peer_mapped "$line"): hairpin=$(get hairpin "$line"), p2 saw ${saw:-?}, reply from $(get reply_from "$line")"
    echo "$kind hairpin $line seen_from=$saw" >>"$TMP/table"
}

# flush KIND WANT_CHANGED: p1 echoes to A, lab_flush drops the box's state, p1 echoes again
# from the same socket; the box's conntrack table is empty right after the flush.
flush() {
    local kind="$1" box="$2" want="$3" line count
    rm -f "$TMP/step" "$TMP/go"
    lab_exec p1 python3 "$PROBE" rebind --a "$A" --step "$TMP/step" --go "$TMP/go" >"$TMP/rb.out" 2>&1 &
    local pid=$! i
    for i in $(seq 250); do [ -e "$TMP/step" ] && break; sleep 0.02; done
    lab_flush "$box"
    count="$(lab_exec "$box" conntrack -C 2>/dev/null)"
    touch "$TMP/go"
    wait "$pid"
    line="$(cat "$TMP/rb.out")"
    local ok=1
    [ "$(get changed "$line")" = "$want" ] || ok=0
    [ "$count" = 0 ] || ok=0
    result "$kind: lab_flush" "$ok" "conntrack entries after flush: $count; mapping before $(get first "$line"), after $(get second "$line"): changed=$(get changed "$line") (want $want)"
}

build eim_eif && classify eim_eif EIM EIF 198.51.100.2
build eim_adf && classify eim_adf EIM ADF 198.51.100.2
if build eim_apdf; then
    classify eim_apdf EIM APDF 198.51.100.2
    hairpin eim_apdf no
    flush eim_apdf nat no
fi
if build edm; then
    classify edm "not EIM" APDF 198.51.100.2
    flush edm nat yes
fi
build double && classify double EIM APDF 198.51.100.3
if build hairpin; then
    classify hairpin EIM APDF 198.51.100.2
    hairpin hairpin yes
fi
# netem: 25 ms each way on the NAT box's internet link, so A's echo takes >= 50 ms.
if build eim_apdf; then
    if lab_delay nat 25ms; then
        line="$(lab_exec p1 python3 "$PROBE" client --a "$A" --a2 "$A2" --b "$B" --rtt-only 2>&1)"
        rtt="$(get rtt_ms "$line")"
        ok=0
        python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 50 else 1)' "$rtt" 2>/dev/null && ok=1
        result "lab_delay 25ms" "$ok" "echo round trip to A ${rtt} ms (want >= 50)"
    else
        echo "skipped: lab_delay 25ms (this kernel has no netem qdisc, CONFIG_NET_SCH_NETEM)"
    fi
fi
lab_cleanup

left="$(ip netns list | awk '{print $1}' | grep -c -- "^$LAB_PREFIX" || true)"
result "cleanup" "$([ "$left" = 0 ] && echo 1 || echo 0)" "$left namespaces left with prefix $LAB_PREFIX"
if [ -n "${NAT_LAB_TABLE:-}" ]; then cp "$TMP/table" "$NAT_LAB_TABLE"; fi
echo "took $(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$start_time" "$(date +%s.%N)") s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
