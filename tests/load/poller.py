# SPDX-License-Identifier: ISC
"""Polls spindled's dashboard over HTTPS as phones do, from a process of its own (so the
load generator in the test's process cannot skew its clock), and prints one JSON line:
requests, errors, statuses, p50/p99/max latency in ms.

  python3 poller.py PORT TOKEN --connections N --interval S --seconds D [--etag] [--path P]
"""
import argparse
import http.client
import json
import ssl
import threading
import time



def poll(args, ctx, out, lock):
    times, statuses, errors = [], {}, []
    etag, conn = None, None
    end = time.monotonic() + args.seconds
    next_at = time.monotonic()
    while next_at < end:
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at += args.interval
        headers = {"X-Auth-Session": args.token}
        if args.etag and etag:
            headers["If-None-Match"] = etag
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", args.port, timeout=10,
                                                   context=ctx)
            conn.request("GET", args.path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            times.append(time.monotonic() - t0)
            statuses[resp.status] = statuses.get(resp.status, 0) + 1
            if resp.status not in (200, 304):
                errors.append(f"status {resp.status}")
            etag = resp.headers.get("ETag") or etag
        except (OSError, http.client.HTTPException) as e:
            errors.append(repr(e))
            conn = None
    if conn:
        conn.close()
    with lock:
        out["times"] += times
        out["errors"] += errors
        for k, v in statuses.items():
            out["statuses"][k] = out["statuses"].get(k, 0) + v


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("token")
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--etag", action="store_true")
    p.add_argument("--path", default="/api/status/v1/dashboard")
    args = p.parse_args()
    ctx = ssl._create_unverified_context()
    out, lock = {"times": [], "errors": [], "statuses": {}}, threading.Lock()
    threads = [threading.Thread(target=poll, args=(args, ctx, out, lock))
               for _ in range(args.connections)]
    for i, t in enumerate(threads):
        t.start()
        time.sleep(args.interval / len(threads))  # spread them over the interval
    for t in threads:
        t.join()
    times = sorted(out["times"])

    def pct(q):
        return round(1000 * times[min(len(times) - 1, int(q * len(times)))], 2) if times else None
    print(json.dumps({"requests": len(times), "errors": len(out["errors"]),
                      "first_errors": out["errors"][:5], "statuses": out["statuses"],
                      "p50_ms": pct(0.50), "p99_ms": pct(0.99),
                      "max_ms": round(1000 * times[-1], 2) if times else None}))


if __name__ == "__main__":
    main()
