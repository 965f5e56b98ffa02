#!/usr/bin/env bash
# The NAT-pair matrix of a real P2P match. For each row, a pair topology of
# tests/nat/lab.sh (lab_pair: peer p1 behind its own NAT of one kind, peer p2 behind its
# own NAT of another, a rendezvous on public host A), the real `tickwire` CLI plays a
# two-player rollback match through it: `tickwire rendezvous` on A (203.0.113.10:7000),
# `tickwire peer` on p1 (slot 0) and p2 (slot 1), each delaying what it sends by 25 ms
# (--delay-ms 25: a 50 ms round trip between them; the kernel here has no netem). Each
# row checks that both peers synchronize within 2 s, play the match to the end with no
# desync, and end on the expected path (direct or relayed: the EXPECTED table below),
# and that the rendezvous stops cleanly. Special rows: "flush" (the edm box loses every
# mapping mid-match), "blocked" (the internet drops UDP between the two boxes mid-match:
# the match must carry on through the relay), "private" (--private: always relayed, no
# peer address printed anywhere; the relay's recording must look encrypted).
#
# Rows run in parallel, each in its own namespaces (its own LAB_PREFIX, in a subshell).
# One line per check ("ok: ..." / "FAILED: ..."), a markdown table, then
# "N passed, N failed"; non-zero exit on a failure. Without root or network namespaces
# (or nft, conntrack, python3) it prints a skip line and "0 passed, 0 failed", exits 0.
#
#   tests/nat/matrix.sh [--seconds S] [--quick] [--jobs N] [--only REGEX] [--logs DIR]
#
#   --seconds S   seconds of play after synchronization (default 60)
#   --quick       10 s matches and fewer rows (--seconds still wins if given)
#   --jobs N      rows at a time (default 10: the 20 rows in two waves; a peer is a
#                 light 60 Hz process)
#   --only REGEX  only the rows whose name matches (bash regex), e.g. 'flush|private'
#   --logs DIR    keep every row's outputs in DIR (default: a temporary directory,
#                 removed at the end)
#
# The binary: $TICKWIRE, default target/release/tickwire under the repository root
# (build it first: cargo build --release -p tickwire-cli; this script never builds).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

SECS=60
SECS_GIVEN=0
QUICK=0
JOBS=10
ONLY=""
LOGS=""
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) SECS="${2:-}"; SECS_GIVEN=1; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --jobs) JOBS="${2:-}"; shift 2 ;;
    --only) ONLY="${2:-}"; shift 2 ;;
    --logs) LOGS="${2:-}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "matrix.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ "$QUICK" = 1 ] && [ "$SECS_GIVEN" = 0 ]; then SECS=10; fi
case "$SECS" in '' | *[!0-9]* | 0) echo "matrix.sh: --seconds wants a positive whole number" >&2; exit 2 ;; esac
case "$JOBS" in '' | *[!0-9]* | 0) echo "matrix.sh: --jobs wants a positive whole number" >&2; exit 2 ;; esac

# shellcheck source=tests/nat/lab.sh
source "$HERE/lab.sh"
lab_able_or_skip

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

TICKWIRE="${TICKWIRE:-$ROOT/target/release/tickwire}"
# The real binary must exist and have the commands of the contract; a missing binary
# is a failure, not a skip (this script does not build it).
if [ ! -x "$TICKWIRE" ]; then
    result "tickwire binary" 0 "$TICKWIRE is not an executable (build it: cargo build --release -p tickwire-cli, or set TICKWIRE)"
    echo "$passed passed, $failed failed"
    exit 1
fi
for cmd in rendezvous peer; do
    if ! "$TICKWIRE" "$cmd" --help >/dev/null 2>&1; then
        result "tickwire binary" 0 "$TICKWIRE has no working \`$cmd\` command (\`$TICKWIRE $cmd --help\` fails)"
        echo "$passed passed, $failed failed"
        exit 1
    fi
done

RDV_IP=203.0.113.10
RDV="$RDV_IP:7000"
DELAY_MS=25
# A peer gives up when not synchronized within 10 s; the whole match ends by then + S.
PEER_DEADLINE=$((10 + SECS + 20))
# The special rows act this long after both peers synchronized (a third of a short match).
if [ "$SECS" -ge 30 ]; then EVENT_AFTER=10; else EVENT_AFTER=$(((SECS + 2) / 3)); fi
MIN_FRAMES=$((SECS * 57)) # 60 Hz x S x 0.95
MAX_SYNC_MS=2000
MIN_RATIO=0.95

