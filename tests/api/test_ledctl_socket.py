# SPDX-License-Identifier: ISC
"""ledctl through the root helper's socket (--ledctl-socket; packaging/systemd/
spindle-ledctl.socket, server/hardware/ledhelper.c): the daemon, which cannot run ledctl itself here
(not on its PATH), sends the request line; the real helper, started per connection as
systemd's Accept=yes would, runs the fake ledctl and answers."""
import os
import subprocess

import pytest

from conftest import REPO, Server, expect, expect_fault
from fixtures.hw import FakeCommands
from fixtures.unixsock import UnixListener
from test_hardware import HW, SDA, put_locate, small_box

HELPER = os.environ.get("SPINDLE_LEDCTL_HELPER", str(REPO / "server" / "spindle-ledctl-helper"))


class HelperSocket(UnixListener):
    """A listening socket that runs the helper on each connection, stdin and stdout, one
    connection after the other."""

    def __init__(self, path, sys_root, env):
        self.args = [HELPER, "--sys-root", str(sys_root)]
        self.env = env
        super().__init__(path, self.run)

    @property
    def connections(self):
        return self.accepted

    def run(self, conn):
        with conn:
            subprocess.run(self.args, stdin=conn, stdout=conn, env=self.env, timeout=30,
                           check=False)


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    if not os.access(HELPER, os.X_OK):
        pytest.fail(f"no {HELPER}: build it (make)")
    tmp = tmp_path_factory.mktemp("ledsock")
    fs = small_box(tmp / "root")
    cmds = FakeCommands(tmp / "bin")
    helper = HelperSocket(tmp / "ledctl.sock", fs.root, cmds.env())
    env = dict(os.environ)
    env["PATH"] = "/usr/bin:/bin"  # no ledctl for the daemon itself
    srv = Server(tmp / "state", "--sys-root", fs.root, "--led-command-timeout", "5",
                 "--ledctl-socket", helper.path, env=env).start()
    b = type("Box", (), {})()
    b.srv, b.admin, b.cmds, b.helper = srv, srv.admin(), cmds, helper
    yield b
    srv.stop()
    helper.close()


def test_ledctl_runs_through_the_helper(box):
    path = f"{HW}/system/disk/{SDA}"
    body = expect(put_locate(box.admin, path, True), 202)["disk"]
    assert (body["locate"], body["led_backend"]) == (True, "ledctl")
    expect(put_locate(box.admin, path, False), 202)
    assert box.cmds.calls() == ["ledctl locate=/dev/sda", "ledctl locate_off=/dev/sda"]
    assert box.helper.connections == 2


def test_the_helpers_refusal_or_failure_is_the_fault(box):
    box.cmds.clear()
    box.cmds.set_mode("ledctl", "fail")
    try:
        fault = expect_fault(put_locate(box.admin, f"{HW}/system/disk/{SDA}", True), 502)
    finally:
        box.cmds.set_mode("ledctl", "ok")
    assert "ledctl locate=/dev/sda failed with exit status 3" in fault["details"], fault
    assert "simulated failure" in fault["details"], fault
    assert expect(box.admin.get(f"{HW}/system/disk/{SDA}"), 200)["disk"]["locate"] is False


def test_a_socket_nobody_listens_on_is_a_clear_fault(box):
    box.helper.stop()  # the file stays, as after the socket unit was stopped
    fault = expect_fault(put_locate(box.admin, f"{HW}/system/disk/{SDA}", True), 502,
                         "ERR_BACKEND")
    assert f"cannot reach {box.helper.path}" in fault["details"], fault
