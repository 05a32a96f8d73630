# SPDX-License-Identifier: ISC
"""The network service as the appliance's clients read it: an inventory tool decoding
devices, datalinks, interfaces and routes (Basic credentials on every request). On a fake
/sys and /proc (a bond of two NICs with a VLAN on it, a NIC that is down, a bridge) for
exact answers, and on this box's own, held to what `ip` says the kernel has."""
import ipaddress
import json
import os
import shutil
import subprocess

import pytest

from conftest import expect, expect_fault

NET = "/api/network/v1"


def link(root, name, *, type_=1, mac="00:00:00:00:00:00", mtu=1500, oper="up", carrier=1,
         flags=0x1003, speed=None, duplex=None, device=False, devtype=None, master=None,
         lower=(), bond=None, perm=None):
    """One link of /sys/class/net as the kernel shows it."""
    d = root / "sys" / "class" / "net" / name
    d.mkdir(parents=True)
    files = {"type": type_, "address": mac, "mtu": mtu, "operstate": oper,
             "carrier": carrier, "flags": hex(flags), "ifindex": 1}
    if speed is not None:
        files["speed"] = speed
    if duplex is not None:
        files["duplex"] = duplex
    for k, v in files.items():
        (d / k).write_text(f"{v}\n")
    (d / "uevent").write_text(f"INTERFACE={name}\n" + (f"DEVTYPE={devtype}\n" if devtype else ""))
    if device:
        pci = root / "sys" / "devices" / "pci0000:00" / name
        pci.mkdir(parents=True)
        (d / "device").symlink_to(pci)
    if master:
        (d / "master").symlink_to(f"../{master}")
    for low in lower:
        (d / f"lower_{low}").symlink_to(f"../{low}")
    if bond:
        (d / "bonding").mkdir()
        (d / "bonding" / "slaves").write_text(" ".join(bond["slaves"]) + "\n")
        (d / "bonding" / "mode").write_text(bond["mode"] + "\n")
        (d / "bonding" / "xmit_hash_policy").write_text(bond["policy"] + "\n")
    if perm:
        (d / "bonding_slave").mkdir()
        (d / "bonding_slave" / "perm_hwaddr").write_text(perm + "\n")


