# SPDX-License-Identifier: ISC
"""Browsers kept signed in: a password login registers a device (the public half of an EC
P-256 key pair, an uncompressed point on the curve), which later logs in by signing a
server challenge, with no password stored anywhere; each challenge logs in a device once;
a device ends when deleted, when its browser logs out, and with a password reset; refusals
name what was wrong and are throttled as password guesses are, and a device that logs in
too often is throttled too, without touching anyone else's. The keys are made here as a
browser's WebCrypto makes them (the e2e suite does it in Chromium)."""
import base64
import hashlib
import secrets
import sqlite3
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from conftest import (ACCESS, AUDIT, PASSWORD, USERS, Server, expect, expect_fault, make_user,
                      parse_time)

CHALLENGE = f"{ACCESS}/challenge"
DEVICE_LOGIN_LIMIT = 10  # logins in a row (within a minute of each other) before a device waits
# P-256: the field's prime and the group's order
P256_P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff
P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
# AlgorithmIdentifier of an EC key on P-256: id-ecPublicKey, prime256v1
P256_ALG = bytes.fromhex("301306072a8648ce3d020106082a8648ce3d030107")


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def spki(point):
    """base64url of a DER SubjectPublicKeyInfo of a P-256 key whose BIT STRING holds point
    as it is, whatever it is (all lengths here are short-form)."""
    bits = bytes([0x03, len(point) + 1, 0]) + point
    body = P256_ALG + bits
    return b64u(bytes([0x30, len(body)]) + body)


def forge_at_infinity(device_id, challenge):
    """The attacker's "signature" for a device whose key is the point at infinity Q, made
    with no private key: verifying computes (e/s)G + (r/s)Q = (e/s)G, so with any k,
    r = x(kG) and s = e/k give back kG, whose x is r."""
    msg = f"spindle-device-login\n{device_id}\n{challenge}".encode()
    e = int.from_bytes(hashlib.sha256(msg).digest(), "big") % P256_N
    k = secrets.randbelow(P256_N - 1) + 1
    r = ec.derive_private_key(k, ec.SECP256R1()).public_key().public_numbers().x % P256_N
    s = e * pow(k, -1, P256_N) % P256_N
    return b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


class Device:
    """A browser's key pair, as WebCrypto makes one (ECDSA, namedCurve P-256) and signs with
    it (r | s, 32 bytes each)."""

    def __init__(self, name="Chromium on Linux", curve=None):
        self.key = ec.generate_private_key(curve or ec.SECP256R1())
        self.name = name
        self.public_key = b64u(self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
        self.id = None

    def register(self):
        return {"name": self.name, "public_key": self.public_key}

    def sign(self, challenge, device_id=None):
        msg = f"spindle-device-login\n{device_id or self.id}\n{challenge}".encode()
        r, s = decode_dss_signature(self.key.sign(msg, ec.ECDSA(hashes.SHA256())))
        return b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def keep(self, srv, user, password, source=None):
        """Logs in with the password, keeping this browser signed in; the login's access."""
        resp = srv.client(source=source).post(
            ACCESS, json={"user": user, "password": password, "device": self.register()})
        access = expect(resp, 201)["access"]
        self.id = access["device"]["id"]
        return access

    def login(self, srv, source=None, challenge=None):
        """A device login: a challenge asked for and signed; the response."""
        c = srv.client(source=source)
        challenge = challenge or expect(c.post(CHALLENGE), 200)["challenge"]["value"]
        return c.post(ACCESS, json={"device_id": self.id, "challenge": challenge,
                                    "signature": self.sign(challenge)})


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("devices") / "state").start()
    yield s
    s.stop()


def devices_of(admin, user):
    return expect(admin.get(f"{USERS}/{user}/devices"), 200)["devices"]


