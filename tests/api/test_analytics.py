# SPDX-License-Identifier: ISC
"""Analytics: the collector on a synthetic /proc (exact values for every dataset, counter
wraps, a disk appearing, the ZFS ARC coming and going), the datasets API, every parameter
form of .../data, streaming past now, retention settings, and what survives a SIGTERM and
a SIGKILL. One spindled with --proc-root serves the module; real 1 s ticks drive it."""
import contextlib
import json
import re
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import (SHARED_SERVER_HW, SLOW, EventStream, FakeProc, Server, expect,
                      expect_fault, iso, parse_time)

AN = "/api/analytics/v1"
DEFAULTS = ["cpu.utilization[mode]", "io.ops[op]", "io.ops[disk]", "io.bytes[op]",
            "io.bytes[disk]", "io.latency[op]", "io.busy[disk]", "io.disks[utilization]", "io.queue[disk]",
            "nic.kilobytes[direction]", "nic.kilobytes[device]", "mem.bytes[component]",
            "psi.some[resource]",
            # undrilled, as a fresh appliance has them
            "cpu.utilization", "io.ops", "io.bytes", "nic.kilobytes"]
# NFSv4's operations by number from 3 (RFC 8881, 7862, 8276), as nfs4.ops[op] names them
NFS4_OPS = ("access close commit create delegpurge delegreturn getattr getfh link lock lockt "
            "locku lookup lookupp nverify open openattr open_confirm open_downgrade putfh "
            "putpubfh putrootfh read readdir readlink remove rename renew restorefh savefh "
            "secinfo setattr setclientid setclientid_confirm verify write release_lockowner "
            "backchannel_ctl bind_conn_to_session exchange_id create_session destroy_session "
            "free_stateid get_dir_delegation getdeviceinfo getdevicelist layoutcommit layoutget "
            "layoutreturn secinfo_no_name sequence set_ssv test_stateid want_delegation "
            "destroy_clientid reclaim_complete allocate copy copy_notify deallocate io_advise "
            "layouterror layoutstats offload_cancel offload_status read_plus seek write_same "
            "clone getxattr setxattr listxattrs removexattr").split()
# made when the ARC is first seen, as a fresh appliance with one has them
ARC = ["arc.accesses[hit/miss]", "arc.size[component]", "arc.size", "arc.l2_accesses[hit/miss]",
       "arc.l2_size"]
# made when the box's NFS server is first seen, as a fresh appliance serving NFS has them
NFS = ["nfs3.ops", "nfs3.ops[op]", "nfs4.ops", "nfs4.ops[op]"]
# the others of the ARC, made by the test before the snapshots
ARC_MORE = [("arc.hitratio", None), ("arc.target", "bound"), ("arc.l2_bytes", "op")]
# made when the box's first iSCSI and FC targets (LIO) are seen
LIO = ["iscsi.ops", "iscsi.ops[initiator]", "iscsi.bytes[op]", "fc.ops", "fc.ops[initiator]",
       "fc.bytes[op]"]
IQN = "iqn.2003-01.org.linux-iscsi.box:tank"
HOST1, HOST2 = "iqn.1993-08.org.debian:01:host1", "iqn.1993-08.org.debian:01:host2"
WWN, FC_HOST = "21:00:00:24:ff:31:4c:80", "21:00:00:24:ff:31:4c:81"
# Per second: each LIO LUN's commands, MiB read and written, as its port counts them; each
# initiator's, as its ACL counts them
LIO_PORTS = {("iscsi", IQN, "lun_0"): (300, 2, 1), ("iscsi", IQN, "lun_1"): (100, 1, 0),
             ("qla2xxx", WWN, "lun_0"): (50, 1, 0)}
LIO_ACLS = {("iscsi", IQN, HOST1, "lun_0"): (200, 1, 1), ("iscsi", IQN, HOST1, "lun_1"): (100, 1, 0),
            ("iscsi", IQN, HOST2, "lun_0"): (100, 1, 0), ("qla2xxx", WWN, FC_HOST, "lun_0"): (50, 1, 0)}
# the network's protocols and the pools' logical I/O, made by the test too
NET_POOLS = [("ip.bytes", "direction"), ("ip.packets", "direction"), ("tcp.packets", "direction"),
             ("tcp.retransmits", None), ("zpool.ops", "op"), ("zpool.ops", "pool"),
             ("zpool.bytes", "op"), ("zpool.bytes", "pool")]
# and by CPU, made by the test too
MORE = ARC_MORE + NET_POOLS + [("cpu.utilization", "cpu"), ("cpu.utilization", "utilization"),
                               ("io.bytes[disk=sda]", "op"), ("iscsi.ops", "target"),
                               ("iscsi.ops", "lun"), ("iscsi.bytes", "initiator"),
                               ("fc.ops", "lun")]
# Per second in every snapshot: each objset kstat's reads, writes, nread, nwritten
OBJSETS = {"tank": {"objset-0x36": ("tank/fs", 100, 40, 819200, 163840),
                    "objset-0x54": ("tank/vol", 20, 10, 81920, 40960)},
           "backup": {"objset-0x10": ("backup", 5, 0, 20480, 0)}}


def enc(name):
    """A dataset's path segment, as its href has it ('/' written '|')."""
    out = ""
    for c in name.replace("/", "|"):
        out += c if c.isalnum() or c in "-._~" else f"%{ord(c):02X}"
    return out


def rows(doc):
    """The samples of a .../data answer as a list: a one-second request answers, as the
    appliance does, with the sample itself (null when none was taken)."""
    data = doc["data"]
    return data if isinstance(data, list) else [] if data is None else [data]