# ---------------------------------------------------------------------------------------
# EXPECTED: the rows, and the path each must end on. Revise a row's path here if the
# real implementation behaves otherwise, with the reason next to it. Both peers must
# report this path for the other player in their done line.
#
# Why (RFC 4787 terms; each box of lab.sh: EIM keeps a peer's port for every
# destination, edm gives each new destination a random port; filtering EIF accepts
# anyone on an existing mapping, ADF anyone from an address the mapping has sent to,
# APDF only the exact address and port it has sent to; double = EIM/APDF behind a
# CGNAT EIM/APDF, which behaves like one EIM/APDF box):
#  - eim_eif or open on either side: direct. The open side / full cone accepts the other
#    side's packets from whatever port its NAT picked, and answers that port.
#  - EIM on both sides (adf, apdf, double in any mix): direct. Each side's mapping is the
#    one the rendezvous saw; simultaneous sends open both filters.
#  - eim_adf x edm: direct. The edm side reaches the ADF mapping from a new random port
#    (ADF accepts it: the ADF side already sent to that address), and the ADF side
#    answers the port it saw (a peer-reflexive address).
#  - eim_apdf x edm, double x edm, edm x edm: relayed. The edm side's port towards the
#    other peer is unpredictable and an APDF filter (or a second edm) only lets in the
#    exact port it sent to: no direct path without port prediction.
#  - hairpin: direct (both peers behind one box: their LAN addresses, or the box's
#    hairpin, reach each other).
#  - flush (eim_eif x edm, the edm box flushed mid-match): direct, as eim_eif x edm: the
#    edm side's next packets leave from a new port, which the full cone accepts.
#  - blocked (eim_eif x eim_eif, UDP between the boxes dropped mid-match): relayed; the
#    path must be direct before the block (else the row tests nothing).
#  - private (eim_eif x eim_eif, --private on both): relayed from the start; a stranger
#    (public host B, no ticket) sends the rendezvous relay datagrams and junk Hellos
#    mid-match, none of which may be forwarded.
#
# name           p1        p2        path     special  in --quick
ROWS="
eif-eif          eim_eif   eim_eif   direct   -        -
eif-adf          eim_eif   eim_adf   direct   -        -
eif-apdf         eim_eif   eim_apdf  direct   -        -
eif-edm          eim_eif   edm       direct   -        quick
eif-double       eim_eif   double    direct   -        -
adf-adf          eim_adf   eim_adf   direct   -        -
adf-apdf         eim_adf   eim_apdf  direct   -        -
adf-edm          eim_adf   edm       direct   -        quick
adf-double       eim_adf   double    direct   -        -
apdf-apdf        eim_apdf  eim_apdf  direct   -        quick
apdf-edm         eim_apdf  edm       relayed  -        quick
apdf-double      eim_apdf  double    direct   -        -
edm-edm          edm       edm       relayed  -        -
edm-double       edm       double    relayed  -        -
double-double    double    double    direct   -        quick
open-edm         open      edm       direct   -        quick
hairpin          hairpin   hairpin   direct   -        quick
flush            eim_eif   edm       direct   flush    quick
blocked          eim_eif   eim_eif   relayed  blocked  quick
private          eim_eif   eim_eif   relayed  private  quick
"
# ---------------------------------------------------------------------------------------

PREFIX="twmx-$$-"
if [ -n "$LOGS" ]; then
    mkdir -p "$LOGS" || exit 2
    WORK="$(cd "$LOGS" && pwd)"
else
    WORK="$(mktemp -d)"
