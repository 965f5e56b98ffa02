# shellcheck shell=bash
# The NAT lab: network namespaces joined by veth pairs, with real Linux NATs (nftables
# and conntrack) between them, built and torn down by the test itself. Sourced:
#
#   source tests/nat/lab.sh
#   lab_init                    # a unique name prefix; an EXIT trap runs lab_cleanup
#   lab_topology eim_apdf       # the internet, public hosts A and B, a NAT box "nat",
#                               # peers p1 and p2 behind it (see lab_topology)
#   lab_pair eim_adf edm        # or: p1 behind its own eim_adf box, p2 behind its own
#                               # edm box (see lab_pair; tests/nat/matrix.sh)
#   lab_exec p1 python3 tests/nat/probe.py client ...
#   lab_cleanup                 # every namespace (and so every veth) with the prefix
#
# Nothing leaves the machine: the namespaces are joined only to each other, never to
# the root namespace, and every veth is created inside them (so none is ever visible in
# the root namespace, and names never collide between parallel runs).
#
# Addresses (TEST-NET and shared address space only):
#   internet "inet": a router with two bridges, "pub" 203.0.113.1/24 (public hosts) and
#                    "isp" 198.51.100.1/24 (the NAT boxes' outside interfaces)
#   public hosts:    A 203.0.113.10 (a server may use several ports on it, e.g. 3478
#                    and 3479), B 203.0.113.20; lab_public adds more (lab_side: an
#                    open peer at 203.0.113.31 or .32)
#   NAT boxes:       outside interface "wan" (198.51.100.x/24 on the internet, or an
#                    address on another box's LAN: a home box behind a CGNAT), inside a
#                    bridge "lan" (192.168.x.1/24, or 100.64.0.1/10 for a CGNAT)
#   peers:           on a box's LAN; each peer's ephemeral ports are its own range
#                    (peer 1: 20000-29999, peer 2: 30000-39999), see lab_peer
#
# Everything is nftables (one table "lab" per box) plus conntrack; iptables is not used.

# The prefix every namespace name starts with; unique per run unless set beforehand.
LAB_PREFIX="${LAB_PREFIX:-}"
declare -gA LAB_WAN_IP=() LAB_LAN_GW=() LAB_LAN_LEN=() LAB_LAN_NET=() LAB_PEERS=() LAB_HOST_IP=() LAB_UPLINK=()
# Per peer of a pair topology (lab_pair): the box it sits behind ("" for an open host)
# and its public address (the outermost box's outside address, or its own).
declare -gA LAB_PEER_BOX=() LAB_PEER_PUBLIC=()
LAB_VETH_N=0
LAB_PIDS=()

# lab_able_or_skip: unless this machine can run the lab (root, iproute2, nftables,
# conntrack, python3, network namespaces), print a skip line and "0 passed, 0 failed"
# and exit 0: the test scripts' common start.
lab_able_or_skip() {
    local why="" ns="twnat-able-$$"
    if [ "$(id -u)" -ne 0 ]; then why="not root"
    elif ! command -v ip >/dev/null 2>&1; then why="no ip (iproute2)"
    elif ! command -v nft >/dev/null 2>&1; then why="no nft (nftables)"
    elif ! command -v conntrack >/dev/null 2>&1; then why="no conntrack"
    elif ! command -v python3 >/dev/null 2>&1; then why="no python3"
    elif ! ip netns add "$ns" 2>/dev/null; then why="ip netns add failed"
    else ip netns del "$ns"
    fi
    [ -z "$why" ] && return 0
    echo "skipped: $why (needs root and network namespaces)"
    echo "0 passed, 0 failed"
    exit 0
}

lab_ns() { echo "${LAB_PREFIX}$1"; }
lab_exec() {
    local ns
    ns="$(lab_ns "$1")"
    shift
    ip netns exec "$ns" "$@"
}