def data_path(name, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{AN}/datasets/{enc(name)}/data" + (f"?{query}" if query else "")


# ---- a /proc the test writes, snapshot by snapshot --------------------------------------

def write_lio(sys_root, k):
    """LIO's configfs as the kernel lays it out (a target's portal group, its LUNs' port
    statistics and its ACLs' per-LUN statistics), the k-th second's counters."""
    top = Path(sys_root) / "sys/kernel/config/target"

    def put(path, value):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(f"{value}\n")
        tmp.replace(path)
    put(top / "iscsi/lio_version", "Datera Inc. iSCSI Target v4.1.0")
    (top / "iscsi/discovery_auth").mkdir(parents=True, exist_ok=True)
    for (fabric, target, lun), (cmds, rmb, wmb) in LIO_PORTS.items():
        stats = top / fabric / target / "tpgt_1/lun" / lun / "statistics/scsi_tgt_port"
        for name, v in (("in_cmds", cmds), ("read_mbytes", rmb), ("write_mbytes", wmb)):
            put(stats / name, 1000 + v * k)
    for (fabric, target, who, lun), (cmds, rmb, wmb) in LIO_ACLS.items():
        stats = top / fabric / target / "tpgt_1/acls" / who / lun / "statistics/scsi_auth_intr"
        for name, v in (("num_cmds", cmds), ("read_mbytes", rmb), ("write_mbytes", wmb)):
            put(stats / name, 500 + v * k)


class Proc:
    """Writes whole snapshots of the files the collector reads, each file atomically."""

    def __init__(self, root):
        self.root = Path(root)

    def _write(self, rel, text):
        path = self.root / "proc" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)

    def write(self, s):
        cpu = " ".join(str(x) for x in s["cpu"])
        cpu3 = "".join(f"cpu3 {' '.join(str(x) for x in s['cpu3'])} 0 0\n" if "cpu3" in s else "")
        self._write("stat", f"cpu  {cpu} 0 0\ncpu0 {cpu} 0 0\n{cpu3}btime 1700000000\n")
        # as Linux 5.5 and later write it: discards (15-18) and flushes (19-20) after the
        # eleven fields of old
        self._write("diskstats", "".join(
            f"   8 {i} {name} {d[0]} 0 {d[1]} {d[2]} {d[3]} 0 {d[4]} {d[5]} {d[6]} {d[7]} "
            f"{d[8]} {(d + [0, 0, 0])[9]} 0 {(d + [0, 0, 0])[10]} 0 {(d + [0, 0, 0])[11]} 0\n"
            for i, (name, d) in enumerate(s["disks"].items())))
        self._write("net/dev", "Inter-|   Receive |  Transmit\n face |bytes packets\n"
                    "    lo: 9 9 0 0 0 0 0 0 9 9 0 0 0 0 0 0\n" + "".join(
                        f"  {n}: {rx} 1 0 0 0 0 0 0 {tx} 1 0 0 0 0 0 0\n"
                        for n, (rx, tx) in s["nics"].items()))
        total, free, buffers, cached, srecl = s["mem"]
        # the kernel's own: unreclaimable slab, stacks, page tables (350000 kB)
        self._write("meminfo", f"MemTotal: {total} kB\nMemFree: {free} kB\n"
                    f"Buffers: {buffers} kB\nCached: {cached} kB\nSwapCached: 7 kB\n"
                    f"SReclaimable: {srecl} kB\nSUnreclaim: 300000 kB\n"
                    "KernelStack: 20000 kB\nPageTables: 30000 kB\n")
        k = s["k"]
        # IPv4 (+1000 packets in, 800 out; 1,000,000 bytes in, 400,000 out), IPv6 (+100
        # and 50 packets, 100,000 and 40,000 bytes) and TCP (+600 in, 500 out, 7
        # retransmitted) a second; MaxConn is signed (-1) and read past
        self._write("net/snmp",
                    "Ip: Forwarding DefaultTTL InReceives InHdrErrors OutRequests\n"
                    f"Ip: 1 64 {1000 * k} 0 {800 * k}\n"
                    "Icmp: InMsgs OutMsgs\nIcmp: 3 4\n"
                    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens InSegs OutSegs "
                    "RetransSegs InErrs\n"
                    f"Tcp: 1 200 120000 -1 9 {600 * k} {500 * k} {7 * k} 0\n"
                    "Udp: InDatagrams OutDatagrams\nUdp: 11 12\n")
        self._write("net/netstat",
                    "TcpExt: SyncookiesSent InOctets\nTcpExt: 0 999\n"
                    "IpExt: InNoRoutes InTruncatedPkts InOctets OutOctets\n"
                    f"IpExt: 0 0 {1000000 * k} {400000 * k}\n")
        self._write("net/snmp6", f"Ip6InReceives                   \t{100 * k}\n"
                    "Ip6InHdrErrors                  \t0\n"
                    f"Ip6OutRequests                  \t{50 * k}\n"
                    f"Ip6InOctets                     \t{100000 * k}\n"
                    f"Ip6OutOctets                    \t{40000 * k}\n")
        # the pools' datasets, each its objset kstat beside the pool's other kstats
        for pool, objsets in OBJSETS.items():
            self._write(f"spl/kstat/zfs/{pool}/state", "ONLINE\n")
            for name, (ds, r, w, nr, nw) in objsets.items():
                self._write(f"spl/kstat/zfs/{pool}/{name}",
                            "28 1 0x01 7 2160 5214370505 7498394793098\n"
                            "name                            type data\n"
                            f"dataset_name                    7    {ds}\n"
                            f"writes                          4    {1000 + w * k}\n"
                            f"nwritten                        4    {9000 + nw * k}\n"
                            f"reads                           4    {2000 + r * k}\n"
                            f"nread                           4    {8000 + nr * k}\n"
                            "nunlinks                        4    0\n"
                            "nunlinked                       4    0\n")
        for res, us in zip(("cpu", "io", "memory"), s["psi"]):
            self._write(f"pressure/{res}", f"some avg10=0 avg60=0 avg300=0 total={us}\n"
                        "full avg10=0 avg60=0 avg300=0 total=0\n")
        nfsd = self.root / "proc/net/rpc/nfsd"
        if s.get("nfsd"):
            self._write("net/rpc/nfsd", s["nfsd"])
        elif nfsd.exists():
            nfsd.unlink()
        arc = self.root / "proc/spl/kstat/zfs/arcstats"
        if s.get("arc"):
            self._write("spl/kstat/zfs/arcstats", "13 1 0x01 1 2 3 4\nname type data\n"
                        + "".join(f"{k} 4 {v}\n" for k, v in s["arc"].items()))
        elif arc.exists():
            arc.unlink()


def snapshot(k):
    """The k-th snapshot. Per second: cpu user +30 system +10 idle +50 iowait +10 (of 100);
    sda 100 reads of 2048 sectors in 50 ms, 50 writes of 1024 sectors in 100 ms, busy
    250 ms, weighted 1500 ms, 5 discards of 800 sectors and 3 flushes; sdb 20 reads
    (sectors wrapping 2^64) and busy ms wrapping 2^32; sdc from k=2 on; eth0 +100 KiB in,
    +50 KiB out; memory fixed; cpu pressure +250 ms; ARC in k=3 and 4 only (+900 hits, +50 misses, +50 iohits)."""
    disks = {
        "sda": [1000 + 100 * k, 20000 + 2048 * k, 500 + 50 * k, 500 + 50 * k,
                10000 + 1024 * k, 1000 + 100 * k, 1, 7000 + 250 * k, 9000 + 1500 * k,
                5 * k, 800 * k, 3 * k],
        "sda1": [1, 1, 1, 1, 1, 1, 0, 1, 1],
        "sdb": [10 + 20 * k, (2 ** 64 - 512 + 1024 * k) % 2 ** 64, 100 + 40 * k, 0, 0, 0, 0,
                (2 ** 32 - 296 + 496 * k) % 2 ** 32, 0],
        "loop0": [k, k, k, k, k, k, 0, k, k],
    }
    if k >= 2:
        disks["sdc"] = [10 * k, 80 * k, 5 * k, 0, 0, 0, 0, 100 * k, 100 * k]
    extra = {}
    if k >= 2:  # a CPU brought online (numbered 3: the numbers need not follow on)
        extra["cpu3"] = [1000 + 90 * k, 0, 0, 100 + 10 * k, 0, 0, 0, 0]
    s = {"cpu": [1000 + 30 * k, 0, 500 + 10 * k, 8000 + 50 * k, 200 + 10 * k, 0, 0, 0],
         # bond0 stands on eth0 (its lower_eth0 link in the fake sysfs): the same bytes
         "disks": disks, "nics": {"eth0": (102400 * k, 51200 * k),
                                  "bond0": (102400 * k, 51200 * k)},
         "mem": (16000000, 4000000, 1000000, 5000000, 1000000),
         "psi": (250000 * k, 0, 0), "k": k, **extra}
    if k in (3, 4):
        # the NFS server, as the kernel's /proc/net/rpc/nfsd has it (NFSv4's proc4ops by
        # operation number: 9 getattr, 22 putfh, 25 read, 38 write, 53 sequence)
        v3 = [0] * 22
        v3[1], v3[6], v3[7], v3[21] = 40 * k, 100 * k, 60 * k, 5 * k
        v4 = [0] * 76
        v4[9], v4[22], v4[25], v4[38], v4[53] = 30 * k, 200 * k, 120 * k, 80 * k, 200 * k
        s["nfsd"] = ("rc 0 3 4\nio 1000 2000\nth 8 0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0\n"
                     f"proc3 22 {' '.join(map(str, v3))}\n"
                     f"proc4 2 {k} {200 * k}\nproc4ops 76 {' '.join(map(str, v4))}\n")
        s["arc"] = {"hits": 900 * k, "iohits": 50 * k, "misses": 50 * k, "c": 2 ** 31,
                    "size": 2 ** 30, "data_size": 800000000, "metadata_size": 200000000,
                    "c_min": 2 ** 28, "c_max": 2 ** 32,
                    # the accesses by kind, summing to the hits, iohits and misses above
                    "demand_data_hits": 500 * k, "demand_data_iohits": 30 * k,
                    "demand_data_misses": 20 * k, "demand_metadata_hits": 300 * k,
                    "demand_metadata_iohits": 10 * k, "demand_metadata_misses": 10 * k,
                    "prefetch_data_hits": 60 * k, "prefetch_data_iohits": 5 * k,
                    "prefetch_data_misses": 15 * k, "prefetch_metadata_hits": 40 * k,
                    "prefetch_metadata_iohits": 5 * k, "prefetch_metadata_misses": 5 * k,
                    "l2_hits": 30 * k, "l2_misses": 20 * k, "l2_read_bytes": 1048576 * k,
                    "l2_write_bytes": 524288 * k, "l2_size": 2 ** 33, "l2_asize": 2 ** 32}
    return s


