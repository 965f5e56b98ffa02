#!/usr/bin/env python3
"""The NAT lab's probe (Python 3 standard library only), run in the lab's namespaces with
`ip netns exec` (tests/nat/lab.sh, tests/nat/run.sh). Text datagrams over UDP.

  reflect --bind IP:PORT [--bind IP:PORT ...] [--partner IP:PORT] [--ready FILE]
      On a public host. On every bound socket:
        "ECHO n"   -> "SEEN ip port n" from the same socket (the source it saw: the
                      sender's mapped address)
        "PROBE n"  -> "SEEN ip port n" from the same socket, then "ALT n" from its second
                      bound socket (the same address, another port), then "RELAY ip port n"
                      to the partner (another public host), which sends "OTHER n" to
                      ip:port from its own socket: a host the prober never contacted
        "RELAY ip port n" -> "OTHER n" to ip:port
      Writes FILE once bound, then serves until killed.

  client --a IP:PORT --a2 IP:PORT --b IP:PORT [--wait S] [--rtt-only]
      Behind a NAT. Mapping: one socket sends ECHO to A, A's second port (A2) and B; the
      mapping is endpoint-independent (EIM) if the three mapped addresses are equal,
      address-dependent (ADM) if A and A2 agree but B differs, address-and-port-dependent
      (APDM) if A and A2 differ. Filtering: a fresh socket sends PROBE to A only, then
      listens for S seconds: "OTHER" from B getting in means endpoint-independent
      filtering (EIF); otherwise "ALT" from A2 getting in means address-dependent (ADF);
      neither means address-and-port-dependent (APDF). A's own reply ("SEEN") must arrive
      (the control). Then a port that never sent: B is asked (from another socket) to
      send to it at the mapped address; "unmapped" says whether that got in (it must not,
      even through a full cone). Prints one line of key=value.

  rebind --a IP:PORT --step FILE --go FILE
      ECHO to A, write the mapped address to --step, wait for --go to exist, ECHO again
      from the same socket: prints first=, second= and changed=yes|no (lab_flush between).

  hairpin-listen --a IP:PORT --out FILE [--timeout S]
      ECHO to A to make (and learn) a mapping, write "ip port" to FILE, wait for one
      "HP n" and answer "HPACK ip port n" (the source it saw). Prints seen_from=.
  hairpin-send --a IP:PORT --peer-file FILE [--timeout S]
      ECHO to A (own mapping), read the listener's mapped address from FILE, send "HP n"
      to it, wait for HPACK. Prints hairpin=yes|no, own_mapped=, peer_mapped=,
      reply_from=, peer_saw=.
"""

import argparse
import os
import random
import selectors
import socket
import sys
import time


def addr(text):
    host, port = text.rsplit(":", 1)
    return (host, int(port))


def fmt(a):
    return "%s:%d" % (a[0], a[1])


