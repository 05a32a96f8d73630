# SPDX-License-Identifier: ISC
"""Helpers for the spindle-worker tests: run the built worker on a spec, parse its NDJSON."""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.environ.get("SPINDLE_WORKER", os.path.join(ROOT, "server", "worker", "spindle-worker"))
# Runs a program with openat2() refused (ENOSYS), as under systemd's RestrictSUIDSGID=
# (make check builds it).
NO_OPENAT2 = os.path.join(ROOT, "tests", "worker", "no-openat2")


class Run:
    """One finished worker run: exit status, the parsed lines, and shortcuts to them."""

    def __init__(self, proc):
        self.status = proc.returncode
        self.stderr = proc.stderr
        self.lines = [json.loads(l) for l in proc.stdout.splitlines()]
        for line in self.lines:
            assert isinstance(line, dict) and line.get("type") in (
                "start", "interval", "result", "error"), line

    def of(self, kind):
        return [l for l in self.lines if l["type"] == kind]

    @property
    def start(self):
        return self.of("start")[0]

    @property
    def result(self):
        return self.of("result")[0]

    @property
    def error(self):
        return self.of("error")[0]


def run_worker(spec, *args, timeout=60, wrapper=()):
    """Runs the worker with the spec (a dict, or text) on stdin; wrapper is a command
    prefix (NO_OPENAT2)."""
    text = spec if isinstance(spec, str) else json.dumps(spec)
    proc = subprocess.run([*wrapper, WORKER, "--spec", "-", *args], input=text,
                          capture_output=True, text=True, timeout=timeout)
    return Run(proc)