# What every dataset must say for the second starting at m + k (snapshot k minus k - 1).
def expected(k):
    ops = {"sda": 158, "sdb": 20}  # sda: 100 reads, 50 writes, 5 discards, 3 flushes
    if k >= 3:
        ops["sdc"] = 10
    want = {
        "cpu.utilization[mode]": {None: 50, "user": 30, "nice": 0, "system": 10, "iowait": 10,
                                  "irq": 0, "softirq": 0, "steal": 0, "idle": 50},
        "io.ops[op]": {None: sum(ops.values()), "read": 120 + (10 if k >= 3 else 0),
                       "write": 50, "discard": 5, "flush": 3},
        "io.ops[disk]": {None: sum(ops.values()), **ops},
        "io.bytes[op]": {None: 1048576 + 524288 + 524288 + (40960 if k >= 3 else 0),
                         "read": 1048576 + 524288 + (40960 if k >= 3 else 0),
                         "write": 524288},
        "io.busy[disk]": {None: 49.6, "sda": 25, "sdb": 49.6,
                          **({"sdc": 10} if k >= 3 else {})},
        # the appliance's heat map: how many disks were that busy, by 5 % of the second
        "io.disks[utilization]": {None: 3 if k >= 3 else 2, "25-30": 1, "45-50": 1,
                                  **({"10-15": 1} if k >= 3 else {})},
        "io.queue[disk]": {None: 1.5 + (0.1 if k >= 3 else 0), "sda": 1.5, "sdb": 0,
                           **({"sdc": 0.1} if k >= 3 else {})},
        "nic.kilobytes[direction]": {None: 150, "in": 100, "out": 50},
        # each device its own; the totals count a byte once (bond0's are eth0's)
        "nic.kilobytes[device]": {None: 150, "eth0": 150, "bond0": 150},
        "mem.bytes[component]": {None: 16000000 * 1024, "used": 4650000 * 1024,
                                 "kernel": 350000 * 1024, "cache": 6000000 * 1024,
                                 "buffers": 1000000 * 1024, "free": 4000000 * 1024},
        # IPv4 and IPv6 together; TCP's one MIB
        "ip.bytes[direction]": {None: 1540000, "in": 1100000, "out": 440000},
        "ip.packets[direction]": {None: 1950, "in": 1100, "out": 850},
        "tcp.packets[direction]": {None: 1100, "in": 600, "out": 500},
        "tcp.retransmits": {None: 7},
        # the pools' objsets summed
        "zpool.ops[op]": {None: 175, "read": 125, "write": 50},
        "zpool.ops[pool]": {None: 175, "tank": 170, "backup": 5},
        "zpool.bytes[op]": {None: 921600 + 204800, "read": 921600, "write": 204800},
        "zpool.bytes[pool]": {None: 921600 + 204800, "tank": 1105920, "backup": 20480},
        "psi.some[resource]": {None: 25, "cpu": 25, "io": 0, "memory": 0},
        # each CPU's own share, by its number; cpu3 from the second it was read twice
        "cpu.utilization[cpu]": {None: 50, "0": 50, **({"3": 90} if k >= 3 else {})},
        # and the appliance's heat map of them: how many CPUs were that busy
        "cpu.utilization[utilization]": {None: 50, "50-55": 1, **({"90-95": 1} if k >= 3 else {})},
    }
    reads, rms = 120 + (10 if k >= 3 else 0), 50 + 40 + (5 if k >= 3 else 0)
    want["io.latency[op]"] = {None: round((rms + 100) / (reads + 50), 3),
                              "read": round(rms / reads, 3), "write": 2}
    mib = 1048576
    want.update({
        "iscsi.ops": {None: 400},
        "iscsi.ops[initiator]": {None: 400, HOST1: 300, HOST2: 100},
        "iscsi.ops[target]": {None: 400, IQN: 400},
        "iscsi.ops[lun]": {None: 400, f"{IQN}/lun_0": 300, f"{IQN}/lun_1": 100},
        "iscsi.bytes[op]": {None: 4 * mib, "read": 3 * mib, "write": mib},
        "iscsi.bytes[initiator]": {None: 4 * mib, HOST1: 3 * mib, HOST2: mib},
        "fc.ops": {None: 50},
        "fc.ops[initiator]": {None: 50, FC_HOST: 50},
        "fc.ops[lun]": {None: 50, f"{WWN}/lun_0": 50},
        "fc.bytes[op]": {None: mib, "read": mib, "write": 0},
    })
    # kept to one disk, as the appliance's io.bytes[disk=sda][op]
    want["io.bytes[disk=sda][op]"] = {None: 1572864, "read": 1048576, "write": 524288}
    want["io.bytes[disk]"] = {None: want["io.bytes[op]"][None], "sda": 1572864, "sdb": 524288,
                              **({"sdc": 40960} if k >= 3 else {})}
    if k == 4:
        want["arc.accesses[hit/miss]"] = {
            None: 1000, "data hits": 500, "data misses": 20, "metadata hits": 300,
            "metadata misses": 10, "prefetch data hits": 60, "prefetch data misses": 15,
            "prefetch metadata hits": 40, "prefetch metadata misses": 5, "data iohits": 30,
            "metadata iohits": 10, "prefetch data iohits": 5, "prefetch metadata iohits": 5}
        want["arc.size[component]"] = {None: 2 ** 30, "data": 800000000,
                                       "metadata": 200000000, "other": 2 ** 30 - 10 ** 9}
        want["arc.hitratio"] = {None: 90}
        procs = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
                 "create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
                 "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit"]
        want["nfs3.ops[op]"] = {None: 205, **{p: 0 for p in procs}, "getattr": 40,
                                "read": 100, "write": 60, "commit": 5}
        want["nfs3.ops"] = {None: 205}
        want["nfs4.ops[op]"] = {None: 630, **{o: 0 for o in NFS4_OPS}, "getattr": 30,
                                "putfh": 200, "read": 120, "write": 80, "sequence": 200}
        want["nfs4.ops"] = {None: 630}
        want["arc.target[bound]"] = {None: 2 ** 31, "min": 2 ** 28, "max": 2 ** 32}
        want["arc.l2_accesses[hit/miss]"] = {None: 50, "hits": 30, "misses": 20}
        want["arc.l2_size"] = {None: 2 ** 33}
        want["arc.l2_bytes[op]"] = {None: 1572864, "read": 1048576, "write": 524288}
        # the kernel counts the ARC as used: shown apart
        want["mem.bytes[component]"] = {None: 16000000 * 1024,
                                        "used": 4650000 * 1024 - 2 ** 30, "arc": 2 ** 30,
                                        "kernel": 350000 * 1024,
                                        "cache": 6000000 * 1024, "buffers": 1000000 * 1024,
                                        "free": 4000000 * 1024}
    return want


def sample_values(sample):
    out = {None: sample["data"]["value"]}
    out.update({kv["key"]: kv["value"] for kv in sample["data"]["data"]})
    return out


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1, abs(b))


# ---- the module's server --------------------------------------------------------------

@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """A spindled on a synthetic /proc, and the snapshots it was shown: snapshot k was the
    one the collector read at the tick ending second m + k, so the sample starting at
    m + k holds snapshot k - snapshot k-1, for k = 1..5."""
    base = tmp_path_factory.mktemp("analytics")
    proc, sys_root = base / "root", base / "sys"
    (sys_root / "sys/class/net/eth0").mkdir(parents=True)
    (sys_root / "sys/class/net/bond0").mkdir()
    (sys_root / "sys/class/net/bond0/lower_eth0").symlink_to("../eth0")
    pr = Proc(proc)
    pr.write(snapshot(0))
    write_lio(sys_root, 0)
    srv = Server(base / "state", "--proc-root", proc, "--sys-root", sys_root,
                 "--system-led-backend", "virtual", "--disk-led-backend", "virtual").start()
    admin = srv.admin()
    for statistic, drilldown in MORE:
        expect(admin.post(AN + "/datasets", json={"statistic": statistic, **(
            {"drilldown": drilldown} if drilldown else {})}), 201)
    # Each snapshot is written in the middle of a second, so the tick at the next
    # boundary reads it and the one before did not; a late write starts over.
    for attempt in range(3):
        m = int(time.time()) + 1
        for k in range(6):
            target = m + k + 0.5
            time.sleep(max(0, target - time.time()))
            if time.time() > m + k + 0.8:
                break
            pr.write(snapshot(k))
            write_lio(sys_root, k)
        else:
            break
    else:
        pytest.fail("could not write the snapshots in step with the seconds")
    time.sleep(max(0, m + 6.5 - time.time()))
    # From now on the box is alive: counters grow every 0.2 s (conftest's FakeProc).
    live = FakeProc(proc, disks=2, nics=1, cpus=2, arc=False).start()
    yield {"srv": srv, "admin": admin, "m": m, "proc": proc, "sys": sys_root, "live": live}
    live.stop()
    if srv.running:
        assert srv.stop()[0] == 0