# lab_init [PREFIX]: choose the prefix, and clean up on exit (and on INT/TERM).
lab_init() {
    LAB_PREFIX="${1:-${LAB_PREFIX:-twnat-$$-$RANDOM-}}"
    trap 'lab_cleanup' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# lab_cleanup [PREFIX]: stop the processes inside every namespace whose name starts with
# the prefix (they were started there by this lab: a namespace with a process left in it
# outlives `ip netns del`, with its veths), then delete those namespaces. Deleting a
# namespace destroys the veths and bridges in it.
lab_cleanup() {
    local prefix="${1:-$LAB_PREFIX}" ns pid
    [ -n "$prefix" ] || return 0
    for pid in ${LAB_PIDS[@]+"${LAB_PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$prefix" || true); do
        case "$ns" in "$prefix"*) ;; *) continue ;; esac
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    done
    for pid in ${LAB_PIDS[@]+"${LAB_PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
    LAB_PIDS=()
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$prefix" || true); do
        case "$ns" in "$prefix"*) ;; *) continue ;; esac
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    LAB_WAN_IP=() LAB_LAN_GW=() LAB_LAN_LEN=() LAB_LAN_NET=() LAB_PEERS=() LAB_HOST_IP=() LAB_UPLINK=()
    LAB_PEER_BOX=() LAB_PEER_PUBLIC=()
    LAB_VETH_N=0
}

# lab_spawn NAME CMD...: run CMD in the background inside NAME; its pid is kept for
# lab_cleanup (and printed in $LAB_LAST_PID).
lab_spawn() {
    local ns
    ns="$(lab_ns "$1")"
    shift
    ip netns exec "$ns" "$@" &
    LAB_LAST_PID=$!
    LAB_PIDS+=("$LAB_LAST_PID")
}

_lab_newns() {
    local ns
    ns="$(lab_ns "$1")"
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    # A bridge in a namespace would otherwise hand bridged frames to its IP hooks
    # (br_netfilter is built into this kind of kernel), where the boxes' forward
    # policy would drop LAN-to-LAN traffic.
    ip netns exec "$ns" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do [ -e "$f" ] && echo 0 >"$f"; done; true'
}

# _lab_link NS_A IF_A NS_B BRIDGE_B: a veth from IF_A in NS_A to a port of BRIDGE_B in NS_B
# (both names are lab names, without the prefix). The bridge port is named v<N>.
_lab_link() {
    local a b port
    a="$(lab_ns "$1")"
    b="$(lab_ns "$3")"
    LAB_VETH_N=$((LAB_VETH_N + 1))
    port="v$LAB_VETH_N"
    ip link add name "$2" netns "$a" type veth peer name "$port" netns "$b" || return 1
    ip -n "$b" link set "$port" master "$4" up
    ip -n "$a" link set "$2" up
}

# lab_internet: the router namespace "inet" with its two bridges, and public hosts A
# (203.0.113.10) and B (203.0.113.20).
lab_internet() {
    _lab_newns inet || return 1
    local ns
    ns="$(lab_ns inet)"
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    ip -n "$ns" link add pub type bridge
    ip -n "$ns" addr add 203.0.113.1/24 dev pub
    ip -n "$ns" link set pub up
    ip -n "$ns" link add isp type bridge
    ip -n "$ns" addr add 198.51.100.1/24 dev isp
    ip -n "$ns" link set isp up
    lab_public A 203.0.113.10 && lab_public B 203.0.113.20
}

# lab_public NAME IP: a public host on the "pub" bridge (203.0.113.0/24).
lab_public() {
    _lab_newns "$1" || return 1
    _lab_link "$1" eth0 inet pub || return 1
    lab_exec "$1" ip addr add "$2/24" dev eth0
    lab_exec "$1" ip route add default via 203.0.113.1
    LAB_HOST_IP[$1]="$2"
}