def test_a_monitor_keeps_a_phone_signed_in(srv):
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    phone = Device("Chrome on Android")
    before = time.time()
    access = phone.keep(srv, user, PASSWORD)
    dev = access["device"]
    assert dev["name"] == "Chrome on Android" and dev["user"] == user
    assert len(dev["id"]) == 32 and "public_key" not in dev
    # 30 days after its last login
    assert parse_time(dev["expires"]).timestamp() == pytest.approx(before + 30 * 86400, abs=5)
    # its session works, and is an ordinary login session
    mine = srv.client(access["token"])
    expect(mine.get("/api/system/v1/version"), 200)
    listed = devices_of(mine, user)  # one's own, without user:read
    assert [d["id"] for d in listed] == [dev["id"]]
    assert listed[0]["href"] == f"{USERS}/{user}/devices/{dev['id']}"

    # later, with no password: a challenge signed with the key the browser kept
    c = srv.client()
    chal = expect(c.post(CHALLENGE), 200)["challenge"]
    assert len(chal["value"]) == 54 and set(chal) == {"value", "expires"}
    assert parse_time(chal["expires"]).timestamp() == pytest.approx(time.time() + 120, abs=5)
    resp = c.post(ACCESS, json={"device_id": phone.id, "challenge": chal["value"],
                                "signature": phone.sign(chal["value"])})
    again = expect(resp, 201)["access"]
    assert again["user"] == user and again["device"]["id"] == phone.id
    assert resp.headers["X-Auth-Session"] == again["token"] != access["token"]
    assert set(again["authorizations"]) == set(access["authorizations"])
    expect(srv.client(again["token"]).get("/api/analytics/v1/datasets"), 200)
    # the same challenge logs in once
    expect_fault(c.post(ACCESS, json={"device_id": phone.id, "challenge": chal["value"],
                                      "signature": phone.sign(chal["value"])}),
                 401, "ERR_UNAUTHORIZED", "challenge: already used")
    # the audit trail says which device
    logs = [l for l in expect(admin.get(f"{AUDIT}?start=0&limit=1000"), 200)["logs"]
            if l["user"] == user and l["action"] == "login"]
    assert any("kept signed in" in l["details"] for l in logs), logs
    assert any(f"device 'Chrome on Android' ({phone.id[:8]})" in l["details"] for l in logs)


