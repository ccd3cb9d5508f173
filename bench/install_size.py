"""What `pip install` of ragqa weighs: a fresh venv per install target, its size on disk (`du`)
and its package count (`pip list`, pip and setuptools included), and the largest installed
distributions with the direct dependency of ragqa that brings each.

    python bench/install_size.py                       # `pip install .` of this checkout
    python bench/install_size.py --extras maps llama-index --source /path/to/old/checkout
    python bench/install_size.py --json > sizes.json

Each install takes 1-4 minutes (from the registry, or pip's cache). docs/benchmarks.md,
"Install", holds the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Run by the venv's own Python: each installed distribution's size from its RECORD, and which
# of ragqa's direct dependencies (with their extras) pulls it in.
_SIZES = r"""
import json, os, sys
from importlib import metadata
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name as cn

dists = {cn(d.metadata["Name"]): d for d in metadata.distributions()}

def size(d):
    files = {os.path.realpath(d.locate_file(f)) for f in d.files or []}
    return sum(os.path.getsize(p) for p in files if os.path.isfile(p))

def requires(name, extras):
    d = dists.get(name)
    out = []
    for text in (d.requires or []) if d else []:
        r = Requirement(text)
        if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("", *extras)):
            out.append((cn(r.name), tuple(r.extras)))
    return out

def closure(start):
    seen, stack = set(), [start]
    while stack:
        item = stack.pop()
        if item not in seen:
            seen.add(item)
            stack.extend(requires(*item))
    return {n for n, _ in seen}

extras = tuple(sys.argv[1:])
pulled = {}
for name, ex in requires("ragqa", extras):
    for dep in closure((name, ex)):
        pulled.setdefault(dep, set()).add(name)
print(json.dumps([{"name": n, "bytes": size(d), "by": sorted(pulled.get(n, []))}
                  for n, d in dists.items()]))
"""


def measure(source: Path, extras: list[str], top: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ragqa-size-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        target = f"{source}[{','.join(extras)}]" if extras else str(source)
        subprocess.run([python, "-m", "pip", "install", "-q", target], check=True)
        megabytes = int(subprocess.run(["du", "-sm", env_dir], capture_output=True, text=True,
                                       check=True).stdout.split()[0])
        listed = subprocess.run([python, "-m", "pip", "list", "--format", "json"],
                                capture_output=True, text=True, check=True).stdout
        sizes = json.loads(subprocess.run([python, "-c", _SIZES, *extras], capture_output=True,
                                          text=True, check=True).stdout)
    largest = sorted(sizes, key=lambda d: -d["bytes"])[:top]
    return {"target": target, "megabytes": megabytes, "packages": len(json.loads(listed)),
            "largest": [{"name": d["name"], "mib": round(d["bytes"] / 2**20, 1),
                         "by": d["by"]} for d in largest]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout to install")
    parser.add_argument("--extras", nargs="*", default=[], help="extras to install with it")
    parser.add_argument("--top", type=int, default=15, help="largest distributions shown")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.source.resolve(), args.extras, args.top)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{result['target']}: {result['megabytes']} MB, {result['packages']} packages")
    for d in result["largest"]:
        print(f"  {d['mib']:7.1f} MiB  {d['name']}  ({', '.join(d['by']) or 'ragqa itself'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
