"""The chaos campaign's command line, where the benchmarks are run from:

    python benchmarks/chaos.py --seed 7 --duration 120 --assistants 12

The campaign itself is harness/chaos.py, shared with tests/system (which run it too)."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python benchmarks/chaos.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.chaos import main

if __name__ == "__main__":
    sys.exit(main())