# lab_box NAME WAN_IP LAN_GW/LEN [PARENT]: a NAT box namespace. Its outside interface
# "wan" gets WAN_IP on the internet's "isp" bridge (198.51.100.0/24), or, with PARENT
# (another box), on PARENT's LAN (a home box behind a CGNAT). Its inside is the bridge
# "lan" with LAN_GW/LEN. No NAT until one of the lab_nat_* functions configures it.
lab_box() {
    local name="$1" wan="$2" lan="$3" parent="${4:-}" ns
    _lab_newns "$name" || return 1
    ns="$(lab_ns "$name")"
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    if [ -z "$parent" ]; then
        _lab_link "$name" wan inet isp || return 1
        ip -n "$ns" addr add "$wan/24" dev wan
        ip -n "$ns" route add default via 198.51.100.1
    else
        _lab_link "$name" wan "$parent" lan || return 1
        ip -n "$ns" addr add "$wan/${LAB_LAN_LEN[$parent]}" dev wan
        ip -n "$ns" route add default via "${LAB_LAN_GW[$parent]}"
    fi
    ip -n "$ns" link add lan type bridge
    ip -n "$ns" addr add "$lan" dev lan
    ip -n "$ns" link set lan up
    LAB_WAN_IP[$name]="$wan"
    LAB_UPLINK[$name]="${parent:-inet}"
    LAB_LAN_GW[$name]="${lan%/*}"
    LAB_LAN_LEN[$name]="${lan#*/}"
    LAB_LAN_NET[$name]="$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$lan")"
}

# lab_peer NAME BOX IP PORTS: a host on BOX's LAN whose ephemeral UDP/TCP ports are the
# range PORTS (e.g. 20000-29999; the net.ipv4.ip_local_port_range of its namespace).
# The box's NAT keeps a source port when it is free (Linux SNAT without a port range),
# so the peer's mapped port is its own port, and a box that must send unsolicited
# inbound traffic to an inside host (EIF, ADF, hairpin) finds the host by the range.
lab_peer() {
    local name="$1" box="$2" ip="$3" ports="$4"
    _lab_newns "$name" || return 1
    _lab_link "$name" eth0 "$box" lan || return 1
    lab_exec "$name" ip addr add "$ip/${LAB_LAN_LEN[$box]}" dev eth0
    lab_exec "$name" ip route add default via "${LAB_LAN_GW[$box]}"
    lab_exec "$name" sysctl -qw net.ipv4.ip_local_port_range="${ports/-/ }"
    LAB_HOST_IP[$name]="$ip"
    LAB_PEERS[$box]="${LAB_PEERS[$box]:-} $ip=$ports"
}