# ---- exact values --------------------------------------------------------------------

def test_exact_values_of_every_dataset(box):
    """Two readings one second apart give exactly the expected value of every dataset,
    key by key: counter wraps, a disk appearing (sdc), partitions and loop devices left
    out, the ARC present (and its datasets created) and absent."""
    admin, m = box["admin"], box["m"]
    names = [d["name"] for d in expect(admin.get(AN + "/datasets"), 200)["datasets"]]
    assert set(DEFAULTS + ARC + NFS + LIO) <= set(names), names
    for k in range(1, 6):
        for name, want in expected(k).items():
            doc = expect(admin.get(data_path(name, start=m + k, seconds=1, meta="true")), 200)
            assert doc["meta"]["granularity"] == "second", doc
            assert doc["meta"]["sample_seconds"] == 1, doc
            assert len(rows(doc)) == 1, f"{name} at m+{k}: {doc}"
            s = rows(doc)[0]
            assert s["sample"] == s["time"] == m + k
            assert parse_time(s["time_iso"]).timestamp() == m + k
            assert s["startTime"] == time.strftime("%Y%m%dT%H:%M:%S", time.gmtime(m + k))
            assert s["samples"] == m + k + 1 and s["count"] == 1
            got = sample_values(s)
            assert set(got) == set(want), f"{name} at m+{k}: keys {sorted(map(str, got))}"
            for key, value in want.items():
                assert close(got[key], value), f"{name}[{key}] at m+{k}: {got[key]} != {value}"
            assert s["data"]["min"] == s["data"]["max"] == s["data"]["value"]
            values = [kv["value"] for kv in s["data"]["data"]]
            assert values == sorted(values, reverse=True), "buckets largest first"
    # ARC: no values before it was read twice, none after it went away
    for k in (3, 5):
        doc = expect(admin.get(data_path(ARC[0], start=m + k, seconds=1)), 200)
        assert rows(doc) == [], f"ARC values at m+{k}: {doc}"
    # No partition, loop device or loopback NIC anywhere
    keys = set()
    for k in range(1, 6):
        doc = expect(admin.get(data_path("io.ops[disk]", start=m + k, seconds=1)), 200)
        keys |= {kv["key"] for kv in rows(doc)[0]["data"]["data"]}
    assert keys == {"sda", "sdb", "sdc"}


def test_dataset_catalog(box):
    admin = box["admin"]
    datasets = expect(admin.get(AN + "/datasets"), 200)["datasets"]
    for d in datasets:
        assert d["explanation"] and d["unit"] and d["grouping"], d
        assert d["incore_bytes"] > 0 and d["ondisk_bytes"] >= 0 and d["suspended"] is False
        assert d["href"] == AN + "/datasets/" + enc(d["name"])
        one = expect(admin.get(d["href"]), 200)["dataset"]
        assert one["name"] == d["name"] and one["unit"] == d["unit"]
        parse_time(d["ctime"])
    by_name = {d["name"]: d for d in datasets}
    assert by_name["io.ops[disk]"]["drilldowns"] == ["disk"]
    assert by_name["io.ops[disk]"]["available_drilldowns"] == ["op", "disk"]
    assert by_name["io.ops[disk]"]["statistic"] == "io.ops"
    assert by_name["arc.accesses[hit/miss]"]["href"].endswith("arc.accesses%5Bhit%7Cmiss%5D")
    assert by_name["io.ops[disk]"]["keys"] >= 3
    # a title as the appliance's explanation reads, the whole explanation beside it
    titles = {d["name"]: d["title"] for d in datasets}
    assert titles["io.ops[disk]"] == "Disk: I/O operations per second broken down by disk"
    assert titles["io.ops"] == "Disk: I/O operations per second"
    assert titles["cpu.utilization[mode]"] == "CPU: percent utilization broken down by CPU mode"
    assert titles["io.ops[op]"].endswith("broken down by type of operation")
    assert titles["io.disks[utilization]"] == "Disk: disks broken down by percent utilization"
    if "io.bytes[disk=sda][op]" in titles:
        assert titles["io.bytes[disk=sda][op]"] == ("Disk: I/O bytes per second broken down by "
                                                     "type of operation, of disk sda")
    for d in datasets:  # each names what it measures first, as "Disk: ..."
        assert re.match(r"^[A-Z][\w ]+: \S", d["title"]), d["title"]
    fault = expect_fault(admin.get(AN + "/datasets/no.such%5Bthing%5D"), 404)
    assert fault["details"].startswith("name")


def test_create_suspend_resume_delete(box):
    admin, srv = box["admin"], box["srv"]
    resp = admin.post(AN + "/datasets", json={"statistic": "io.latency", "drilldown": "disk"})
    d = expect(resp, 201)["dataset"]
    assert d["name"] == "io.latency[disk]" and resp.headers["Location"] == d["href"]
    expect_fault(admin.post(AN + "/datasets", json={"statistic": "io.latency",
                                                     "drilldown": "disk"}), 409)
    for body, field in [({"statistic": "io.nothing"}, "statistic"),
                        ({"statistic": "io.ops", "drilldown": "mode"}, "drilldown"),
                        ({}, "statistic"), ({"statistic": 3}, "statistic"),
                        ({"statistic": "io.ops", "extra": 1}, "extra")]:
        fault = expect_fault(admin.post(AN + "/datasets", json=body), 400)
        assert fault["details"].startswith(field), (body, fault)
    plain = expect(admin.post(AN + "/datasets", json={"statistic": "io.latency"}), 201)
    assert plain["dataset"]["name"] == "io.latency" and plain["dataset"]["drilldown"] is None

    # it collects from the next second on
    time.sleep(2.2)
    doc = expect(admin.get(data_path("io.latency[disk]", start=-2)), 200)
    assert rows(doc) and {kv["key"] for kv in rows(doc)[-1]["data"]["data"]} >= {"nvme0n1"}

    # suspended: no values; resumed: values again
    href = d["href"]
    assert expect(admin.put(href, json={"suspended": True}), 200)["dataset"]["suspended"]
    t0 = int(time.time())
    time.sleep(2.5)
    assert expect(admin.get(href), 200)["dataset"]["suspended"] is True
    doc = expect(admin.get(data_path("io.latency[disk]", start=t0 + 1, seconds=1)), 200)
    assert rows(doc) == [], "a suspended dataset got a value"
    expect(admin.put(href, json={"suspended": False}), 200)
    t1 = int(time.time())
    time.sleep(2.5)
    doc = expect(admin.get(data_path("io.latency[disk]", start=t1 + 1, seconds=1)), 200)
    assert len(rows(doc)) == 1, "no value after resuming"
    for body in ({}, {"suspended": "yes"}, {"suspended": True, "name": "x"}):
        expect_fault(admin.put(href, json=body), 400)

    # deleted: gone, with its data
    expect(admin.delete(href), 204)
    expect_fault(admin.get(href), 404)
    expect_fault(admin.get(data_path("io.latency[disk]")), 404)
    expect_fault(admin.delete(href), 404)
    names = [x["name"] for x in expect(admin.get(AN + "/datasets"), 200)["datasets"]]
    assert "io.latency[disk]" not in names
    # its rows leave the database in the background
    db = srv.state_dir / "spindle.db"
    deadline = time.monotonic() + 15 * SLOW
    while True:
        with sqlite3.connect(db) as c:
            left = c.execute("SELECT count(*) FROM analytics_series s WHERE NOT EXISTS "
                             "(SELECT 1 FROM analytics_datasets d WHERE d.id = s.dataset)"
                             ).fetchone()[0]
        if left == 0:
            break
        assert time.monotonic() < deadline, f"{left} series of deleted datasets remain"
        time.sleep(0.5)