def test_refusals_name_what_was_wrong(srv):
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    c = srv.client()
    # registrations refused before the password is checked, and nothing kept
    p384 = Device(curve=ec.SECP384R1())
    for device, details in (
            ({"name": "x", "public_key": p384.public_key}, "device.public_key: must be an ECDSA P-256"),
            ({"name": "x", "public_key": "not=base64"}, "device.public_key: must be base64url"),
            ({"name": "x", "public_key": b64u(b"\x30\x03\x02\x01\x01")}, "device.public_key"),
            ({"public_key": Device().public_key}, "device.name"),
            ({"name": "", "public_key": Device().public_key}, "device.name"),
            ({"name": "tab\there", "public_key": Device().public_key}, "device.name: no control"),
            ({"name": "x", "public_key": Device().public_key, "colour": 1}, "device.colour"),
    ):
        expect_fault(c.post(ACCESS, json={"user": user, "password": PASSWORD,
                                          "device": device}), 400, details=details)
    expect_fault(c.post(ACCESS, json={"user": user, "password": PASSWORD, "device": "phone"}),
                 400, details="device")
    # credentials in the headers (as appliance clients send them), the device in the body
    hdr = Device("curl")
    resp = c.post(ACCESS, auth=(user, PASSWORD), json={"device": hdr.register()})
    assert expect(resp, 201)["access"]["device"]["name"] == "curl"
    expect_fault(c.post(ACCESS, auth=(user, PASSWORD), json={"device": {"name": "x"}}), 400,
                 details="device.public_key")
    for d in devices_of(admin, user):
        expect(admin.delete(f"{USERS}/{user}/devices/{d['id']}"), 204)
    assert devices_of(admin, user) == []

    dev = Device()
    dev.keep(srv, user, PASSWORD)
    chal = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    cases = [
        ({"device_id": dev.id, "challenge": chal}, 400, "signature: required"),
        ({"device_id": dev.id, "signature": dev.sign(chal)}, 400, "challenge: required"),
        ({"device_id": dev.id, "challenge": chal, "signature": dev.sign(chal),
          "password": PASSWORD}, 400, "password: a device login"),
        ({"user": user, "password": PASSWORD, "challenge": chal}, 400,
         "challenge: belongs to a device login"),
    ]
    for body, status, details in cases:
        expect_fault(c.post(ACCESS, json=body), status, details=details)
    # a challenge this server did not make: one byte of its MAC changed
    forged = chal[:-2] + ("A" if chal[-2] != "A" else "B") + chal[-1]
    expect_fault(dev.login(srv, challenge=forged), 401, "ERR_UNAUTHORIZED",
                 "challenge: not one of this server's")
    expect_fault(dev.login(srv, challenge="short"), 401, details="challenge: not one")
    # signed by another key, or not a signature at all
    other = Device()
    ch = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    expect_fault(c.post(ACCESS, json={"device_id": dev.id, "challenge": ch,
                                      "signature": other.sign(ch, dev.id)}),
                 401, details="signature: does not verify")
    ch = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    expect_fault(c.post(ACCESS, json={"device_id": dev.id, "challenge": ch,
                                      "signature": b64u(b"\x01" * 63)}),
                 401, details="signature: must be base64url")
    # the signature binds the device: one device's signature does not log in another
    ch = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    expect_fault(c.post(ACCESS, json={"device_id": dev.id, "challenge": ch,
                                      "signature": dev.sign(ch, "0" * 32)}),
                 401, details="signature: does not verify")
    expect_fault(c.post(ACCESS, json={"device_id": "0" * 32, "challenge": ch,
                                      "signature": dev.sign(ch)}),
                 401, details="device_id: not a device of this server")
    # a good one still logs in after all that (from another address than the refusals')
    expect(dev.login(srv, source="127.0.0.5"), 201)


def test_a_guesser_is_throttled_as_a_password_guesser_is(srv):
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    dev = Device()
    dev.keep(srv, user, PASSWORD)
    wrong = Device()
    src = "127.0.0.7"
    c = srv.client(source=src)
    statuses = []
    for _ in range(7):
        ch = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
        statuses.append(c.post(ACCESS, json={"device_id": dev.id, "challenge": ch,
                                             "signature": wrong.sign(ch, dev.id)}).status_code)
    assert statuses[:5] == [401] * 5 and statuses[5:] == [429, 429], statuses
    # locked for that address: even the right key waits there
    resp = dev.login(srv, source=src)
    expect_fault(resp, 429, "ERR_TOO_MANY")
    assert int(resp.headers["Retry-After"]) > 0
    # not elsewhere: a guesser does not lock the owner out
    expect(dev.login(srv, source="127.0.0.8"), 201)


