#!/usr/bin/env python3
"""NOT tickwire. A stand-in used only by `tests/nat/matrix.sh --self-test`, to test the
matrix script's plumbing (namespaces, routing through the lab's NATs, process start and
stop, output parsing, the checks) before or without the real `tickwire` CLI. Python 3
standard library only. It speaks the command-line and stdout contract matrix.sh expects
of `tickwire` (token key, token mint, rendezvous, peer), over real UDP, but with its own
toy wire format: nothing here says anything about tickwire's protocol, and a pass of the
self-test says nothing about tickwire.

What it does, so that the self-test exercises the NATs for real:
  rendezvous  checks a ticket (an HMAC of the match claim with the key file's key),
              learns each player's address as seen from outside (its NAT mapping) and
              its local address, tells each player the others' (none when a player is
              --private), and relays datagrams with a 2-byte header (0xfe, slot),
              appending each relayed datagram minus that header to --record.
  peer        an ICE-like hole punch: from its one socket it sends punches to the other
              player's public and local addresses (and to any address a punch came from:
              a peer-reflexive candidate), answers each punch with an ack to its source,
              and takes the direct path once an ack comes back (both directions work).
              Until then, and whenever nothing arrived directly for 1 s, it sends through
              the relay, and keeps punching. A direct packet from a new address of the
              peer moves the direct path there (a NAT mapping that changed). Every
              datagram it sends waits --delay-ms first. The "game" is a tick counter at
              60 Hz from synchronization (the first packet from the other player) for
              --seconds; it never desyncs. Inner packets: a 16-byte header, then bytes
              encrypted with a SHA-256 keystream of the match secret, then a 16-byte tag.
"""

import argparse
import hashlib
import heapq
import hmac
import json
import os
import secrets
import selectors
import signal
import socket
import struct
import sys
import time

RELAY = 0xFE
START = time.monotonic()


def addr(text):
    host, port = text.rsplit(":", 1)
    return (host, int(port))


def fmt(a):
    return "%s:%d" % (a[0], a[1])


def emit(obj):
    print(json.dumps(obj, separators=(",", ":")), flush=True)


def now_ms():
    return int((time.monotonic() - START) * 1000)


def read_key(path):
    return bytes.fromhex(open(path).read().strip())


# ---- tickets ----

def mint(args):
    key = read_key(args.key_file)
    claim = {
        "match": args.match, "slot": args.slot, "players": args.players,
        "client": args.client_id, "addresses": args.addresses,
        "expires": int(time.time()) + args.expire_secs,
    }
    body = json.dumps(claim, separators=(",", ":")).encode()
    tag = hmac.new(key, body, hashlib.sha256).digest()[:16]
    print((body + tag).hex())
    return 0


def open_ticket(key, text):
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    body, tag = raw[:-16], raw[-16:]
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest()[:16], tag):
        return None
    claim = json.loads(body)
    if claim["expires"] < time.time() or not 0 <= claim["slot"] < claim["players"]:
        return None
    return claim


# ---- rendezvous ----