def test_keys_choose_what_is_answered(box):
    """keys=a,b: only those keys in each sample, the total still the whole's; a key the
    dataset never had, or keys of a dataset without any, refused by name."""
    admin = box["admin"]
    whole = rows(expect(admin.get(data_path("io.ops[disk]", start=-5, seconds=4)), 200))
    seen = sorted({kv["key"] for s in whole for kv in s["data"]["data"]})
    assert len(seen) >= 2, seen
    pick = seen[:1]
    some = rows(expect(admin.get(data_path("io.ops[disk]", start=-5, seconds=4,
                                           keys=",".join(pick))), 200))
    assert [s["sample"] for s in some] == [s["sample"] for s in whole]
    for a, b in zip(some, whole):
        assert [kv["key"] for kv in a["data"]["data"]] in (pick, [])
        assert a["data"]["value"] == b["data"]["value"]  # the total is the dataset's
    expect_fault(admin.get(data_path("io.ops[disk]", seconds=1, keys="nosuchdisk")), 400,
                 "ERR_INVALID_ARG", "keys: io.ops[disk] has no key 'nosuchdisk'")
    expect_fault(admin.get(data_path("io.ops[disk]", seconds=1, keys=",")), 400,
                 details="keys: one or more")
    expect_fault(admin.get(data_path("io.ops", seconds=1, keys="read")), 400,
                 details="keys: io.ops is not broken down")


def test_top_shows_the_highest_keys_and_sums_the_rest_in_other(box):
    """top=N: the N keys of the highest mean (by=max: largest value) over the window, in
    every sample of it, the rest summed in "other"; keys= likewise shows the keys named,
    the rest in "other". The box's known seconds: sda 158 ops/s, sdb 20, sdc 10 from the
    third on."""
    admin, m = box["admin"], box["m"]
    win = {"start": m + 1, "seconds": 5, "meta": "true"}
    for extra in ({}, {"by": "max"}, {"by": "mean"}):
        doc = expect(admin.get(data_path("io.ops[disk]", top=1, **win, **extra)), 200)
        assert doc["meta"]["keys"] == ["sda"] and doc["meta"]["top"] == 1, doc["meta"]
        assert doc["meta"]["by"] == extra.get("by", "mean")
        got = [(s["sample"] - m, [kv["key"] for kv in s["data"]["data"]],
                s["data"]["other"]) for s in rows(doc)]
        assert got == [(1, ["sda"], 20), (2, ["sda"], 20), (3, ["sda"], 30),
                       (4, ["sda"], 30), (5, ["sda"], 30)], got
        for s in rows(doc):  # the total is the whole dataset's
            assert s["data"]["value"] == 158 + s["data"]["other"]
    doc = expect(admin.get(data_path("io.ops[disk]", top=2, **win)), 200)
    assert doc["meta"]["keys"] == ["sda", "sdb"]
    assert [s["data"]["other"] for s in rows(doc)] == [0, 0, 10, 10, 10]
    assert [kv["key"] for kv in rows(doc)[-1]["data"]["data"]] == ["sda", "sdb"]
    # more than there are: all of them, "other" 0
    doc = expect(admin.get(data_path("io.ops[disk]", top=50, **win)), 200)
    assert doc["meta"]["keys"] == ["sda", "sdb", "sdc"]
    assert {s["data"]["other"] for s in rows(doc)} == {0}
    # other_keys: the keys "other" sums (here the live disks, quiet in that window, too)
    unranked = doc["meta"]["other_keys"]
    assert expect(admin.get(data_path("io.ops[disk]", top=1, **win)), 200)["meta"][
        "other_keys"] == unranked + 2
    # keys=: the keys named, in the order named, once each
    doc = expect(admin.get(data_path("io.ops[disk]", keys="sdc,sdb,sdc", **win)), 200)
    assert doc["meta"]["keys"] == ["sdc", "sdb"] and "top" not in doc["meta"]
    assert [s["data"]["other"] for s in rows(doc)] == [158] * 5
    assert [[kv["key"] for kv in s["data"]["data"]] for s in rows(doc)] == \
        [["sdb"], ["sdb"], ["sdb", "sdc"], ["sdb", "sdc"], ["sdb", "sdc"]]
    # without either: no "other", as ever (and as the appliance)
    assert all("other" not in s["data"] for s in rows(expect(
        admin.get(data_path("io.ops[disk]", **win)), 200)))
    # what is wrong is named
    for params, details in [({"top": 0}, "top: a whole number from 1 to 1000"),
                            ({"top": 1001}, "top: a whole number"),
                            ({"top": "x"}, "top: a whole number"),
                            ({"by": "max"}, "by: orders top=N"),
                            ({"top": 2, "by": "median"}, "by: mean or max, not 'median'"),
                            ({"top": 2, "keys": "sda"}, "top: keys= names the keys shown")]:
        expect_fault(admin.get(data_path("io.ops[disk]", seconds=2, **params)), 400,
                     "ERR_INVALID_ARG", details)
    expect_fault(admin.get(data_path("io.ops", seconds=2, top=2)), 400,
                 details="top: io.ops is not broken down")


def test_top_on_a_stream_holds_its_ranking(box):
    """A window reaching past now is ranked on what is complete when asked (wholly ahead:
    the same span just before now); its later samples show the same keys."""
    srv, admin = box["srv"], box["admin"]
    for start in ("-2", "now"):
        with DataStream(srv, admin.token, data_path("io.ops[disk]", start=start, seconds=4,
                                                    top=1, meta="true")) as st:
            assert st.status == 200
            doc = json.loads("\n".join(line for _, line in st.lines()))
        # the live box: sda and sdb each at a rate of their own (conftest's FakeProc)
        assert len(doc["meta"]["keys"]) == 1, doc["meta"]
        shown = doc["meta"]["keys"][0]
        assert len(rows(doc)) >= 3, doc
        for s in rows(doc):
            assert [kv["key"] for kv in s["data"]["data"]] in ([shown], []), s
            assert "other" in s["data"]


def test_a_thousand_keys_answer_an_hour_by_the_minute(spawn, tmp_path):
    """An hour of io.ops[disk] on a box of 600 disks is more seconds x keys than an answer
    holds: asked without a granularity it comes by the minute, not refused; by the second
    it is refused, saying what to ask instead; keys= brings it back to seconds."""
    proc = FakeProc(tmp_path / "root", disks=600, nics=1, cpus=2, arc=False).start()
    try:
        srv = spawn("--proc-root", tmp_path / "root")
        admin = srv.admin()
        deadline = time.monotonic() + 10 * SLOW
        while True:
            doc = expect(admin.get(data_path("io.ops[disk]", seconds=1)), 200)
            if doc["data"] and len(doc["data"]["data"]["data"]) == 600:
                seen = time.time()
                break
            assert time.monotonic() < deadline, "600 disks not seen"
            time.sleep(0.2)
        meta = expect(admin.get(data_path("io.ops[disk]", start=-3600, meta="true")),
                      200)["meta"]
        assert meta["granularity"] == "minute" and meta["points"] in (60, 61), meta
        fault = expect_fault(admin.get(data_path("io.ops[disk]", start=-3600,
                                                 granularity="second")), 400)
        assert "keys=" in fault["details"] and "600 keys" in fault["details"], fault
        meta = expect(admin.get(data_path("io.ops[disk]", start=-3600, meta="true",
                                          keys="nvme0n1,nvme1n1")), 200)["meta"]
        assert meta["granularity"] == "second", meta
        # the eight busiest: by the second too, each sample the eight and the rest's sum
        doc = expect(admin.get(data_path("io.ops[disk]", start=-3600, meta="true", top=8)),
                     200)
        assert doc["meta"]["granularity"] == "second" and len(doc["meta"]["keys"]) == 8
        assert doc["data"], doc
        for s in doc["data"]:
            shown = s["data"]["data"]
            assert len(shown) <= 8 and {kv["key"] for kv in shown} <= set(doc["meta"]["keys"])
            total = sum(kv["value"] for kv in shown) + s["data"]["other"]
            assert abs(total - s["data"]["value"]) <= 0.002 * 600, s  # 3 decimals each
        # a window of more numbers than one query holds (131,072) comes whole, in order
        # (601 x 399 numbers: two queries): the same samples as its two halves asked apart
        time.sleep(max(0, seen + 12 - time.time()))  # some seconds stored before the end
        t0 = int(time.time()) - 405  # ending 6 s ago: complete, none of it streamed
        whole = expect(admin.get(data_path("io.ops[disk]", start=t0, seconds=399,
                                           granularity="second")), 200)["data"]
        halves = [expect(admin.get(data_path("io.ops[disk]", start=a, seconds=n,
                                             granularity="second")), 200)["data"]
                  for a, n in ((t0, 200), (t0 + 200, 199))]
        assert len(whole) >= 5 and whole == halves[0] + halves[1], \
            [len(whole), len(halves[0]), len(halves[1])]
        assert sorted({s["sample"] for s in whole}) == [s["sample"] for s in whole]
        # few keys, the whole window: the same rule as ever
        meta = expect(admin.get(data_path("io.ops[op]", start=-3600, meta="true")), 200)["meta"]
        assert meta["granularity"] == "second"
    finally:
        proc.stop()


