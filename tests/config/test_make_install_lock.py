"""Two `make demo` at once on a fresh clone: the install step runs once, the second waits for
the first and finds it done (before, both ran pip over each other in one venv). A stand-in
`python` in the venv logs each pip run and takes a second over it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


MAKE = shutil.which("make")


@pytest.mark.skipif(MAKE is None, reason="needs make")
def test_two_installs_at_once_run_pip_once_and_never_overlap(tmp_path: Path):
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "start $*" >> {log}\nsleep 1\necho "end $*" >> {log}\n')
    python.chmod(0o755)
    target = str(venv / "bin" / ".installed")

    makes = [
        subprocess.Popen(
            [str(MAKE), "-s", f"VENV={venv}", target],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(2)
    ]
    outputs = [make.communicate(timeout=60)[0].decode() for make in makes]

    assert [make.returncode for make in makes] == [0, 0], outputs
    assert log.read_text().splitlines() == [
        "start -m pip install --quiet --upgrade pip",
        "end -m pip install --quiet --upgrade pip",
        "start -m pip install --quiet -e .",
        "end -m pip install --quiet -e .",
    ]
