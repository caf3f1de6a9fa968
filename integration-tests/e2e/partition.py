#!/usr/bin/python3
"""partition.py - a TCP pass-through that can be told to partition, for the
e2e fencing test.

    partition.py LISTEN_PORT UPSTREAM_PORT CONTROL_PORT

Bytes go through unchanged (TLS included: it never looks inside) between
127.0.0.1:LISTEN_PORT and 127.0.0.1:UPSTREAM_PORT, until

    POST http://127.0.0.1:CONTROL_PORT/hang

after which nothing more is passed in either direction on any connection,
and new connections are accepted and never answered: to the client, the
API server has gone silent in the middle of whatever it was doing, which
is what a network partition looks like.  Connections are not closed (a
closed connection would fail fast; a partition does not).

    GET http://127.0.0.1:CONTROL_PORT/stats  {"conns": N, "hung_at": UNIX_S|null}
Loopback only; one thread per direction per connection.
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

hung = threading.Event()
state = {"conns": 0, "hung_at": None}
lock = threading.Lock()
held = []   # sockets kept open, unanswered, once hung


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data or hung.is_set():
                break
            dst.sendall(data)
    except OSError:
        return
    if hung.is_set():
        return   # silent: leave both ends open
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listen_port, upstream_port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(64)
    while True:
        c, _ = ls.accept()
        with lock:
            state["conns"] += 1
        if hung.is_set():
            held.append(c)
            continue
        try:
            u = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            c.close()
            continue
        held.extend((c, u))
        threading.Thread(target=pump, args=(c, u), daemon=True).start()
        threading.Thread(target=pump, args=(u, c), daemon=True).start()


class Control(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            self.reply(state)

    def do_POST(self):
        if self.path.startswith("/hang"):
            with lock:
                if state["hung_at"] is None:
                    state["hung_at"] = time.time()
                hung.set()
        with lock:
            self.reply(state)


def main():
    listen_port, upstream_port, control_port = (int(a) for a in sys.argv[1:4])
    threading.Thread(target=serve, args=(listen_port, upstream_port), daemon=True).start()
    ThreadingHTTPServer(("127.0.0.1", control_port), Control).serve_forever()


if __name__ == "__main__":
    main()