def rendezvous(args):
    key = read_key(args.key_file)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(addr(args.bind))
    print("listening %s" % fmt(sock.getsockname()), flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    matches = {}  # match -> {slot: {"addr", "local", "private"}}
    by_addr = {}  # addr -> (match, slot)
    stats = {"matches": 0, "relayed_datagrams": 0, "relayed_bytes": 0, "refused": 0, "over_budget": 0}
    record = open(args.record, "ab") if args.record else None
    while not stop:
        try:
            sock.settimeout(0.2)
            data, src = sock.recvfrom(4096)
        except socket.timeout:
            continue
        except (OSError, InterruptedError):
            continue
        if data[:1] == b"H":
            try:
                hello = json.loads(data[1:])
            except ValueError:
                stats["refused"] += 1
                continue
            claim = open_ticket(key, hello.get("ticket", ""))
            if claim is None:
                stats["refused"] += 1
                continue
            m, slot = claim["match"], claim["slot"]
            players = matches.setdefault(m, {})
            was_full = len(players) == claim["players"]
            old = players.get(slot)
            if old and old["addr"] != src:
                by_addr.pop(old["addr"], None)
            players[slot] = {"addr": src, "local": hello.get("local"), "private": hello.get("private", False)}
            by_addr[src] = (m, slot)
            full = len(players) == claim["players"]
            if full and not was_full:
                stats["matches"] += 1
            private = any(p["private"] for p in players.values())
            others = {}
            for s, p in players.items():
                if s != slot:
                    others[str(s)] = {} if private else {"pub": fmt(p["addr"]), "local": p["local"]}
            reply = {"slot": slot, "ready": full, "peers": others}
            sock.sendto(b"P" + json.dumps(reply).encode(), src)
        elif len(data) > 2 and data[0] == RELAY:
            where = by_addr.get(src)
            if where is None:
                continue
            m, slot = where
            dest = matches[m].get(data[1])
            if dest is None:
                continue
            sock.sendto(bytes([RELAY, slot]) + data[2:], dest["addr"])
            stats["relayed_datagrams"] += 1
            stats["relayed_bytes"] += len(data) - 2
            if record:
                record.write(struct.pack("<H", len(data) - 2) + data[2:])
    if record:
        record.close()
    emit(dict(event="done", **stats))
    return 0


# ---- peer ----

class Crypto:
    def __init__(self, secret, slot):
        self.key = secret
        self.slot = slot

    def _stream(self, nonce, n):
        out = b""
        i = 0
        while len(out) < n:
            out += hashlib.sha256(self.key + nonce + struct.pack("<I", i)).digest()
            i += 1
        return out[:n]

    def seal(self, kind, tick, body):
        header = b"FK" + kind + bytes([self.slot]) + struct.pack("<I", tick) + os.urandom(8)
        ct = bytes(a ^ b for a, b in zip(body, self._stream(header[8:], len(body))))
        tag = hmac.new(self.key, header + ct, hashlib.sha256).digest()[:16]
        return header + ct + tag

    def open(self, data):
        if len(data) < 32 or data[:2] != b"FK":
            return None
        header, ct, tag = data[:16], data[16:-16], data[-16:]
        if not hmac.compare_digest(hmac.new(self.key, header + ct, hashlib.sha256).digest()[:16], tag):
            return None
        if header[3] == self.slot:
            return None
        tick = struct.unpack("<I", header[4:8])[0]
        body = bytes(a ^ b for a, b in zip(ct, self._stream(header[8:], len(ct))))
        return header[2:3], header[3], tick, body


def local_ip(towards):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(towards)
    ip = s.getsockname()[0]
    s.close()
    return ip


def peer(args):
    rdv = addr(args.rendezvous)
    rdv_text = fmt(rdv)
    secret = bytes.fromhex(args.secret)
    crypto = Crypto(secret, args.slot)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    sock.setblocking(False)
    local = "%s:%d" % (local_ip(rdv), sock.getsockname()[1])
    delay = args.delay_ms / 1000.0
    sendq = []  # (due, seq, data, addr)
    seq = [0]

    def send(data, to):
        seq[0] += 1
        heapq.heappush(sendq, (time.monotonic() + delay, seq[0], data, to))

    other = None  # the other player's slot (a two-player stand-in)
    cands = set()
    direct = None
    last_direct = 0.0
    path = None
    synced_at = None
    frames = 0
    desyncs = 0
    next_hello = 0.0
    next_punch = 0.0
    next_tick = 0.0
    ready = False

    def set_path(new):
        nonlocal path
        if new != path:
            path = new
            emit({"event": "path", "player": other, "path": new[0], "addr": new[1], "at_ms": now_ms()})

    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    deadline_sync = time.monotonic() + 10.0
    end = None
    while True:
        t = time.monotonic()
        if synced_at is None and t > deadline_sync:
            break
        if end is not None and t >= end:
            break
        # Timers.
        if t >= next_hello:
            hello = {"ticket": args.ticket, "local": local, "private": args.private}
            send(b"H" + json.dumps(hello).encode(), rdv)
            next_hello = t + (1.0 if ready else 0.25)
        if direct is not None and t - last_direct > 1.0:
            direct = None
            set_path(("relayed", rdv_text))
        if ready and not args.private and direct is None and t >= next_punch:
            for c in cands:
                send(crypto.seal(b"P", 0, b"punch"), c)
            next_punch = t + (0.2 if synced_at is None or t - synced_at < 3 else 0.5)
        if ready and t >= next_tick:
            body = struct.pack("<IQ", frames, frames * 2654435761 % (1 << 64))
            packet = crypto.seal(b"G", frames, body)
            if direct is not None:
                send(packet, direct)
            else:
                send(bytes([RELAY, other]) + packet, rdv)
            if synced_at is not None:
                frames += 1
            # A fixed 60 Hz cadence (a late tick does not push the later ones back).
            next_tick = max(next_tick + 1 / 60.0, t - 0.1)
        while sendq and sendq[0][0] <= t:
            _, _, data, to = heapq.heappop(sendq)
            try:
                sock.sendto(data, to)
            except OSError:
                pass
        wake = [next_hello, next_tick if ready else t + 0.05]
        if sendq:
            wake.append(sendq[0][0])
        if ready and not args.private and direct is None:
            wake.append(next_punch)
        timeout = max(0.0, min(wake) - time.monotonic())
        if not sel.select(min(timeout, 0.05)):
            continue
        while True:
            try:
                data, src = sock.recvfrom(4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                continue
            t = time.monotonic()
            if src == rdv and data[:1] == b"P":
                info = json.loads(data[1:])
                if info["ready"] and not ready:
                    ready = True
                    other = int(next(iter(info["peers"])))
                    set_path(("relayed", rdv_text))
                if ready:
                    for p in info["peers"].values():
                        for key in ("pub", "local"):
                            if p.get(key):
                                cands.add(addr(p[key]))
                continue
            relayed = src == rdv and data[:1] == bytes([RELAY])
            packet = crypto.open(data[2:] if relayed else data)
            if packet is None:
                continue
            kind = packet[0]
            if synced_at is None and ready:
                synced_at = t
                end = t + args.seconds
                next_tick = t
                emit({"event": "synchronized", "at_ms": now_ms()})
            if relayed:
                continue
            if kind == b"P":
                if not args.private:
                    cands.add(src)
                    send(crypto.seal(b"A", 0, b"ack"), src)
            elif kind == b"A":
                if not args.private:
                    direct, last_direct = src, t
                    set_path(("direct", fmt(src)))
            elif kind == b"G" and direct is not None:
                if src != direct:
                    direct = src  # the peer's mapping moved
                    set_path(("direct", fmt(src)))
                last_direct = t
    done = {"event": "done", "frames": frames, "desyncs": desyncs,
            "sync_ms": int((synced_at - START) * 1000) if synced_at else None,
            "paths": {str(other): path[0]} if path and other is not None else {}}
    emit(done)
    return 0 if synced_at is not None and desyncs == 0 else 1


def main():
    p = argparse.ArgumentParser(prog="fake_tickwire", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    tok = sub.add_parser("token")
    tsub = tok.add_subparsers(dest="action", required=True)
    tsub.add_parser("key")
    m = tsub.add_parser("mint")
    m.add_argument("--key-file", required=True)
    m.add_argument("--addresses", required=True)
    m.add_argument("--match", type=int, required=True)
    m.add_argument("--slot", type=int, required=True)
    m.add_argument("--players", type=int, required=True)
    m.add_argument("--client-id", type=int, default=1)
    m.add_argument("--expire-secs", type=int, default=3600)
    r = sub.add_parser("rendezvous")
    r.add_argument("--bind", required=True)
    r.add_argument("--key-file", required=True)
    r.add_argument("--relay-kbps", type=int)
    r.add_argument("--match-secs", type=int)
    r.add_argument("--record")
    q = sub.add_parser("peer")
    q.add_argument("--rendezvous", required=True)
    q.add_argument("--ticket", required=True)
    q.add_argument("--secret", required=True)
    q.add_argument("--slot", type=int, required=True)
    q.add_argument("--players", type=int, required=True)
    q.add_argument("--seconds", type=float, required=True)
    q.add_argument("--private", action="store_true")
    q.add_argument("--delay-ms", type=float, default=0.0)
    args = p.parse_args()
    if args.cmd == "token":
        if args.action == "key":
            print(secrets.token_hex(32))
            return 0
        return mint(args)
    if args.cmd == "rendezvous":
        return rendezvous(args)
    if args.players != 2:
        print("fake_tickwire: two players only", file=sys.stderr)
        return 2
    return peer(args)


if __name__ == "__main__":
    sys.exit(main())
