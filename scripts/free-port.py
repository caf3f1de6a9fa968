"""free-port.py - print a TCP port on 127.0.0.1 that nothing listens on now
and that no other caller of this script was given in the last two minutes.

Binding port 0 and closing leaves a window in which a second caller -- a
test starting four services at once, or another test in parallel -- may be
given the same port, and one service then fails with "Address in use".
Each port handed out is claimed by creating /tmp/tailor-free-ports/PORT
with O_EXCL (atomic across processes); a claim older than two minutes has
been used or dropped and may be handed out again.
"""
import os
import socket
import time

CLAIMS = "/tmp/tailor-free-ports"
TTL_S = 120

os.makedirs(CLAIMS, exist_ok=True)
for _ in range(500):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    claim = os.path.join(CLAIMS, str(port))
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        try:
            if time.time() - os.path.getmtime(claim) < TTL_S:
                continue
            os.utime(claim)
        except FileNotFoundError:
            continue
    print(port)
    break
else:
    raise SystemExit("free-port: no free port found")
