# SPDX-License-Identifier: ISC
"""A hostile client, from a process of its own, bounded in time, loopback only. Prints one
JSON line: requests and statuses.

  python3 flooder.py PORT basic --threads N --seconds D
      GET /api/system/v1/version with Basic and a wrong password for admin, each guess
      from a fresh random 127/8 address, N at a time, as fast as they are answered
  python3 flooder.py PORT hello --threads N --seconds D [--group G]
      replays one captured TLS 1.3 ClientHello offering group G alone (ffdhe8192) as fast
      as the server answers it: the server would do the key exchange's work, the client
      none
"""
import argparse
import base64
import json
import random
import socket
import ssl
import threading
import time


def basic(args, out, lock):
    ctx = ssl._create_unverified_context()
    end = time.monotonic() + args.seconds
    statuses = {}
    while time.monotonic() < end:
        # a fresh address for each guess, as a guesser holding many addresses sends them:
        # no address fails often enough to be locked
        src = f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"
        auth = base64.b64encode(f"admin:wrong-{random.random()}".encode()).decode()
        req = (f"GET /api/system/v1/version HTTP/1.1\r\nHost: x\r\n"
               f"Authorization: Basic {auth}\r\nConnection: close\r\n\r\n").encode()
        try:
            raw = socket.create_connection(("127.0.0.1", args.port), timeout=60,
                                           source_address=(src, 0))
            with ctx.wrap_socket(raw) as conn:
                conn.sendall(req)
                head = conn.recv(64)
            code = head.split()[1].decode() if head.startswith(b"HTTP/") else "?"
        except (OSError, IndexError):
            code = "error"
        statuses[code] = statuses.get(code, 0) + 1
    with lock:
        for k, v in statuses.items():
            out[k] = out.get(k, 0) + v


def client_hello(group):
    """The first flight of a TLS 1.3 handshake whose key share is this group alone, as
    openssl s_client sends it, caught by a listener of our own (it never reaches
    spindled): the bytes to replay."""
    import subprocess
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    client = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                               "-tls1_3", "-groups", group], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn, _ = lsock.accept()
    conn.settimeout(10)
    data = b""
    while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    conn.close()
    lsock.close()
    client.kill()
    client.wait()
    return data


def hello(args, out, lock, data):
    end = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", args.port), timeout=10) as s:
                s.sendall(data)
                s.recv(1)  # the server's flight: it has done the key exchange and signed
            n += 1
        except OSError:
            pass
    with lock:
        out["hellos"] = out.get("hellos", 0) + n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("mode", choices=["basic", "hello"])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--group", default="ffdhe8192", help="hello: the key share offered")
    args = p.parse_args()
    out, lock = {}, threading.Lock()
    if args.mode == "basic":
        threads = [threading.Thread(target=basic, args=(args, out, lock))
                   for _ in range(args.threads)]
    else:
        data = client_hello(args.group)
        threads = [threading.Thread(target=hello, args=(args, out, lock, data))
                   for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