def test_every_form_of_start_seconds_granularity_points(box):
    admin, m = box["admin"], box["m"]
    name = "io.ops[op]"
    by_epoch = expect(admin.get(data_path(name, start=m + 1, seconds=5)), 200)
    assert [s["sample"] for s in rows(by_epoch)] == list(range(m + 1, m + 6))
    by_iso = expect(admin.get(data_path(name, start=iso(m + 1), seconds=5, meta="true")), 200)
    assert rows(by_iso) == rows(by_epoch)
    assert parse_time(by_iso["meta"]["start"]).timestamp() == m + 1
    assert by_iso["meta"]["points"] == 5 and list(by_epoch) == ["data"]

    # -N: the last N seconds, each with a value (the box is alive)
    doc = expect(admin.get(data_path(name, start=-5)), 200)
    now = time.time()
    assert 4 <= len(rows(doc)) <= 5, doc
    assert all(now - 7 <= s["sample"] < now for s in rows(doc))
    # seconds alone: the last so many
    doc = expect(admin.get(data_path(name, seconds=3)), 200)
    assert 2 <= len(rows(doc)) <= 3

    # granularity chosen from the window
    meta = expect(admin.get(data_path(name, start=-60, meta="true")), 200)["meta"]
    assert meta["granularity"] == "second"
    meta = expect(admin.get(data_path(name, start=-7200, meta="true")), 200)["meta"]
    assert meta["granularity"] == "minute" and meta["sample_seconds"] == 60
    meta = expect(admin.get(data_path(name, start=-86400 * 30, meta="true")), 200)["meta"]
    assert meta["granularity"] == "hour" and meta["sample_seconds"] == 3600
    # meta=false is the appliance's answer; anything else is refused by name
    assert list(expect(admin.get(data_path(name, start=-3, meta="false")), 200)) == ["data"]
    expect_fault(admin.get(data_path(name, start=-3, meta="yes")), 400, details="meta")

    # min, max, mean and counts against the seconds: on a suspended dataset nothing moves
    # while the two answers are read
    # (the windows below reach m + 10: run first after the fixture, the test waits for it)
    deadline = time.monotonic() + 15
    while not [s for s in rows(expect(admin.get(data_path(name, start=m + 10, seconds=1)), 200))
               if s and s["data"]["value"] is not None]:
        assert time.monotonic() < deadline, "second m + 10 was never stored"
        time.sleep(0.2)
    href = AN + "/datasets/" + enc(name)
    expect(admin.put(href, json={"suspended": True}), 200)
    # A tick that wakes over half a second late counts as the next second's, so its second
    # can be stored before the wall clock has left it: a second later, int(time.time())
    # ends a window past everything stored.
    time.sleep(1)
    try:
        hour = m - m % 3600
        secs = expect(admin.get(data_path(name, start=hour, seconds=int(time.time()) - hour,
                                          granularity="second")), 200)
        values = {s["sample"]: s["data"]["value"] for s in rows(secs)}
        assert len(values) >= 8, (values, m, hour, time.time())

        def agg(lo, hi):
            v = [x for t, x in values.items() if lo <= t < hi]
            return len(v), min(v), max(v), sum(v) / len(v)

        for gran, width in (("minute", 60), ("hour", 3600)):
            # a window that ends by now: its one bucket, as far as it goes
            doc = expect(admin.get(data_path(name, start=m, seconds=1, granularity=gran,
                                             meta="true")), 200)
            assert len(rows(doc)) == 1
            assert doc["meta"]["sample_seconds"] == width
            for s in rows(doc):
                n, lo, hi, mean = agg(s["sample"], s["sample"] + width)
                assert s["sample"] % width == 0
                assert (s["count"], s["data"]["min"], s["data"]["max"]) == (n, lo, hi), s
                assert close(s["data"]["value"], round(mean, 3)) or \
                    abs(s["data"]["value"] - mean) < 0.001
        # points: buckets of whole seconds, each the mean of its seconds
        doc = expect(admin.get(data_path(name, start=m + 1, seconds=8, points=4,
                                         meta="true")), 200)
        assert doc["meta"]["sample_seconds"] == 2 and len(rows(doc)) == 4
        for s in rows(doc):
            n, lo, hi, mean = agg(s["sample"], s["sample"] + 2)
            assert (s["count"], s["data"]["min"], s["data"]["max"]) == (n, lo, hi)
            assert abs(s["data"]["value"] - mean) < 0.001
        # points that do not divide the window: 10 s in 3 samples of 4 s, the last of
        # them only the 2 s left of the window (not 12 s in all)
        doc = expect(admin.get(data_path(name, start=m + 1, seconds=10, points=3,
                                         meta="true")), 200)
        assert doc["meta"]["sample_seconds"] == 4 and len(rows(doc)) == 3, doc
        for s in rows(doc):
            n, lo, hi, mean = agg(s["sample"], min(s["sample"] + 4, m + 11))
            assert (s["count"], s["data"]["min"], s["data"]["max"]) == (n, lo, hi), s
            assert abs(s["data"]["value"] - mean) < 0.001
        assert rows(doc)[-1]["count"] <= 2
    finally:
        expect(admin.put(href, json={"suspended": False}), 200)

    # before anything was collected: a valid, empty answer
    doc = expect(admin.get(data_path(name, start=iso(m - 86400), seconds=60)), 200)
    assert rows(doc) == []


BAD = [({"start": "yesterday"}, "start"), ({"start": "-x"}, "start"),
       ({"start": "2026-13-45T00:00:00Z"}, "start"), ({"start": "99999999999"}, "start"),
       ({"start": str(2 ** 31)}, "start"),
       ({"seconds": "0"}, "seconds"), ({"seconds": "ten"}, "seconds"),
       ({"seconds": "-5"}, "seconds"), ({"granularity": "day"}, "granularity"),
       ({"points": "0"}, "points"), ({"points": "1.5"}, "points"),
       ({"start": "-86400", "granularity": "second", "seconds": "864000"}, "seconds"),
       ({"limit": "5"}, "limit")]


@pytest.mark.parametrize("params,field", BAD, ids=[f for _, f in BAD])
def test_bad_parameters_name_the_parameter(box, params, field):
    fault = expect_fault(box["admin"].get(data_path("io.ops[op]", **params)), 400)
    assert fault["details"].startswith(field), fault


class DataStream(EventStream):
    """A data answer read as it comes: the lines of the document with their arrival."""

    def lines(self, timeout=10 * SLOW):
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                assert left > 0, f"no line in {timeout}s; buffered {self.buf[:200]!r}"
                data = self._read(left)
                if not data:
                    return
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            yield time.monotonic(), line.decode()