# _lab_nft BOX MODE: the box's whole ruleset, table "ip lab". Common to every mode:
#
#  - postrouting: `oif wan masquerade`: source NAT of everything leaving by the outside
#    interface to the box's outside address. Without a port range Linux keeps the
#    inside source port when that (address, port, destination) tuple is free, and picks
#    another only on a clash: in practice the same mapping for every destination, that
#    is endpoint-independent mapping (EIM). With `fully-random` (MODE edm) every new
#    conntrack entry, so every new destination, gets a random port: endpoint-dependent
#    mapping, the "symmetric NAT" (iptables' MASQUERADE --random-fully, the same flag).
#  - forward (policy drop): inside to outside is accepted, and each such UDP packet
#    refreshes two dynamic sets: @mapped (inside address . inside port: the mappings that
#    exist, the port being the mapped port) and @contacted (inside address . inside
#    port . remote address: whom each mapping has sent to; per mapping, not per host, as
#    RFC 4787 defines ADF); entries expire after 120 s without
#    outbound traffic, like conntrack's UDP stream timeout. Outside to inside only
#    `ct state established,related`: conntrack's reply direction, i.e. only from the
#    exact remote address and port the mapping was made towards. That alone is
#    address-and-port-dependent filtering (APDF), Linux's usual behaviour.
#  - input: nothing unsolicited from outside reaches the box itself (dropped silently,
#    as home routers do, rather than answered with ICMP port unreachable).
#
# What the modes add:
#
#  eim_apdf  nothing: conntrack's filtering is APDF.
#  eim_eif   full cone. An unsolicited packet from outside to the box's address has no
#            conntrack entry, so it would end at the box itself; prerouting DNATs each
#            peer's port range back to that peer (the port kept), and forward accepts
#            such a DNATed packet when (inside address . port) is in @mapped: any remote
#            may then reach a mapping that exists, endpoint-independent filtering (EIF).
#            The DNAT makes a conntrack entry whose reply direction is SNATed back to the
#            same public address and port, so the peer's answer leaves by its mapping.
#  eim_adf   the same DNAT, but forward accepts the DNATed packet only when
#            (inside address . port . remote address) is in @contacted: from any port of an
#            address the peer has sent to, address-dependent filtering (ADF).
#  edm       masquerade fully-random (above); filtering stays APDF.
#  hairpin   eim_apdf, plus hairpinning (RFC 4787 REQ-9): a packet from the LAN to the
#            box's own outside address is DNATed to the peer owning that port (forward
#            accepts it LAN to LAN when the mapping is in @mapped), and postrouting SNATs
#            it to the box's outside address (port kept), so the receiving peer sees the
#            sender's public mapping, not its LAN address, and its reply hairpins back
#            through the same conntrack entry.
_lab_nft() {
    local box="$1" mode="$2" wan="${LAB_WAN_IP[$1]}" lannet="${LAB_LAN_NET[$1]}" masq="masquerade"
    local pre="" fwd="" post="" entry ip ports
    for entry in ${LAB_PEERS[$box]:-}; do
        ip="${entry%%=*}"
        ports="${entry#*=}"
        case "$mode" in
        eim_eif | eim_adf) pre+="        iif \"wan\" udp dport $ports dnat to $ip"$'\n' ;;
        hairpin) pre+="        iif \"lan\" ip daddr $wan udp dport $ports dnat to $ip"$'\n' ;;
        esac
    done
    case "$mode" in
    eim_apdf) ;;
    eim_eif) fwd="        iif \"wan\" ct status dnat ip daddr . udp dport @mapped accept" ;;
    eim_adf) fwd="        iif \"wan\" ct status dnat ip daddr . udp dport . ip saddr @contacted accept" ;;
    edm) masq="masquerade fully-random" ;;
    hairpin)
        fwd="        iif \"lan\" oif \"lan\" ct status dnat ip daddr . udp dport @mapped accept"
        post="        ip saddr $lannet ip daddr $lannet ct status dnat snat to $wan"
        ;;
    *)
        echo "lab: unknown NAT mode $mode" >&2
        return 1
        ;;
    esac
    lab_exec "$box" nft -f - <<EOF
flush ruleset
table ip lab {
    set mapped {
        type ipv4_addr . inet_service
        flags dynamic,timeout
        timeout 120s
    }
    set contacted {
        type ipv4_addr . inet_service . ipv4_addr
        flags dynamic,timeout
        timeout 120s
    }
    chain prerouting {
        type nat hook prerouting priority dstnat; policy accept;
$pre
    }
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
$post
        oif "wan" $masq
    }
    chain forward {
        type filter hook forward priority filter; policy drop;
        ct state established,related accept
        iif "lan" oif "wan" meta l4proto udp update @mapped { ip saddr . udp sport } update @contacted { ip saddr . udp sport . ip daddr }
        iif "lan" oif "wan" accept
$fwd
    }
    chain input {
        type filter hook input priority filter; policy accept;
        iif "wan" ct state established,related accept
        iif "wan" icmp type echo-request accept
        iif "wan" drop
    }
}
EOF
}

# One function per behaviour, on a box made by lab_box whose peers are already added
# (the DNAT rules name them). Each replaces the box's whole ruleset.
lab_nat_eim_eif() { _lab_nft "$1" eim_eif; }
lab_nat_eim_adf() { _lab_nft "$1" eim_adf; }
lab_nat_eim_apdf() { _lab_nft "$1" eim_apdf; }
lab_nat_edm() { _lab_nft "$1" edm; }
lab_nat_hairpin() { _lab_nft "$1" hairpin; }
# lab_nat_double CGNAT HOME: both EIM + APDF (RFC 6888 asks a CGNAT for EIM); the home
# box's outside address is in 100.64.0.0/10, the CGNAT's on the internet.
lab_nat_double() { _lab_nft "$1" eim_apdf && _lab_nft "$2" eim_apdf; }

