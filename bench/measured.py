"""Run `ragqa ...` in a child process and measure it: wall time and the child's own peak RSS.

Shared by the scale benchmarks (`python bench/<script>.py` puts bench/ on sys.path).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

# The child runs ragqa's CLI, then prints its own peak RSS (kB) as its last stderr line.
_MEASURED = (
    "import resource, runpy, sys\n"
    "sys.argv = ['ragqa', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('ragqa', run_name='__main__')\n"
    "finally:\n"
    "    print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
    " file=sys.stderr)\n"
)


def run_ragqa(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stdout) of one `ragqa ARGS` process; exits on failure."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURED, *args], env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ragqa {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
    peak_kb = int(done.stderr.strip().splitlines()[-1].split()[-1])
    return wall, peak_kb // 1024, done.stdout


def disk_mb(folder: Path) -> float:
    """Bytes on disk under a folder, in MB (what `du` counts, not apparent sizes)."""
    blocks = sum(p.stat().st_blocks for p in folder.rglob("*") if p.is_file())
    return round(blocks * 512 / 1e6, 1)
