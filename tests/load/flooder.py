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
  python3 flooder.py PORT get --threads N --seconds D --path P --token T [--token T2 ...]
                    [--gzip]
      heavy reads: GET P on a kept-alive connection of each thread (thread i sends token
      i modulo their number: as many sessions as tokens), as fast as they are answered
  python3 flooder.py PORT device --threads N --seconds D --device-id ID --key PEM
      device logins ("keep me signed in"): a challenge asked for and signed with the
      device's key, then the login, as fast as they are answered
"""
import argparse
import base64
import http.client
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


def keep_alive(args, out, lock, exchange):
    """exchange(conn) -> (status, response) on one kept-alive HTTPS connection, as fast as
    answered until the time is up; a new connection after an error; after a 429 the wait
    its Retry-After asks for (up to 1 s), as a well-behaved script's; the statuses
    tallied into out."""
    ctx = ssl._create_unverified_context()
    end = time.monotonic() + args.seconds
    statuses, conn = {}, None
    while time.monotonic() < end:
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", args.port, timeout=60,
                                                   context=ctx)
            code, resp = exchange(conn)
            if resp.status == 429:
                time.sleep(min(1.0, float(resp.headers.get("Retry-After") or 1)))
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            code, conn = "error", None
        statuses[code] = statuses.get(code, 0) + 1
    with lock:
        for k, v in statuses.items():
            out[k] = out.get(k, 0) + v


def get(args, out, lock, index):
    headers = {"X-Auth-Session": args.token[index % len(args.token)]}
    if args.gzip:
        headers["Accept-Encoding"] = "gzip"

    def exchange(conn):
        conn.request("GET", args.path, headers=headers)
        resp = conn.getresponse()
        resp.read()
        return str(resp.status), resp
    keep_alive(args, out, lock, exchange)


def device(args, out, lock, key):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    def exchange(conn):
        conn.request("POST", "/api/access/v1/challenge", body=b"")
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            return f"challenge {resp.status}", resp
        value = json.loads(body)["challenge"]["value"]
        msg = f"spindle-device-login\n{args.device_id}\n{value}".encode()
        r, s = decode_dss_signature(key.sign(msg, ec.ECDSA(hashes.SHA256())))
        sig = base64.urlsafe_b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        conn.request("POST", "/api/access/v1", body=json.dumps({
            "device_id": args.device_id, "challenge": value,
            "signature": sig.rstrip(b"=").decode()}),
            headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return str(resp.status), resp
    keep_alive(args, out, lock, exchange)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("mode", choices=["basic", "hello", "get", "device"])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--group", default="ffdhe8192", help="hello: the key share offered")
    p.add_argument("--path", help="get: what to read")
    p.add_argument("--token", action="append", help="get: a session's token (repeatable)")
    p.add_argument("--gzip", action="store_true", help="get: take answers gzipped")
    p.add_argument("--device-id", help="device: the registered device")
    p.add_argument("--key", help="device: its private key, a PEM file")
    args = p.parse_args()
    out, lock = {}, threading.Lock()
    if args.mode == "basic":
        threads = [threading.Thread(target=basic, args=(args, out, lock))
                   for _ in range(args.threads)]
    elif args.mode == "get":
        if not args.path or not args.token:
            p.error("get needs --path and --token")
        threads = [threading.Thread(target=get, args=(args, out, lock, i))
                   for i in range(args.threads)]
    elif args.mode == "device":
        if not args.device_id or not args.key:
            p.error("device needs --device-id and --key")
        from cryptography.hazmat.primitives import serialization
        with open(args.key, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        threads = [threading.Thread(target=device, args=(args, out, lock, key))
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
