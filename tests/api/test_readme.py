# SPDX-License-Identifier: ISC
"""README.md followed to the letter, as a newcomer would: every ```sh block, top to bottom
in one bash, from a checkout-like directory (var/ is the state dir of a fresh spindled,
server/worker/spindle-worker the worker under test) against that spindled over HTTPS.

The examples are read from README.md itself, so a README change that breaks one fails
here. The only change made to them: https://localhost:8215 becomes the test server's
address. Each curl's trailing comment starts with the status it must answer ("# 201,
Location: ..."); a curl without one fails the test, and so does any command that fails
(the script runs under set -euo pipefail). curl is wrapped to record each answer's status
with --trace-ascii, which no example uses, so the examples run exactly as written.

The option lists in README.md are checked against --help of both programs as well."""
import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, SHARED_SERVER_HW, SLOW, SPINDLED, Server, assert_stopped_cleanly

README = REPO / "README.md"
WORKER = Path(SPINDLED).parent / "worker" / "spindle-worker"
URL = "https://localhost:8215"
SCRIPT_TIMEOUT = 300 * SLOW


def sh_blocks():
    return re.findall(r"^```sh\n(.*?)^```$", README.read_text(), re.M | re.S)


def text_blocks():
    return re.findall(r"^```text\n(.*?)^```$", README.read_text(), re.M | re.S)


def logical_lines(script):
    """Lines with their backslash continuations joined."""
    out, buf = [], ""
    for line in script.splitlines():
        if line.endswith("\\"):
            buf += line[:-1] + " "
        else:
            out.append(buf + line)
            buf = ""
    return out


def comment_of(line):
    """The shell comment ending a line: from the first # outside quotes after a blank."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i + 1:]
    return ""


def expected_statuses(script):
    """[(command, status)] for each curl the script runs, in order."""
    want = []
    for line in logical_lines(script):
        if line.lstrip().startswith("#"):
            continue
        calls = re.findall(r"(?:^|[\s(|;&])curl\s", line)
        if not calls:
            continue
        assert len(calls) == 1, f"one curl per command line, please: {line}"
        status = re.match(r"\s*(\d{3})\b", comment_of(line))
        assert status, f"README: this curl does not say the status it answers: {line}"
        want.append((line.strip(), int(status.group(1))))
    return want


def traced_statuses(trace_dir):
    """The status of each curl run, in order: the last status line each one received."""
    out = []
    traces = sorted(trace_dir.glob("*.trace"), key=lambda p: int(p.stem))
    for trace in traces:
        lines = re.findall(r"^0000: HTTP/[\d.]+ (\d{3})", trace.read_text(errors="replace"), re.M)
        out.append(int(lines[-1]) if lines else None)
    return out


def test_every_sh_example_answers_what_the_readme_says(tmp_path):
    blocks = sh_blocks()
    assert len(blocks) >= 5, "README.md has lost its examples"
    script = "\n".join(blocks)
    want = expected_statuses(script)
    assert len(want) >= 10, want

    checkout = tmp_path / "checkout"
    (checkout / "server" / "worker").mkdir(parents=True)
    os.symlink(WORKER, checkout / "server" / "worker" / "spindle-worker")
    srv = Server(checkout / "var", *SHARED_SERVER_HW).start()
    try:
        bin_dir, traces = tmp_path / "bin", tmp_path / "traces"
        bin_dir.mkdir()
        traces.mkdir()
        real_curl = shutil.which("curl")
        assert real_curl, "curl is not installed"
        wrapper = bin_dir / "curl"
        wrapper.write_text(
            "#!/bin/sh\n"
            'n=$(($(cat "$TRACES/n" 2>/dev/null || echo 0) + 1))\n'
            'echo "$n" > "$TRACES/n"\n'
            f'exec {real_curl} --trace-ascii "$TRACES/$n.trace" "$@"\n')
        wrapper.chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TRACES": str(traces)}
        run = script.replace(URL, f"https://127.0.0.1:{srv.port}")
        p = subprocess.run(["bash", "-c", "set -euo pipefail\n" + run], cwd=checkout, env=env,
                           capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
        output = f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
        got = traced_statuses(traces)
        for i, (command, status) in enumerate(want):
            answered = got[i] if i < len(got) else "not run"
            assert answered == status, \
                f"README example #{i + 1} answered {answered}, README says {status}:\n" \
                f"{command}\n{output}\n{srv.log_tail()}"
        assert p.returncode == 0, f"the README's examples failed ({p.returncode}):\n{output}"
        assert len(got) == len(want), (got, want)
    finally:
        assert_stopped_cleanly(srv)


def test_the_spindled_options_are_its_help():
    help_text = subprocess.run([SPINDLED, "--help"], capture_output=True, text=True,
                               check=True).stdout
    blocks = [b for b in text_blocks() if b.startswith("Usage: spindled")]
    assert blocks == [help_text], "README's spindled options are not `spindled --help`"


def test_the_worker_options_are_its_help():
    help_text = subprocess.run([WORKER, "--help"], capture_output=True, text=True,
                               check=True).stdout
    blocks = [b for b in text_blocks() if b.startswith("Usage: spindle-worker")]
    assert len(blocks) == 1, "README has no spindle-worker usage block"
    usage, _, options = blocks[0].partition("\n\n")
    assert help_text.startswith(usage + "\n"), usage
    assert options and options in help_text, "README's worker options are not its --help"
    for flag in re.findall(r"^  (--\w+)", help_text, re.M):
        assert f"`{flag}" in README.read_text() or flag in options, flag
