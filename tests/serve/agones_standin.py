#!/usr/bin/env python3
"""A stand-in for the Agones SDK sidecar's HTTP API (no Agones cluster can run here).

It answers the REST calls a game server makes, as the SDK's published description
(sdks/swagger/sdk.swagger.json; ../shared/reference/fleet.md) defines them, and checks
each request's method, path and JSON body against it: a call that is not in the API,
or whose body is not what the API says, is answered 400 and recorded as an error.

Every call is appended to --log as one JSON line {"method", "path", "body", "ok"}.
GET /watch/gameserver streams the GameServer: Ready at once, Allocated --allocate-after
seconds later. Prints "port N" once listening.
"""
import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

INT64 = re.compile(r"^-?[0-9]+$")
# Label keys: the Kubernetes label name rules for the part after agones.dev/sdk-.
LABEL_KEY = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def empty(body):
    return body == {}


def capacity(body):
    return set(body) == {"count"} and isinstance(body["count"], str) and INT64.match(body["count"]) is not None


def label(body):
    return (
        set(body) == {"key", "value"}
        and isinstance(body["key"], str)
        and isinstance(body["value"], str)
        and LABEL_KEY.match(body["key"]) is not None
        and LABEL_VALUE.match(body["value"]) is not None
    )


def reserve(body):
    return set(body) == {"seconds"} and isinstance(body["seconds"], str) and INT64.match(body["seconds"]) is not None


def player_id(body):
    return set(body) == {"playerID"} and isinstance(body["playerID"], str) and body["playerID"] != ""


# (method, path) -> the body's check.
API = {
    ("POST", "/ready"): empty,
    ("POST", "/health"): empty,
    ("POST", "/allocate"): empty,
    ("POST", "/shutdown"): empty,
    ("POST", "/reserve"): reserve,
    ("PUT", "/metadata/label"): label,
    ("PUT", "/metadata/annotation"): label,
    ("PUT", "/alpha/player/capacity"): capacity,
    ("POST", "/alpha/player/connect"): player_id,
    ("POST", "/alpha/player/disconnect"): player_id,
}


def game_server(state):
    return {
        "object_meta": {"name": "tickwire-standin", "namespace": "default", "uid": "0", "labels": {}},
        "status": {"state": state, "address": "127.0.0.1", "ports": [{"name": "default", "port": 7777}]},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, body, ok):
        with self.server.lock:
            with open(self.server.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "body": body, "ok": ok}) + "\n")

    def answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def call(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        check = API.get((self.command, self.path))
        ok = check is not None and isinstance(body, dict) and check(body)
        self.record(body, ok)
        if ok:
            self.answer(200, {} if self.path != "/alpha/player/connect" else {"bool": True})
        else:
            self.answer(400, {"error": "not the Agones SDK API", "method": self.command, "path": self.path})

    do_POST = call
    do_PUT = call

    def do_GET(self):
        if self.path == "/gameserver":
            self.record(None, True)
            return self.answer(200, game_server("Ready"))
        if self.path != "/watch/gameserver":
            self.record(None, False)
            return self.answer(404, {"error": "not the Agones SDK API"})
        self.record(None, True)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write((json.dumps({"result": game_server("Ready")}) + "\n").encode())
            self.wfile.flush()
            time.sleep(self.server.allocate_after)
            self.wfile.write((json.dumps({"result": game_server("Allocated")}) + "\n").encode())
            self.wfile.flush()
            time.sleep(3600)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--allocate-after", type=float, default=1.0)
    a = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.log = a.log
    srv.lock = threading.Lock()
    srv.allocate_after = a.allocate_after
    print(f"port {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