ROUTES4 = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
bond0.100\t00000000\t0164A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
bond0.100\t0064A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth2\t0000000A\t00000000\t0000\t0\t0\t0\t000000FF\t0\t0\t0
"""
# 2001:db8:100::/64 on bond0.100, default via 2001:db8:100::1, fe80::/64, the loopback's, a
# multicast one: the last three are the kernel's own
ROUTES6 = (
    "20010db8010000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001 bond0.100\n"
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "20010db8010000000000000000000001 00000400 00000001 00000000 00000003 bond0.100\n"
    "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001 bond0.100\n"
    "00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n"
    "ff000000000000000000000000000000 08 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000004 00000000 00000001 bond0.100\n")


@pytest.fixture
def box(spawn, tmp_path):
    root = tmp_path / "box"
    link(root, "lo", type_=772, mtu=65536, oper="unknown", flags=0x9)
    link(root, "eth0", mac="0a:21:28:a1:d9:68", speed=10000, duplex="full", device=True,
         master="bond0", perm="00:21:28:a1:d9:68", flags=0x1803)
    link(root, "eth1", mac="0a:21:28:a1:d9:68", speed=10000, duplex="full", device=True,
         master="bond0", perm="00:21:28:a1:d9:69", flags=0x1803)
    link(root, "eth2", mac="00:21:28:a1:d9:6a", oper="down", carrier=0, flags=0x1002,
         device=True)
    link(root, "bond0", mac="0a:21:28:a1:d9:68", mtu=9000, devtype="bond",
         bond={"slaves": ["eth0", "eth1"], "mode": "802.3ad 4", "policy": "layer3+4 1"},
         flags=0x1403)
    link(root, "bond0.100", mac="0a:21:28:a1:d9:68", mtu=9000, devtype="vlan",
         lower=["bond0"])
    link(root, "br0", mac="02:00:00:00:00:01", devtype="bridge", flags=0x1003)
    (root / "sys" / "class" / "net" / "bonding_masters").write_text("bond0\n")
    (root / "proc" / "net" / "vlan").mkdir(parents=True)
    (root / "proc" / "net" / "vlan" / "bond0.100").write_text(
        "bond0.100  VID: 100\t REORDER_HDR: 1  dev->priv_flags: 1001\n")
    (root / "proc" / "net" / "route").write_text(ROUTES4)
    (root / "proc" / "net" / "ipv6_route").write_text(ROUTES6)
    srv = spawn("--sys-root", root, "--proc-root", root, "--system-led-backend", "virtual",
                "--disk-led-backend", "virtual")
    c = srv.client()
    c.http.auth = ("admin", srv.admin_password)
    return c


def listing(c, kind):
    doc = expect(c.get(f"{NET}/{kind}"), 200)
    assert list(doc) == [kind], list(doc)
    return {o[kind[:-1]]: o for o in doc[kind]}


def test_devices_are_the_physical_nics(box):
    devs = listing(box, "devices")
    assert set(devs) == {"eth0", "eth1", "eth2"}
    for name, d in devs.items():
        # as the inventory tool's struct decodes a device
        assert {"active", "device", "duplex", "factory_mac", "href", "media", "speed",
                "up"} <= set(d)
        assert isinstance(d["active"], bool) and isinstance(d["up"], bool)
        assert d["href"] == f"{NET}/devices/{name}" and d["media"] == "Ethernet"
    e0 = devs["eth0"]
    # a bond's slave shows the bond's MAC; its factory one is kept, written as Solaris does
    assert e0["factory_mac"] == "0:21:28:a1:d9:68" and e0["mac"] == "0a:21:28:a1:d9:68"
    assert (e0["speed"], e0["duplex"], e0["up"], e0["active"]) == \
        ("10000 Mbit/s", "full-duplex", True, True)
    e2 = devs["eth2"]
    assert (e2["up"], e2["active"], e2["speed"]) == (False, False, "0 Mbit/s")
    # one device answers under "devices", as the guide's Get Network Device does
    one = expect(box.get(f"{NET}/devices/eth0"), 200)
    assert list(one) == ["devices"] and one["devices"] == e0
    expect_fault(box.get(f"{NET}/devices/bond0"), 404, "ERR_NOT_FOUND", "device")


def test_datalinks_by_class(box):
    dl = listing(box, "datalinks")
    assert set(dl) == {"eth0", "eth1", "eth2", "bond0", "bond0.100", "br0"}  # no loopback
    assert (dl["eth0"]["class"], dl["eth0"]["links"]) == ("device", ["eth0"])
    b = dl["bond0"]
    assert (b["class"], b["links"], b["mtu"], b["jumbo"]) == \
        ("aggregation", ["eth0", "eth1"], 9000, True)
    assert (b["mode"], b["policy"]) == ("802.3ad", "layer3+4")
    v = dl["bond0.100"]
    assert (v["class"], v["links"], v["id"]) == ("vlan", ["bond0"], 100)
    assert dl["br0"]["class"] == "vnic" and dl["br0"]["kind"] == "bridge"
    for name, d in dl.items():
        assert {"class", "label", "mac", "links", "datalink", "href"} <= set(d)
        assert expect(box.get(d["href"]), 200) == {"datalink": d}


def test_interfaces_leave_out_ports_and_links_that_are_down(box):
    ifs = listing(box, "interfaces")
    # eth0 and eth1 are bond0's ports; eth2 is down with no address; lo is the loopback's
    assert set(ifs) == {"bond0", "bond0.100", "br0"}
    for name, i in ifs.items():
        for key in ("state", "curaddrs", "class", "label", "enable", "admin", "links",
                    "v4addrs", "v4dhcp", "v4directnets", "v6addrs", "v6dhcp",
                    "v6directnets", "interface", "href"):
            assert key in i, (name, key)
        # a faked /sys has no addresses of its own: the kernel's are this box's links'
        assert i["curaddrs"] == [] and i["state"] == "up" and i["class"] == "ip"
    assert expect(box.get(f"{NET}/interfaces/bond0.100"), 200) == {
        "interface": ifs["bond0.100"]}


def test_routes_as_the_guide_lists_them(box):
    doc = expect(box.get(f"{NET}/routes"), 200)
    assert list(doc) == ["routes"]
    got = [(r["destination"], r["mask"], r["gateway"], r["interface"], r["family"], r["type"],
            r["status"]) for r in doc["routes"]]
    assert got == [
        ("0.0.0.0", 0, "192.168.100.1", "bond0.100", "IPv4", "static", "active"),
        ("192.168.100.0", 24, "0.0.0.0", "bond0.100", "IPv4", "system", "active"),
        ("10.0.0.0", 8, "0.0.0.0", "eth2", "IPv4", "system", "inactive"),
        ("2001:db8:100::", 64, "::", "bond0.100", "IPv6", "system", "active"),
        ("::", 0, "2001:db8:100::1", "bond0.100", "IPv6", "static", "active"),
    ]
    for i, r in enumerate(doc["routes"]):
        assert r["route"] == f"route-{i:03d}" and r["href"] == f"{NET}/routes/route-{i:03d}"
        assert isinstance(r["mask"], int)
        assert expect(box.get(r["href"]), 200) == {"route": r}
    expect_fault(box.get(f"{NET}/routes/route-999"), 404, "ERR_NOT_FOUND", "route")


def test_the_service_is_read_only(box):
    for method, path in [("POST", f"{NET}/interfaces"), ("PUT", f"{NET}/datalinks/bond0"),
                         ("DELETE", f"{NET}/routes/route-000"), ("PUT", f"{NET}/devices/eth0")]:
        resp = box.request(method, path, json={"mtu": 1500})
        expect_fault(resp, 405, "ERR_METHOD")
        assert resp.headers["Allow"].startswith("GET"), (method, path)
    svc = expect(box.get(NET), 200)["service"]
    assert {m["uri"] for m in svc["methods"]} >= {f"{NET}/devices", f"{NET}/routes/{{route}}"}


# ---- this box, as the kernel has it ------------------------------------------------------

def ip_json(*args):
    if not shutil.which("ip"):
        pytest.skip("iproute2's ip is not installed (./quickstart installs it)")
    return json.loads(subprocess.run(["ip", "-j", *args], check=True, capture_output=True,
                                     text=True).stdout or "[]")


def test_this_boxs_interfaces_have_the_kernels_addresses(server, admin):
    ifs = {i["interface"]: i for i in expect(admin.get(f"{NET}/interfaces"), 200)["interfaces"]}
    links = {l["ifname"]: l for l in ip_json("addr")}
    for name, l in links.items():
        addrs = [f"{a['local']}/{a['prefixlen']}" for a in l.get("addr_info", [])]
        listed = name in ifs
        wanted = name != "lo" and "master" not in l and ("UP" in l["flags"] or addrs)
        assert listed == bool(wanted), (name, l, ifs.get(name))
        if not listed:
            continue
        i = ifs[name]
        assert sorted(i["curaddrs"]) == sorted(addrs), (name, i, addrs)
        v4 = [a for a in addrs if ipaddress.ip_interface(a).version == 4]
        assert sorted(i["v4addrs"]) == sorted(v4)
        assert i["state"] == ("up" if "UP" in l["flags"] and l["operstate"] != "DOWN"
                              else "down" if "UP" in l["flags"] else "disabled"), (i, l)


def test_this_boxs_routes_are_the_kernels(server, admin):
    """The main table's unicast routes, IPv4 and IPv6 (the kernel's own link-local ones
    left out, as the appliance lists only what routes traffic off the box)."""
    routes = expect(admin.get(f"{NET}/routes"), 200)["routes"]
    ours = {(r["destination"], r["mask"], r["gateway"], r["interface"]) for r in routes}
    theirs = set()
    for family, any_addr in (("-4", "0.0.0.0"), ("-6", "::")):
        for r in ip_json(family, "route", "show", "table", "main"):
            if r.get("type", "unicast") != "unicast":
                continue
            net = ipaddress.ip_network(f"{any_addr}/0" if r["dst"] == "default" else r["dst"])
            if net.is_link_local:
                continue
            theirs.add((str(net.network_address), net.prefixlen, r.get("gateway", any_addr),
                        r["dev"]))
    assert ours == theirs