# lab_flush BOX: drop every mapping of BOX mid-match: conntrack -F (the NAT bindings and
# the filtering state), and the @mapped and @contacted sets the EIF, ADF and hairpin
# rules consult. The next outbound packet makes a new mapping: with edm a new random
# port; with the EIM modes the same port again (Linux keeps a free source port).
lab_flush() {
    lab_exec "$1" conntrack -F >/dev/null 2>&1 &&
        lab_exec "$1" nft flush set ip lab mapped &&
        lab_exec "$1" nft flush set ip lab contacted
}

# lab_delay BOX DELAY: netem delay on both ends of BOX's outside link (each direction), so
# `lab_delay nat 25ms` makes a 50 ms round trip between the box and its uplink. Fails
# (status 2) when the kernel has no sch_netem.
lab_delay() {
    local box="$1" delay="$2" port
    lab_exec "$box" tc qdisc replace dev wan root netem delay "$delay" 2>/dev/null || return 2
    # The uplink's end of the veth: the bridge port whose peer is this box's wan.
    port="$(lab_exec "$box" ip -o link show wan | sed -n 's/.*wan@if\([0-9]*\).*/\1/p')"
    port="$(lab_exec "${LAB_UPLINK[$box]}" ip -o link show | awk -F': ' -v i="$port" '$1 == i {print $2}' | sed 's/@.*//')"
    lab_exec "${LAB_UPLINK[$box]}" tc qdisc replace dev "$port" root netem delay "$delay"
}

# lab_topology KIND: the internet (A, B), and for KIND
#   eim_eif, eim_adf, eim_apdf, edm, hairpin: box "nat" (outside 198.51.100.2, LAN
#       192.168.1.0/24) with peers p1 (192.168.1.10, ports 20000-29999) and p2
#       (192.168.1.11, ports 30000-39999);
#   double: box "cgnat" (outside 198.51.100.3, inside 100.64.0.1/10), box "home" behind it
#       (outside 100.64.0.2, LAN 192.168.2.0/24) with peers p1 (192.168.2.10) and p2
#       (192.168.2.11), same port ranges.
lab_topology() {
    lab_internet || return 1
    case "$1" in
    double)
        lab_box cgnat 198.51.100.3 100.64.0.1/10 &&
            lab_box home 100.64.0.2 192.168.2.1/24 cgnat &&
            lab_peer p1 home 192.168.2.10 20000-29999 &&
            lab_peer p2 home 192.168.2.11 30000-39999 &&
            lab_nat_double cgnat home
        ;;
    eim_eif | eim_adf | eim_apdf | edm | hairpin)
        lab_box nat 198.51.100.2 192.168.1.1/24 &&
            lab_peer p1 nat 192.168.1.10 20000-29999 &&
            lab_peer p2 nat 192.168.1.11 30000-39999 &&
            _lab_nft nat "$1"
        ;;
    *)
        echo "lab: unknown topology $1" >&2
        return 1
        ;;
    esac
}