def test_revoked_devices_and_their_sessions_end(srv):
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    mon_pw = PASSWORD
    a, b, c = Device("a"), Device("b"), Device("c")
    ta = a.keep(srv, user, mon_pw)["token"]
    b.keep(srv, user, mon_pw)
    c.keep(srv, user, mon_pw)
    tb = expect(b.login(srv), 201)["access"]["token"]
    assert {d["name"] for d in devices_of(admin, user)} == {"a", "b", "c"}

    # deleted by its user: it cannot log in, and the sessions it opened end at once
    mine = srv.client(tb)
    expect(mine.delete(f"{USERS}/{user}/devices/{b.id}"), 204)
    expect_fault(mine.get("/api/system/v1/version"), 401)
    expect_fault(b.login(srv), 401, details="device_id: not a device of this server")
    expect_fault(srv.client(ta).delete(f"{USERS}/{user}/devices/{b.id}"), 404,
                 details="not found")
    # another user's, without user:modify: refused
    other = make_user(admin, ["monitor"])
    stranger = srv.login_client(other, PASSWORD)
    expect_fault(stranger.delete(f"{USERS}/{user}/devices/{a.id}"), 403)
    expect_fault(stranger.get(f"{USERS}/{user}/devices"), 403)

    # its browser logs out: the device goes with the session
    expect(srv.client(ta).delete(ACCESS), 204)
    expect_fault(a.login(srv), 401, details="device_id: not a device")
    assert [d["name"] for d in devices_of(admin, user)] == ["c"]

    # a password reset ends them all
    tc = expect(c.login(srv), 201)["access"]["token"]
    expect(admin.put(f"{USERS}/{user}", json={"password": "Another-password-9"}), 200)
    expect_fault(srv.client(tc).get("/api/system/v1/version"), 401)
    expect_fault(c.login(srv), 401, details="device_id: not a device")
    assert devices_of(admin, user) == []

    # a deleted user's devices go with it
    d = Device()
    d.keep(srv, other, PASSWORD)
    expect(admin.delete(f"{USERS}/{other}"), 204)
    expect_fault(d.login(srv), 401, details="device_id: not a device")


def test_devices_survive_a_restart_but_challenges_do_not(tmp_path):
    s = Server(tmp_path / "state").start()
    try:
        user = make_user(s.admin(), ["monitor"])
        dev = Device()
        dev.keep(s, user, PASSWORD)
        old = expect(s.client().post(CHALLENGE), 200)["challenge"]["value"]
        s.stop()
        s.start()
        expect_fault(dev.login(s, challenge=old), 401, details="before it restarted")
        assert expect(dev.login(s), 201)["access"]["user"] == user
    finally:
        s.stop()


def test_a_user_keeps_at_most_twenty(srv):
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    first = Device("first")
    first.keep(srv, user, PASSWORD)
    for i in range(20):
        Device(f"d{i}").keep(srv, user, PASSWORD, source="127.0.0.9")
    names = [d["name"] for d in devices_of(admin, user)]
    assert len(names) == 20 and "first" not in names, names
    # (from an address of its own: the other tests' refused devices count against theirs)
    expect_fault(first.login(srv, source="127.0.0.10"), 401, details="device_id: not a device")