def udp(bind=("0.0.0.0", 0)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(bind)
    return s


def recv_until(sock, deadline, want=None):
    """Datagrams until the deadline: a list of (text, source); stops early once want(text)."""
    got = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return got
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(2048)
        except socket.timeout:
            return got
        except OSError:  # e.g. an ICMP error reported on the socket
            continue
        text = data.decode("ascii", "replace")
        got.append((text, src))
        if want is not None and want(text):
            return got


def echo(sock, server, tries=5, timeout=0.3):
    """The mapped address the server saw for sock, and the round trip in ms."""
    for _ in range(tries):
        n = str(random.getrandbits(48))
        start = time.monotonic()
        sock.sendto(("ECHO " + n).encode(), server)
        for text, src in recv_until(sock, start + timeout, lambda t, n=n: t.endswith(" " + n)):
            parts = text.split()
            if parts[0] == "SEEN" and parts[3] == n and src == server:
                return (parts[1], int(parts[2])), (time.monotonic() - start) * 1000.0
    return None, None


def reflect(args):
    socks = [udp(addr(b)) for b in args.bind]
    partner = addr(args.partner) if args.partner else None
    if args.ready:
        with open(args.ready, "w") as f:
            f.write("ready\n")
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            try:
                data, src = s.recvfrom(2048)
            except OSError:
                continue
            parts = data.decode("ascii", "replace").split()
            if len(parts) == 2 and parts[0] in ("ECHO", "PROBE"):
                n = parts[1]
                s.sendto(("SEEN %s %d %s" % (src[0], src[1], n)).encode(), src)
                if parts[0] == "PROBE":
                    others = [o for o in socks if o is not s]
                    if others:
                        others[0].sendto(("ALT " + n).encode(), src)
                    if partner:
                        s.sendto(("RELAY %s %d %s" % (src[0], src[1], n)).encode(), partner)
            elif len(parts) == 4 and parts[0] == "RELAY":
                s.sendto(("OTHER " + parts[3]).encode(), (parts[1], int(parts[2])))


def client(args):
    a, a2, b = addr(args.a), addr(args.a2), addr(args.b)
    out = {}
    m = udp()
    out["local"] = fmt(m.getsockname())
    mapped = {}
    for name, server in (("A", a), ("A2", a2), ("B", b)):
        mapped[name], rtt = echo(m, server)
        if name == "A":
            out["rtt_ms"] = "%.1f" % rtt if rtt is not None else "none"
        out["mapped_" + name] = fmt(mapped[name]) if mapped[name] else "none"
    if None in mapped.values():
        out["mapping"] = "unreachable"
    elif mapped["A"] == mapped["A2"] == mapped["B"]:
        out["mapping"] = "EIM"
    elif mapped["A"] == mapped["A2"]:
        out["mapping"] = "ADM"
    else:
        out["mapping"] = "APDM"
    out["mapped_ip"] = mapped["A"][0] if mapped["A"] else "none"
    if not args.rtt_only:
        f = udp()
        n = str(random.getrandbits(48))
        f.sendto(("PROBE " + n).encode(), a)
        got = recv_until(f, time.monotonic() + args.wait)
        seen = any(t.startswith("SEEN ") and t.endswith(" " + n) and s == a for t, s in got)
        alt = any(t == "ALT " + n and s == a2 for t, s in got)
        other = any(t == "OTHER " + n and s == b for t, s in got)
        out["from_A"] = "in" if seen else "dropped"
        out["from_A2"] = "in" if alt else "dropped"
        out["from_B"] = "in" if other else "dropped"
        if not seen:
            out["filtering"] = "unreachable"
        elif other and alt:
            out["filtering"] = "EIF"
        elif alt and not other:
            out["filtering"] = "ADF"
        elif not alt and not other:
            out["filtering"] = "APDF"
        else:
            out["filtering"] = "inconsistent"
        # A port with no mapping: socket u never sends; socket v asks B (through a RELAY
        # of its own) to send to u's port at the mapped address. Even a full cone drops
        # it: only an existing mapping is open (EIF filters by mapping, not by port).
        if mapped["A"]:
            u, v = udp(), udp()
            n = str(random.getrandbits(48))
            v.sendto(("RELAY %s %d %s" % (mapped["A"][0], u.getsockname()[1], n)).encode(), b)
            got = recv_until(u, time.monotonic() + args.wait)
            out["unmapped"] = "in" if any(t == "OTHER " + n for t, _ in got) else "dropped"
    print(" ".join("%s=%s" % kv for kv in out.items()))
    return 0


def wait_file(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def rebind(args):
    s = udp()
    first, _ = echo(s, addr(args.a))
    write_atomic(args.step, fmt(first) if first else "none")
    if not wait_file(args.go, 10):
        print("rebind=timeout")
        return 1
    second, _ = echo(s, addr(args.a))
    changed = "yes" if first and second and first != second else "no"
    print("first=%s second=%s changed=%s" % (fmt(first) if first else "none", fmt(second) if second else "none", changed))
    return 0


def hairpin_listen(args):
    s = udp()
    mine, _ = echo(s, addr(args.a))
    if mine is None:
        print("seen_from=none (no mapping)")
        return 1
    write_atomic(args.out, "%s %d\n" % mine)
    deadline = time.monotonic() + args.timeout
    for text, src in recv_until(s, deadline, lambda t: t.startswith("HP ")):
        if text.startswith("HP "):
            n = text.split()[1]
            s.sendto(("HPACK %s %d %s" % (src[0], src[1], n)).encode(), src)
            # Answer repeats too (the sender retries), for a little while.
            for t2, src2 in recv_until(s, time.monotonic() + 0.3):
                if t2.startswith("HP "):
                    s.sendto(("HPACK %s %d %s" % (src2[0], src2[1], t2.split()[1])).encode(), src2)
            print("seen_from=%s" % fmt(src))
            return 0
    print("seen_from=none")
    return 0


def hairpin_send(args):
    s = udp()
    mine, _ = echo(s, addr(args.a))
    out = {"own_mapped": fmt(mine) if mine else "none"}
    if not wait_file(args.peer_file, 5):
        out["hairpin"] = "no-peer"
        print(" ".join("%s=%s" % kv for kv in out.items()))
        return 1
    with open(args.peer_file) as f:
        ip, port = f.read().split()
    peer = (ip, int(port))
    out["peer_mapped"] = fmt(peer)
    out["hairpin"] = "no"
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and out["hairpin"] == "no":
        n = str(random.getrandbits(48))
        s.sendto(("HP " + n).encode(), peer)
        for text, src in recv_until(s, min(deadline, time.monotonic() + 0.3), lambda t, n=n: t.endswith(" " + n)):
            parts = text.split()
            if parts[0] == "HPACK" and parts[3] == n:
                out["hairpin"] = "yes"
                out["reply_from"] = fmt(src)
                out["peer_saw"] = "%s:%s" % (parts[1], parts[2])
    print(" ".join("%s=%s" % kv for kv in out.items()))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("reflect")
    r.add_argument("--bind", action="append", required=True)
    r.add_argument("--partner")
    r.add_argument("--ready")
    c = sub.add_parser("client")
    c.add_argument("--a", required=True)
    c.add_argument("--a2", required=True)
    c.add_argument("--b", required=True)
    c.add_argument("--wait", type=float, default=0.5)
    c.add_argument("--rtt-only", action="store_true")
    rb = sub.add_parser("rebind")
    rb.add_argument("--a", required=True)
    rb.add_argument("--step", required=True)
    rb.add_argument("--go", required=True)
    hl = sub.add_parser("hairpin-listen")
    hl.add_argument("--a", required=True)
    hl.add_argument("--out", required=True)
    hl.add_argument("--timeout", type=float, default=3.0)
    hs = sub.add_parser("hairpin-send")
    hs.add_argument("--a", required=True)
    hs.add_argument("--peer-file", required=True)
    hs.add_argument("--timeout", type=float, default=1.5)
    args = p.parse_args()
    return {"reflect": reflect, "client": client, "rebind": rebind,
            "hairpin-listen": hairpin_listen, "hairpin-send": hairpin_send}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