# lab_side N KIND PEER PORTS: side N (1 or 2) of a pair topology, peer PEER (ephemeral
# ports PORTS) behind its own NAT of KIND, each side with its own addresses:
#   open      no NAT: PEER is a public host, 203.0.113.(30+N)
#   eim_eif, eim_adf, eim_apdf, edm: box "natN" (outside 198.51.100.(10+N), LAN
#             192.168.(10+N).0/24), PEER at 192.168.(10+N).10
#   double    box "cgnatN" (outside 198.51.100.(20+N), inside 100.64.N.1/10), box "homeN"
#             behind it (outside 100.64.N.2, LAN 192.168.(10+N).0/24), both EIM + APDF,
#             PEER at 192.168.(10+N).10
# Sets LAB_PEER_BOX[PEER] (natN, homeN, or "" for open) and LAB_PEER_PUBLIC[PEER].
lab_side() {
    local n="$1" kind="$2" peer="$3" ports="$4" lan="192.168.$((10 + $1))"
    case "$kind" in
    open)
        lab_public "$peer" "203.0.113.$((30 + n))" &&
            lab_exec "$peer" sysctl -qw net.ipv4.ip_local_port_range="${ports/-/ }" || return 1
        LAB_PEER_BOX[$peer]=""
        LAB_PEER_PUBLIC[$peer]="203.0.113.$((30 + n))"
        ;;
    double)
        lab_box "cgnat$n" "198.51.100.$((20 + n))" "100.64.$n.1/10" &&
            lab_box "home$n" "100.64.$n.2" "$lan.1/24" "cgnat$n" &&
            lab_peer "$peer" "home$n" "$lan.10" "$ports" &&
            lab_nat_double "cgnat$n" "home$n" || return 1
        LAB_PEER_BOX[$peer]="home$n"
        LAB_PEER_PUBLIC[$peer]="198.51.100.$((20 + n))"
        ;;
    eim_eif | eim_adf | eim_apdf | edm)
        lab_box "nat$n" "198.51.100.$((10 + n))" "$lan.1/24" &&
            lab_peer "$peer" "nat$n" "$lan.10" "$ports" &&
            _lab_nft "nat$n" "$kind" || return 1
        LAB_PEER_BOX[$peer]="nat$n"
        LAB_PEER_PUBLIC[$peer]="198.51.100.$((10 + n))"
        ;;
    *)
        echo "lab: unknown side kind $kind" >&2
        return 1
        ;;
    esac
}

# lab_pair X Y: the PAIR topology of a P2P match: the internet (lab_internet: public hosts
# A, where a rendezvous runs, and B), peer p1 (ports 20000-29999) behind its own NAT of
# kind X and peer p2 (ports 30000-39999) behind its own NAT of kind Y (lab_side: open,
# eim_eif, eim_adf, eim_apdf, edm, double). `lab_pair hairpin hairpin` is the one-box case
# instead: both peers behind one hairpinning box (lab_topology hairpin: box "nat",
# outside 198.51.100.2, p1 192.168.1.10, p2 192.168.1.11).
lab_pair() {
    if [ "$1" = hairpin ] || [ "$2" = hairpin ]; then
        if [ "$1" != "$2" ]; then
            echo "lab: hairpin pairs only with hairpin (both peers behind one box)" >&2
            return 1
        fi
        lab_topology hairpin || return 1
        LAB_PEER_BOX[p1]=nat LAB_PEER_BOX[p2]=nat
        LAB_PEER_PUBLIC[p1]="${LAB_WAN_IP[nat]}" LAB_PEER_PUBLIC[p2]="${LAB_WAN_IP[nat]}"
        return 0
    fi
    lab_internet && lab_side 1 "$1" p1 20000-29999 && lab_side 2 "$2" p2 30000-39999
}

# lab_block IP1 IP2: the internet drops UDP between IP1 and IP2 (both directions, e.g.
# two boxes' outside addresses), from now on; traffic of either with anyone else (the
# rendezvous on A) still passes. Two tables named "labblock" in "inet": one in the
# bridge family, for traffic between two hosts of one bridge (the boxes on "isp" reach
# each other without being routed, and bridged frames skip the IP hooks here), one in
# the ip family, for routed traffic (an open host on "pub" and a box on "isp").
lab_block() {
    local rules="ip saddr $1 ip daddr $2 meta l4proto udp drop
        ip saddr $2 ip daddr $1 meta l4proto udp drop"
    lab_exec inet nft -f - <<EOF
table bridge labblock {
    chain forward {
        type filter hook forward priority filter; policy accept;
        $rules
    }
}
table ip labblock {
    chain forward {
        type filter hook forward priority filter; policy accept;
        $rules
    }
}
EOF
}