fi
ROW_PIDS=()
on_exit() {
    local pid
    for pid in ${ROW_PIDS[@]+"${ROW_PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in ${ROW_PIDS[@]+"${ROW_PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
    lab_cleanup "$PREFIX"
    if [ -z "$LOGS" ]; then rm -rf "$WORK"; fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_time=$(date +%s.%N)

# wait_pid PID SECONDS: wait for a child at most SECONDS, then TERM it (and KILL it a
# second later); prints its exit status (124 after a timeout).
wait_pid() {
    local pid="$1" i rc
    for ((i = 0; i < $2 * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        sleep 1
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        echo 124
        return
    fi
    wait "$pid"
    rc=$?
    echo "$rc"
}

# wait_line FILE REGEX SECONDS: whether a line matching REGEX (grep -E) shows up in FILE.
wait_line() {
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

SYNC_RE='"event" *: *"synchronized"'

# run_row INDEX NAME X Y SPECIAL: one row, in its own namespaces; run in a subshell.
# Leaves in $WORK/NAME: p1.out/.err/.rc, p2.*, rdv.*, meta (addresses), event (what a
# special row did, and each peer's stdout line count at that moment), error (a setup
# failure), relay.rec (private).
run_row() {
    local idx="$1" name="$2" x="$3" y="$4" special="$5" dir="$WORK/$2"
    mkdir -p "$dir"
    fail_setup() {
        echo "$*" >"$dir/error"
        exit 1
    }
    lab_init "${PREFIX}${idx}-"
    if ! lab_pair "$x" "$y" >"$dir/build.log" 2>&1; then
        fail_setup "lab_pair $x $y: $(tr '\n' ' ' <"$dir/build.log")"
    fi
    {
        printf 'p1_pub=%q\np2_pub=%q\n' "${LAB_PEER_PUBLIC[p1]}" "${LAB_PEER_PUBLIC[p2]}"
        printf 'p1_lan=%q\np2_lan=%q\n' "${LAB_HOST_IP[p1]}" "${LAB_HOST_IP[p2]}"
        printf 'p1_box=%q\np2_box=%q\n' "${LAB_PEER_BOX[p1]}" "${LAB_PEER_BOX[p2]}"
    } >"$dir/meta"

    local slot
    local -a rdv_args peer_args
    # Keys, the match secret and tickets go in files: on a command line every user of
    # the machine could read them (ps).
    "$TICKWIRE" token key >"$dir/server.key" 2>"$dir/tool.err" || fail_setup "tickwire token key: $(tail -n1 "$dir/tool.err")"
    "$TICKWIRE" token key >"$dir/secret" 2>"$dir/tool.err" || fail_setup "tickwire token key: $(tail -n1 "$dir/tool.err")"
    for slot in 0 1; do
        "$TICKWIRE" token mint --key-file "$dir/server.key" --addresses "$RDV" \
            --match "$idx" --slot "$slot" --players 2 --client-id $((slot + 1)) \
            --expire-secs $((PEER_DEADLINE + 600)) >"$dir/ticket$slot" 2>"$dir/tool.err" ||
            fail_setup "tickwire token mint --slot $slot: $(tail -n1 "$dir/tool.err")"
    done

    rdv_args=(rendezvous --bind "$RDV" --key-file "$dir/server.key" --match-secs $((PEER_DEADLINE + 60)))
    [ "$special" = private ] && rdv_args+=(--record "$dir/relay.rec")
    lab_spawn A "$TICKWIRE" "${rdv_args[@]}" >"$dir/rdv.out" 2>"$dir/rdv.err"
    local rdv_pid="$LAB_LAST_PID"
    wait_line "$dir/rdv.out" '^listening ' 5 ||
        fail_setup "the rendezvous printed no 'listening' line within 5 s: $(tail -n1 "$dir/rdv.err")"

    peer_args=(peer --rendezvous "$RDV" --secret-file "$dir/secret" --players 2 --seconds "$SECS" --delay-ms "$DELAY_MS")
    [ "$special" = private ] && peer_args+=(--private)
    lab_spawn p1 "$TICKWIRE" "${peer_args[@]}" --ticket-file "$dir/ticket0" --slot 0 >"$dir/p1.out" 2>"$dir/p1.err"
    local p1_pid="$LAB_LAST_PID"
    lab_spawn p2 "$TICKWIRE" "${peer_args[@]}" --ticket-file "$dir/ticket1" --slot 1 >"$dir/p2.out" 2>"$dir/p2.err"
    local p2_pid="$LAB_LAST_PID"

    case "$special" in
    private)
        # A stranger (public host B, no ticket) sends the rendezvous relay datagrams for
        # the match's slots and junk Hellos while the match runs: nothing of it may be
        # forwarded (the rendezvous counts strangers) nor disturb the match.
        if wait_line "$dir/p1.out" "$SYNC_RE" 12 && wait_line "$dir/p2.out" "$SYNC_RE" 12; then
            lab_exec B python3 - "$RDV_IP" 7000 >"$dir/stranger.out" 2>&1 <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200):
    s.sendto(bytes([0xE4, i % 2]) + os.urandom(60), (sys.argv[1], int(sys.argv[2])))
    if i % 10 == 0:
        s.sendto(bytes([0xE1, 1]) + os.urandom(1098), (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.005)
print("sent 200 relay datagrams and 20 junk Hellos")
PY
        fi
        ;;
    flush | blocked)
        if wait_line "$dir/p1.out" "$SYNC_RE" 12 && wait_line "$dir/p2.out" "$SYNC_RE" 12; then
            sleep "$EVENT_AFTER"
            local what rc l1 l2
            # The peers' line counts before the action: every later line is after it.
            l1="$(wc -l <"$dir/p1.out")"
            l2="$(wc -l <"$dir/p2.out")"
            if [ "$special" = flush ]; then
                what="lab_flush ${LAB_PEER_BOX[p2]}"
                lab_flush "${LAB_PEER_BOX[p2]}" 2>"$dir/event.err"
                rc=$?
            else
                what="lab_block ${LAB_PEER_PUBLIC[p1]} ${LAB_PEER_PUBLIC[p2]}"
                lab_block "${LAB_PEER_PUBLIC[p1]}" "${LAB_PEER_PUBLIC[p2]}" 2>"$dir/event.err"
                rc=$?
            fi
            printf 'event_what=%q\nevent_rc=%q\nevent_p1_line=%q\nevent_p2_line=%q\n' "$what" "$rc" "$l1" "$l2" >"$dir/event"
        fi
        ;;
    esac

    wait_pid "$p1_pid" "$PEER_DEADLINE" >"$dir/p1.rc"
    wait_pid "$p2_pid" 10 >"$dir/p2.rc"
    kill -TERM "$rdv_pid" 2>/dev/null
    wait_pid "$rdv_pid" 10 >"$dir/rdv.rc"
    exit 0
}

# peer_summary VAR_PREFIX FILE [LINE]: shell assignments (VAR_PREFIX_key=value) from a
# peer's stdout: done (a done line seen), synced, sync_ms, frames, desyncs (the done
# line's), desync_events, final (its path to the other player), events (every path
# event as path@addr@at_ms), and with LINE, before (the last path event within the first
# LINE lines) and after (the path events past them); bad (lines that are not JSON).
peer_summary() {
    python3 - "$@" <<'PY'
import json, shlex, sys
prefix, path = sys.argv[1], sys.argv[2]
mark = int(sys.argv[3]) if len(sys.argv) > 3 else None
out = {"done": 0, "synced": 0, "sync_ms": "", "frames": "", "desyncs": "", "desync_events": 0,
       "final": "", "events": "", "before": "none", "after": "", "bad": 0}
events, after = [], []
try:
    lines = open(path, errors="replace").read().splitlines()
except OSError:
    lines = []
for n, line in enumerate(lines, 1):
    if not line.strip():
        continue
    try:
        e = json.loads(line)
        kind = e.get("event")
    except (ValueError, AttributeError):
        out["bad"] += 1
        continue
    if kind == "synchronized":
        out["synced"] = 1
        if out["sync_ms"] == "":
            out["sync_ms"] = e.get("at_ms", "")
    elif kind == "desync":
        out["desync_events"] += 1
    elif kind == "path":
        text = "%s@%s@%s" % (e.get("path"), e.get("addr"), e.get("at_ms"))
        events.append(text)
        if mark is not None:
            if n <= mark:
                out["before"] = e.get("path")
            else:
                after.append(text)
    elif kind == "done":
        out["done"] = 1
        for key in ("frames", "desyncs", "sync_ms"):
            if e.get(key) is not None:
                out[key] = e[key]
        paths = e.get("paths") or {}
        out["final"] = "/".join(str(v) for v in paths.values()) if isinstance(paths, dict) else str(paths)
out["events"] = " ".join(events)
out["after"] = " ".join(after)
for key, value in out.items():
    print("%s_%s=%s" % (prefix, key, shlex.quote(str(value))))
PY
}

# rdv_summary FILE: rdv_done, rdv_listening, rdv_matches, rdv_relayed, rdv_bytes,
# rdv_refused, rdv_over_budget, rdv_strangers, rdv_dropped from the rendezvous's stdout.
rdv_summary() {
    python3 - "$1" <<'PY'
import json, shlex, sys
out = {"done": 0, "listening": "", "matches": "", "relayed": "", "bytes": "", "refused": "", "over_budget": "",
       "strangers": "", "dropped": ""}
try:
    lines = open(sys.argv[1], errors="replace").read().splitlines()
except OSError:
    lines = []
for line in lines:
    if line.startswith("listening "):
        out["listening"] = line.split(None, 1)[1].strip()
        continue
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if isinstance(e, dict) and e.get("event") == "done":
        out["done"] = 1
        out["matches"] = e.get("matches", "")
        out["relayed"] = e.get("relayed_datagrams", "")
        out["bytes"] = e.get("relayed_bytes", "")
        out["refused"] = e.get("refused", "")
        out["over_budget"] = e.get("over_budget", "")
        out["strangers"] = e.get("strangers", "")
        out["dropped"] = e.get("dropped", "")
for key, value in out.items():
    print("rdv_%s=%s" % (key, shlex.quote(str(value))))
PY
}

# leaks FILE IP...: the IPs (as whole addresses) that FILE's text contains.
leaks() {
    python3 - "$@" <<'PY'
import re, sys
try:
    text = open(sys.argv[1], errors="replace").read()
except OSError:
    text = ""
found = [ip for ip in sys.argv[2:] if ip and re.search(r"(?<![\d.])" + re.escape(ip) + r"(?![\d])", text)]
print(" ".join(found))
PY
}

# record_check FILE: records (u16 little-endian length, then the bytes: the sealed part
# of each packet the relay carried, past its plaintext header, as `tickwire rendezvous
# --record` writes them), compressed together by zlib at level 9: prints "ok RECORDS
# BYTES RATIO" or "bad REASON".
record_check() {
    python3 - "$1" "$MIN_RATIO" <<'PY'
import struct, sys, zlib
try:
    data = open(sys.argv[1], "rb").read()
except OSError as e:
    print("bad no recording (%s)" % e.strerror)
    sys.exit()
i, records, body = 0, 0, bytearray()
while i < len(data):
    if i + 2 > len(data):
        print("bad a truncated length at byte %d" % i)
        sys.exit()
    (n,) = struct.unpack_from("<H", data, i)
    if i + 2 + n > len(data):
        print("bad record %d runs past the end (length %d at byte %d)" % (records, n, i))
        sys.exit()
    body += data[i + 2:i + 2 + n]
    i += 2 + n
    records += 1
if not body:
    print("bad empty (%d records)" % records)
    sys.exit()
ratio = len(zlib.compress(bytes(body), 9)) / len(body)
print("ok %d %d %.4f" % (records, len(body), ratio))
PY
}

# ---- run the rows ----

selected=()
while read -r name x y want special quick; do
    [ -n "${name:-}" ] || continue
    if [ "$QUICK" = 1 ] && [ "$quick" != quick ]; then continue; fi
    if [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]]; then continue; fi
    selected+=("$name $x $y $want $special")
done <<<"$ROWS"
if [ "${#selected[@]}" -eq 0 ]; then
    echo "matrix.sh: no row selected" >&2
    exit 2
fi
echo "${#selected[@]} rows, $SECS s matches, $JOBS at a time; tickwire: $TICKWIRE" >&2

idx=0
for row in "${selected[@]}"; do
    read -r name x y want special <<<"$row"
    idx=$((idx + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || true; done
    echo "start: $name ($x x $y)" >&2
    (run_row "$idx" "$name" "$x" "$y" "$special") >"$WORK/$name.log" 2>&1 &
    ROW_PIDS+=($!)
done
for pid in "${ROW_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
ROW_PIDS=()

# ---- check the rows ----

table=()
for row in "${selected[@]}"; do
    read -r name x y want special <<<"$row"
    dir="$WORK/$name"
    label="$name ($x x $y)"
    if [ -e "$dir/error" ]; then
        result "$label" 0 "setup: $(cat "$dir/error")"
        table+=("| $x | $y | setup failed | - | - | - |")
        continue
    fi
    p1_pub="" p2_pub="" p1_lan="" p2_lan="" p1_box="" p2_box=""
    # shellcheck disable=SC1091
    [ -e "$dir/meta" ] && source "$dir/meta"
    event_what="" event_rc="" event_p1_line="" event_p2_line=""
    # shellcheck disable=SC1091
    [ -e "$dir/event" ] && source "$dir/event"
    eval "$(peer_summary p1 "$dir/p1.out" $event_p1_line)"
    eval "$(peer_summary p2 "$dir/p2.out" $event_p2_line)"
    eval "$(rdv_summary "$dir/rdv.out")"

    for p in p1 p2; do
        rc="$(cat "$dir/$p.rc" 2>/dev/null || echo none)"
        v="${p}_done"
        done_="${!v}"
        v="${p}_synced"
        synced="${!v}"
        v="${p}_frames"
        frames="${!v}"
        v="${p}_desyncs"
        desyncs="${!v}"
        v="${p}_desync_events"
        devents="${!v}"
        v="${p}_bad"
        bad="${!v}"
        ok=1
        [ "$rc" = 0 ] || ok=0
        [ "$done_" = 1 ] || ok=0
        [ "$synced" = 1 ] || ok=0
        [ "$desyncs" = 0 ] && [ "$devents" = 0 ] || ok=0
        [[ "$frames" =~ ^[0-9]+$ ]] && [ "$frames" -ge "$MIN_FRAMES" ] || ok=0
        detail="exit $rc, $([ "$synced" = 1 ] && echo synchronized || echo "never synchronized"), frames ${frames:-?} (want >= $MIN_FRAMES), desyncs ${desyncs:-?} ($devents desync events)"
        [ "$done_" = 1 ] || detail+=", no done line"
        [ "$bad" = 0 ] || detail+=", $bad lines not JSON"
        if [ "$rc" != 0 ] && [ -s "$dir/$p.err" ]; then detail+="; stderr: $(tail -n1 "$dir/$p.err" | cut -c1-200)"; fi
        result "$label: $p" "$ok" "$detail"
    done

    ok=1
    for v in "$p1_sync_ms" "$p2_sync_ms"; do
        [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -lt "$MAX_SYNC_MS" ] || ok=0
    done
    result "$label: sync" "$ok" "sync_ms p1 ${p1_sync_ms:-?}, p2 ${p2_sync_ms:-?} (want < $MAX_SYNC_MS)"

    ok=1
    [ "$p1_final" = "$want" ] && [ "$p2_final" = "$want" ] || ok=0
    result "$label: path" "$ok" "final path p1 ${p1_final:-?}, p2 ${p2_final:-?} (want $want); path events p1: ${p1_events:-none}; p2: ${p2_events:-none}"

    rdv_rc="$(cat "$dir/rdv.rc" 2>/dev/null || echo none)"
    ok=1
    [ "$rdv_rc" = 0 ] && [ "$rdv_done" = 1 ] || ok=0
    [ "$rdv_matches" = 1 ] || ok=0
    [ "$rdv_listening" = "$RDV" ] || ok=0
    if [ "$want" = relayed ]; then [[ "$rdv_relayed" =~ ^[0-9]+$ ]] && [ "$rdv_relayed" -gt 0 ] || ok=0; fi
    detail="exit $rdv_rc after SIGTERM, listening ${rdv_listening:-?} (want $RDV), $([ "$rdv_done" = 1 ] && echo "done: matches $rdv_matches, relayed $rdv_relayed datagrams ($rdv_bytes bytes), refused $rdv_refused, over_budget $rdv_over_budget" || echo "no done line")"
    [ "$want" = relayed ] && detail+=" (a relayed match: relayed datagrams > 0)"
    if [ "$rdv_rc" != 0 ] && [ -s "$dir/rdv.err" ]; then detail+="; stderr: $(tail -n1 "$dir/rdv.err" | cut -c1-200)"; fi
    result "$label: rendezvous" "$ok" "$detail"

    p2_label="$y"
    case "$special" in
    flush | blocked)
        if [ -z "$event_what" ]; then
            result "$label: $special" 0 "not done: the peers did not both synchronize"
        elif [ "$special" = flush ]; then
            p2_label="$y (flushed)"
            result "$label: flush" "$([ "$event_rc" = 0 ] && echo 1 || echo 0)" \
                "$event_what (status $event_rc) $EVENT_AFTER s after sync; path before it p1 $p1_before, p2 $p2_before; path events after it p1: ${p1_after:-none}; p2: ${p2_after:-none}"
        else
            p2_label="$y (blocked)"
            ok=1
            [ "$event_rc" = 0 ] || ok=0
            [ "$p1_before" = direct ] && [ "$p2_before" = direct ] || ok=0
            result "$label: blocked" "$ok" \
                "$event_what (status $event_rc) $EVENT_AFTER s after sync; path before it p1 $p1_before, p2 $p2_before (want direct); path events after it p1: ${p1_after:-none}; p2: ${p2_after:-none}"
        fi
        ;;
    private)
        p2_label="$y (private)"
        ok=1
        bad_addrs=""
        for ev in $p1_events $p2_events; do
            a="${ev#*@}"
            a="${a%@*}"
            [ "${ev%%@*}" = relayed ] && [ "$a" = "$RDV" ] || { ok=0; bad_addrs+=" $ev"; }
        done
        [ -n "$p1_events" ] && [ -n "$p2_events" ] || ok=0
        result "$label: private path" "$ok" "every path event relayed via $RDV (p1: ${p1_events:-none}; p2: ${p2_events:-none})${bad_addrs:+; not: $bad_addrs}"
        l1="$(leaks "$dir/p1.out" "$p2_pub" "$p2_lan")"
        l2="$(leaks "$dir/p2.out" "$p1_pub" "$p1_lan")"
        lr="$(leaks "$dir/rdv.out" "$p1_pub" "$p1_lan" "$p2_pub" "$p2_lan")"
        ok=1
        [ -z "$l1$l2$lr" ] || ok=0
        result "$label: private stdout" "$ok" "p1's stdout names ${l1:-none} of p2's addresses ($p2_pub, $p2_lan); p2's ${l2:-none} of p1's ($p1_pub, $p1_lan); the rendezvous's ${lr:-none} of either"
        ok=1
        [[ "$rdv_strangers" =~ ^[0-9]+$ ]] && [ "$rdv_strangers" -ge 200 ] || ok=0
        [[ "$rdv_dropped" =~ ^[0-9]+$ ]] && [ "$rdv_dropped" -ge 20 ] || ok=0
        result "$label: strangers" "$ok" "$(cat "$dir/stranger.out" 2>/dev/null | tail -n1) from B mid-match: the rendezvous counted ${rdv_strangers:-?} strangers (want >= 200, none forwarded) and dropped ${rdv_dropped:-?} datagrams (want >= 20: the junk Hellos); the match stayed in sync (above)"
        rec="$(record_check "$dir/relay.rec")"
        read -r verdict records bytes ratio <<<"$rec"
        if [ "$verdict" = ok ]; then
            ok=$(python3 -c 'import sys; print(1 if float(sys.argv[1]) >= float(sys.argv[2]) else 0)' "$ratio" "$MIN_RATIO")
            result "$label: relay recording" "$ok" "$records records, $bytes sealed bytes past their headers, zlib ratio $ratio (want >= $MIN_RATIO: unreadable)"
        else
            result "$label: relay recording" 0 "${rec#bad }"
        fi
        ;;
    esac

    if [ "$p1_final" = "$p2_final" ]; then path="${p1_final:-?}"; else path="${p1_final:-?}/${p2_final:-?}"; fi
    [ "$p1_final" = "$want" ] && [ "$p2_final" = "$want" ] || path+=" (want $want)"
    table+=("| $x | $p2_label | $path | ${p1_sync_ms:-?}/${p2_sync_ms:-?} | ${p1_frames:-?}/${p2_frames:-?} | ${p1_desyncs:-?}/${p2_desyncs:-?} |")
done

lab_cleanup "$PREFIX"
left="$(ip netns list | awk '{print $1}' | grep -c -- "^$PREFIX" || true)"
result "cleanup" "$([ "$left" = 0 ] && echo 1 || echo 0)" "$left namespaces left with prefix $PREFIX"

echo
echo "| p1 NAT | p2 NAT | path | sync ms (p1/p2) | frames | desyncs |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
echo
[ -n "$LOGS" ] && echo "logs: $WORK"
[ "$failed" -gt 0 ] && [ -z "$LOGS" ] && echo "(rerun with --logs DIR to keep every row's outputs)"
echo "took $(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$start_time" "$(date +%s.%N)") s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