def test_a_key_is_an_uncompressed_point_on_the_curve(srv):
    """The point at infinity (BIT STRING 00) would verify a signature made with no key at
    all; compressed and hybrid encodings are not what WebCrypto exports; a point off the
    curve is no key: each is refused naming the field, and nothing is kept."""
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    pub = ec.generate_private_key(ec.SECP256R1()).public_key()
    x, y = pub.public_numbers().x, pub.public_numbers().y
    X, Y = x.to_bytes(32, "big"), y.to_bytes(32, "big")
    # (spki() makes of the uncompressed point what the browser and python-cryptography do)
    assert spki(b"\x04" + X + Y) == b64u(pub.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    c = srv.client(source="127.0.0.12")
    for what, point in (
            ("the point at infinity", b"\x00"),
            ("compressed", bytes([0x02 | (y & 1)]) + X),
            ("compressed, the other y", bytes([0x03 ^ (y & 1)]) + X),
            ("hybrid", bytes([0x06 | (y & 1)]) + X + Y),
            ("off the curve", b"\x04" + X + ((y + 1) % P256_P).to_bytes(32, "big")),
            ("coordinates past the prime", b"\x04" + b"\xff" * 64),
            ("no point", b""),
    ):
        expect_fault(c.post(ACCESS, json={"user": user, "password": PASSWORD,
                                          "device": {"name": what, "public_key": spki(point)}}),
                     400, "ERR_INVALID_ARG", "device.public_key: must be")
    assert devices_of(admin, user) == []
    # the same key, uncompressed, is kept
    resp = c.post(ACCESS, json={"user": user, "password": PASSWORD,
                                "device": {"name": "good", "public_key": spki(b"\x04" + X + Y)}})
    expect(resp, 201)
    assert [d["name"] for d in devices_of(admin, user)] == ["good"]


def test_a_stored_key_at_infinity_logs_nobody_in(spawn):
    """A device row with the point at infinity for its key (registered before the check, or
    written behind the server's back): the attacker's forgery, made with no key, does not
    log in as its user."""
    srv = spawn()
    user = make_user(srv.admin(), ["monitor"])
    srv.stop()
    dev_id, now = secrets.token_hex(16), int(time.time())
    with sqlite3.connect(srv.state_dir / "spindle.db") as db:
        db.execute("INSERT INTO devices (id, user, name, public_key, address, created, "
                   "last_used, expires) VALUES (?, ?, 'at infinity', ?, '', ?, ?, ?)",
                   (dev_id, user, spki(b"\x00"), now, now, now + 86400))
    db.close()
    srv.start()
    c = srv.client()
    for _ in range(3):  # (each draw of k verifies on a server without the check)
        ch = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
        expect_fault(c.post(ACCESS, json={"device_id": dev_id, "challenge": ch,
                                          "signature": forge_at_infinity(dev_id, ch)}),
                     401, "ERR_UNAUTHORIZED", "device_id: its stored key is unusable")


def test_a_challenge_logs_in_each_device_once_in_any_order(srv):
    """Replays are refused per device; two tabs of one browser that asked for a challenge
    each log in in either order; another device's use of a challenge is no concern of this
    one (each signs its own id)."""
    admin = srv.admin()
    user = make_user(admin, ["monitor"])
    a, b = Device("a"), Device("b")
    a.keep(srv, user, PASSWORD)
    b.keep(srv, user, PASSWORD)
    c = srv.client(source="127.0.0.13")
    older = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    newer = expect(c.post(CHALLENGE), 200)["challenge"]["value"]
    expect(a.login(srv, challenge=newer), 201)
    expect_fault(a.login(srv, challenge=newer), 401, details="challenge: already used")
    expect(a.login(srv, challenge=older), 201)
    expect_fault(a.login(srv, challenge=older), 401, details="challenge: already used")
    expect(b.login(srv, challenge=older), 201)
    expect(b.login(srv, challenge=newer), 201)
    expect(a.login(srv), 201)


def test_one_accounts_device_logins_leave_everyone_elses_alone(srv):
    """The attacker's sequence: a monitor's device logs in over and over (once that filled
    the one set of used challenges all users shared, and everyone's device logins were
    refused with 503 while it went on). Its own device is held after a bounded number
    (429 with Retry-After, as a locked guesser is); the admin's device logs in throughout,
    from the same address."""
    admin = srv.admin()
    mon = make_user(admin, ["monitor"])
    src = "127.0.0.14"
    flood, mine = Device("the monitor's"), Device("the admin's")
    flood.keep(srv, mon, PASSWORD, source=src)
    mine.keep(srv, "admin", srv.admin_password, source=src)
    statuses, held = [], None
    for i in range(DEVICE_LOGIN_LIMIT + 10):
        resp = flood.login(srv, source=src)
        statuses.append(resp.status_code)
        if resp.status_code == 429:
            held = resp
        if i % 4 == 3:
            expect(mine.login(srv, source=src), 201)
    assert statuses == [201] * DEVICE_LOGIN_LIMIT + [429] * 10, statuses
    expect_fault(held, 429, "ERR_TOO_MANY", "device_id: this device logged in too often")
    assert 0 < int(held.headers["Retry-After"]) <= 30
    # held whatever it signs, and whoever asks; everyone else's devices log in
    expect_fault(flood.login(srv, source="127.0.0.15"), 429, "ERR_TOO_MANY")
    expect(mine.login(srv, source=src), 201)
    other = Device("the monitor's phone")
    other.keep(srv, mon, PASSWORD, source=src)
    expect(other.login(srv, source=src), 201)