def test_a_window_past_now_streams_each_sample_as_taken(box):
    srv, admin = box["srv"], box["admin"]
    with DataStream(srv, admin.token, data_path("cpu.utilization[mode]", start=-2,
                                                seconds=5)) as st:
        assert st.status == 200
        assert st.headers.get("Transfer-Encoding") == "chunked"
        assert st.headers.get("X-Spindle-Analytics-Api")
        got = [(t, line) for t, line in st.lines() if line.strip()]
    text = "\n".join(line for _, line in got)
    doc = json.loads(text)  # the pieces make one document
    samples = [s["sample"] for s in rows(doc)]
    assert len(samples) == 5 and samples == list(range(samples[0], samples[0] + 5)), samples
    times = [t for t, line in got if line.lstrip(",").startswith("{\"sample\"")]
    # two came at once, the other three one per second
    assert times[1] - times[0] < 0.5 and times[-1] - times[1] > 1.5, times


def test_streaming_at_minute_granularity_sends_heartbeats_and_ends(box):
    """A minute bucket takes up to a minute: the stream stays up with blank lines (a
    third of the connection timeout, 60 s here, would be 20 s), so only the start is
    checked here; the client going away mid-stream must not hurt the server."""
    srv, admin = box["srv"], box["admin"]
    st = DataStream(srv, admin.token, data_path("io.ops[op]", start="now", seconds=120,
                                                granularity="minute", meta="true"))
    first = next(iter(st.lines()))[1]
    assert first.startswith("{\"meta\":{\"dataset\":\"io.ops[op]\"") and \
        "\"granularity\":\"minute\"" in first and first.endswith("\"data\":["), first
    st.close(abort=True)
    # the server goes on answering, streams included
    with DataStream(srv, admin.token, data_path("io.ops[op]", start=-1, seconds=2)) as st2:
        doc = json.loads("\n".join(line for _, line in st2.lines()))
    assert len(rows(doc)) == 2


def test_settings(box):
    admin = box["admin"]
    assert expect(admin.get(AN + "/settings"), 200) == {"settings": {
        "retain_second_data": 24, "retain_minute_data": 336, "retain_hour_data": 8760}}
    doc = expect(admin.put(AN + "/settings", json={"retain_minute_data": 48}), 200)
    assert doc["settings"]["retain_minute_data"] == 48
    assert doc["settings"]["retain_second_data"] == 24
    for body, field in [({"retain_second_data": 0}, "retain_second_data"),
                        ({"retain_hour_data": 87601}, "retain_hour_data"),
                        ({"retain_minute_data": "48"}, "retain_minute_data"),
                        ({"retain_minute_data": 4.5}, "retain_minute_data"),
                        ({"keep": 1}, "keep")]:
        fault = expect_fault(admin.put(AN + "/settings", json=body), 400)
        assert fault["details"].startswith(field), fault
    expect_fault(admin.get(AN + "/settings?x=1"), 400)
    # minute data kept 48 h now: a window starting 3 days back gets hours
    doc = expect(admin.get(data_path("io.ops[op]", start=-3 * 86400, seconds=3600,
                                     meta="true")), 200)
    assert doc["meta"]["granularity"] == "hour"


def test_sigkill_loses_at_most_the_unflushed_seconds(box):
    srv = box["srv"]
    admin = box["admin"]
    # seconds of the box held long enough to have been flushed (the tests before took
    # longer than that already, when run together)
    time.sleep(max(0, box["m"] + 14 - time.time()))
    held = expect(admin.get(data_path("io.ops[op]", start=-30)), 200)["data"]
    killed_at = time.time()
    srv.kill()
    with sqlite3.connect(srv.state_dir / "spindle.db") as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    srv.start()
    admin = box["admin"] = srv.admin()
    doc = expect(admin.get(data_path("io.ops[op]", start=int(killed_at) - 40, seconds=40,
                                     granularity="second")), 200)
    kept = {s["sample"]: s for s in rows(doc)}
    # flushed every 10 s: what the server held that was older than 11 s at the kill is on
    # disk, value for value
    due = [s for s in held if s["sample"] < killed_at - 11]
    assert due, "no second old enough to check"
    for s in due:
        assert kept.get(s["sample"]) == s, f"second {s['sample']} lost or changed"


def test_sigterm_keeps_every_second_and_ends_streams(box):
    """SIGTERM ends open streams with a whole document, flushes what memory holds and
    exits at once; restarted, the history and the settings are there, to the last
    second."""
    srv, admin, m = box["srv"], box["admin"], box["m"]
    before = expect(admin.get(data_path("io.ops[op]", start=m + 1, seconds=5)), 200)
    st = DataStream(srv, admin.token, data_path("io.ops[op]", start=-1, seconds=3600))
    lines = st.lines(timeout=15 * SLOW)
    next(lines)
    deadline = time.monotonic() + 5 * SLOW
    while not (recent := expect(admin.get(data_path("io.ops[op]", start=-3)), 200)["data"]):
        assert time.monotonic() < deadline, "no samples after the restart"
        time.sleep(0.2)
    last = recent[-1]["sample"]
    rc, took = srv.stop()
    rest = [line for _, line in lines]
    assert rc == 0 and took < 5 * SLOW, (rc, took)
    assert rest and rest[-1] == "]}", rest[-3:]

    srv.start()
    admin = box["admin"] = srv.admin()
    after = expect(admin.get(data_path("io.ops[op]", start=m + 1, seconds=5)), 200)
    assert rows(after) == rows(before), "history changed over a restart"
    doc = expect(admin.get(data_path("io.ops[op]", start=last, seconds=1)), 200)
    assert len(rows(doc)) == 1, f"the last second before SIGTERM ({last}) was lost"
    assert expect(admin.get(AN + "/settings"), 200)["settings"]["retain_minute_data"] == 48
    names = [d["name"] for d in expect(admin.get(AN + "/datasets"), 200)["datasets"]]
    assert "nic.kilobytes" in names and "io.latency[disk]" not in names


# ---- nothing to copy: no keys, an empty row (these matter under the sanitizer build,
# where UBSan stops the daemon at a memcpy from NULL even of 0 bytes) --------------------

def test_data_of_datasets_without_keys(spawn):
    """bench.latency[direction] before any run and a dataset without drilldown have no
    keys, even after the collector's seconds have passed: their data answers, and the
    daemon lives on. (bench.ops[direction] has read and write from the first second, at 0
    while no job runs, as io.ops of an idle box has its ops.)"""
    srv = spawn(*SHARED_SERVER_HW)
    admin = srv.admin()
    expect(admin.post(AN + "/datasets", json={"statistic": "mem.bytes"}), 201)
    deadline = time.monotonic() + 5 * SLOW
    ops = f"{AN}/datasets/{enc('bench.ops[direction]')}"
    while expect(admin.get(ops), 200)["dataset"]["keys"] != 2:
        assert time.monotonic() < deadline, "bench.ops[direction] got no read and write"
        time.sleep(0.2)
    for name in ("bench.latency[direction]", "mem.bytes"):
        assert expect(admin.get(f"{AN}/datasets/{enc(name)}"), 200)["dataset"]["keys"] == 0
        doc = expect(admin.get(data_path(name, start=-5, meta="true")), 200)
        assert doc["meta"]["dataset"] == name and isinstance(doc["data"], list), doc
        for s in rows(doc):
            assert s["data"]["data"] == [], (name, s)
    assert srv.running, srv.log_tail()


def test_an_empty_flush_row_is_skipped(spawn):
    """A flush row of no bytes (damage: the daemon never writes one) is logged and
    skipped when read back, and the window around it still answers."""
    srv = spawn(*SHARED_SERVER_HW)
    srv.stop()
    with sqlite3.connect(srv.state_dir / "spindle.db") as c:
        c.execute("INSERT INTO analytics_recent (start, span, data) VALUES (?, 1, x'')",
                  (int(time.time()) - 30,))
    c.close()
    srv.start()
    admin = srv.admin()
    deadline = time.monotonic() + 5 * SLOW
    while not expect(admin.get(f"{AN}/datasets/{enc('io.ops[op]')}"), 200)["dataset"]["keys"]:
        assert time.monotonic() < deadline, "io.ops[op] got no keys"
        time.sleep(0.2)
    expect(admin.get(data_path("io.ops[op]", start=-120, seconds=100, granularity="second")),
           200)
    assert srv.running and "is malformed; skipped" in srv.log_text(), srv.log_tail()


@contextlib.contextmanager
def plain_box(spawn, tmp_path):
    """A live box of one disk, one NIC and two CPUs, serving no protocol and with no ZFS,
    and its spindled once it has collected a second: (server, admin, FakeProc)."""
    proc = tmp_path / "root"
    live = FakeProc(proc, disks=1, nics=1, cpus=2, arc=False).start()
    try:
        srv = spawn("--proc-root", proc, *SHARED_SERVER_HW)
        admin = srv.admin()
        deadline = time.monotonic() + 5 * SLOW
        while not rows(expect(admin.get(data_path("io.ops", start=-3)), 200)):
            assert time.monotonic() < deadline, "no second collected"
            time.sleep(0.2)
        yield srv, admin, live
    finally:
        live.stop()


def test_a_protocol_the_box_does_not_serve_is_not_listed(spawn, tmp_path):
    """No NFS server (no /proc/net/rpc/nfsd) and no ZFS: neither their datasets nor any
    value of them, however long the box runs; the statistics can still be asked for."""
    with plain_box(spawn, tmp_path) as (srv, admin, live):
        names = {d["name"] for d in expect(admin.get(AN + "/datasets"), 200)["datasets"]}
        assert not {n for n in names if n.startswith(("nfs", "arc.", "iscsi", "fc."))}, names
        expect(admin.post(AN + "/datasets", json={"statistic": "nfs3.ops[op]"}), 201)
        time.sleep(1.5)
        assert rows(expect(admin.get(data_path("nfs3.ops[op]", start=-2)), 200)) == []


def test_the_arc_appearing_while_another_process_holds_the_database(spawn, tmp_path):
    """Another process (an administrator's sqlite3, a backup) holds the database's write
    lock when the ARC first appears: its datasets are written by the database writer, so
    the loop goes on answering meanwhile (it waited 5 s per row on the lock, 20 s in all);
    once the lock goes they are listed and collect the box's values."""
    with plain_box(spawn, tmp_path) as (srv, admin, live):
        held = sqlite3.connect(srv.state_dir / "spindle.db", isolation_level=None, timeout=10)
        held.execute("BEGIN IMMEDIATE")
        try:
            live.arc = True
            time.sleep(2.5)  # two ticks have seen the ARC
            # a client that gives up well before the loop would have answered: the rows'
            # waits on the lock end some 17 s after this asks
            r = admin.get(AN + "/datasets", timeout=10)
            names = {d["name"] for d in expect(r, 200)["datasets"]}
            assert not {n for n in names if n.startswith("arc.")}, names
        finally:
            held.execute("ROLLBACK")
            held.close()
        deadline = time.monotonic() + 10 * SLOW
        while True:
            names = {d["name"] for d in expect(admin.get(AN + "/datasets"), 200)["datasets"]}
            if "arc.accesses[hit/miss]" in names:
                break
            assert time.monotonic() < deadline, f"no ARC datasets: {names}"
            time.sleep(0.2)
        assert {"arc.size", "arc.size[component]", "arc.l2_size"} <= names, names
        while not rows(expect(admin.get(data_path("arc.accesses[hit/miss]", start=-3)), 200)):
            assert time.monotonic() < deadline, "no value of arc.accesses[hit/miss]"
            time.sleep(0.2)
        assert srv.running


FAKE_ZFS_BIN = Path(__file__).resolve().parent / "fixtures" / "zfsbin"
# Per second, as the fake zpool counts them (tests/api/fixtures/zfsbin/zpool): -w's columns
# total_wait r w, disk_wait r w, syncq_wait r w, asyncq_wait r w, scrub, trim by latency
# bucket j ([2^j, 2^(j+1)) ns); -r's sync ind r, agg r, ind w, agg w, async's alike, scrub,
# trim by size bucket j ([2^j, 2^(j+1)) bytes)
VDEV_RATES = {"tank": {"w": {"15": [1000, 500, 800, 400, 100, 0, 0, 50, 0, 0],
                             "20": [0, 250, 0, 100, 0, 0, 0, 200, 0, 0]},
                       "r": {"13": [1000, 0, 300, 0, 0, 0, 0, 100, 0, 0, 0, 0],
                             "17": [0, 200, 0, 0, 0, 0, 0, 400, 0, 0, 0, 0]}},
              "backup": {"w": {"15": [100, 0, 100, 0, 0, 0, 0, 0, 0, 0]},
                         "r": {"13": [100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}}}
VDEV_WANT = {
    "zpool.vdev_ops": {None: 1850},
    "zpool.vdev_ops[total_wait]": {None: 1850, "32768-65536": 1600, "1048576-2097152": 250},
    "zpool.vdev_ops[disk_wait]": {None: 1850, "32768-65536": 1300, "1048576-2097152": 100},
    "zpool.vdev_ops[syncq_wait]": {None: 1850, "32768-65536": 100},
    "zpool.vdev_ops[asyncq_wait]": {None: 1850, "32768-65536": 50, "1048576-2097152": 200},
    "zpool.vdev_ops[size]": {None: 1850, "8192-16384": 1500, "131072-262144": 600},
    "zpool.vdev_ops[op=read][size]": {None: 1100, "8192-16384": 1100, "131072-262144": 200},
    "zpool.vdev_ops[op=write][total_wait]": {None: 750, "32768-65536": 500,
                                             "1048576-2097152": 250},
}


def near(got, want):
    """The same keys, each value within 10 % of want's."""
    return set(got) == set(want) and all(abs(got[k] - v) <= 0.1 * v for k, v in want.items())


def mean_of(samples):
    """Each key's mean over the samples (a key missing from one counts 0 there). A second's
    value is what the fake counted between two readings a tick apart, each taken when its
    zpool started, which a busy machine delays by a varying fraction of a second: one
    second may be a tenth off, five together are not."""
    keys = set().union(*samples)
    return {k: sum(s.get(k, 0) for s in samples) / len(samples) for k in keys}


def test_zfs_vdev_heat_maps_from_zpool_iostat(spawn, tmp_path):
    """A ZFS box without the eBPF helper: zpool.vdev_ops from `zpool iostat -w` and `-r`
    (a fake zpool first on PATH, its counts growing with the clock), every pool summed,
    by wait or size, a direction kept with [op=...]: each key the rates, over the last
    five seconds with values (mean_of())."""
    rates = tmp_path / "iostat.json"
    rates.write_text(json.dumps(VDEV_RATES))
    proc = FakeProc(tmp_path / "root", disks=1, nics=1, cpus=2, arc=False).start()
    env = {**os.environ, "PATH": f"{FAKE_ZFS_BIN}:{os.environ['PATH']}",
           "FAKE_ZPOOL_IOSTAT": str(rates)}
    try:
        srv = spawn("--proc-root", proc.root, env=env)
        admin = srv.admin()
        for name in VDEV_WANT:
            d = expect(admin.post(AN + "/datasets", json={"statistic": name}), 201)["dataset"]
            assert d["name"] == name and d["statistic"] == "zpool.vdev_ops"
        for name, want in VDEV_WANT.items():
            deadline, seen = time.monotonic() + 20 * SLOW, []
            while True:
                # a minute: a starved machine runs the fake zpool seconds apart
                doc = expect(admin.get(data_path(name, start=-60, seconds=60)), 200)
                seen = [sample_values(s) for s in rows(doc) if s["data"]["value"] is not None]
                if len(seen) >= 5 and near(mean_of(seen[-5:]), want):
                    break
                assert time.monotonic() < deadline, f"{name}: {seen}"
                time.sleep(0.5)
    finally:
        proc.stop()
    # where no zpool is on PATH, the statistic is refused and says why
    bare = "/usr/bin:/bin"
    if shutil.which("zpool", path=bare) is None:
        srv = spawn("--proc-root", tmp_path / "root", env={**os.environ, "PATH": bare})
        fault = expect_fault(srv.admin().post(AN + "/datasets", json={
            "statistic": "zpool.vdev_ops[disk_wait]"}), 400)
        assert fault["details"] == ("statistic: zpool.vdev_ops needs ZFS: no zpool command "
                                    "on spindled's PATH"), fault
