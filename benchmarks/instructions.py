"""Both engines on the whole corpus, counted in instructions (valgrind's callgrind).

Wall and CPU times swing by 30% and more from run to run on a shared machine;
an instruction count does not. This script runs, each under
``valgrind --tool=callgrind``, a process that loads the corpus and warms both
engines (the *setup*), and the same process followed by the whole corpus through
one engine, one ``eqsat.optimize`` call a case (as ``eqsat batch`` runs them).
Each engine's count is its run minus the setup; the ratio e-graph/baseline is what
compare.py's CPU ratio estimates, without the noise (it leaves out cache misses and
page faults, which counts do not see). Takes a few minutes: callgrind runs Python
about 50 times slower.

Usage: ``python3 benchmarks/instructions.py [--corpus JSONL]
[--keep DIR]`` (``--keep``: leave the callgrind files there, for
``callgrind_annotate``). Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.corpus import corpus_path  # noqa: E402

_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from benchmarks.compare import load
from eqsat.api import Budget, optimize
from eqsat.engines.egraph import session_for
from eqsat.ir.sexpr import parse
from extraction import get_cost_model
rows = load({corpus!r})
graphs = [parse(r["expr"]) for r in rows]
model = get_cost_model("reference")
session_for(None)
optimize(graphs[0], engine="baseline", cost_model=model)
mode = {mode!r}
# a generous time budget: the count must not depend on the machine's speed
budget = Budget(seconds=60.0)
if mode in ("baseline", "egraph"):
    for g in graphs:
        optimize(g, engine=mode, cost_model=model, budget=budget)
"""


def count(mode: str, corpus: str, out_dir: Path) -> int:
    """Instructions of one child process (``setup``, ``baseline`` or ``egraph``)."""
    out = out_dir / f"callgrind.{mode}.out"
    code = _CHILD.format(repo=str(REPO), corpus=corpus, mode=mode)
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"the {mode} run failed under valgrind (exit {p.returncode}):\n"
                           f"{p.stderr[-2000:]}")
    m = re.search(r"^totals:\s+(\d+)", out.read_text(), re.M)
    if m is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=None, help="corpus JSONL (default: the repository's)")
    ap.add_argument("--keep", type=Path, help="keep the callgrind files in this folder")
    a = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not on the PATH (apt-get install valgrind)", file=sys.stderr)
        return 2
    corpus = str(a.corpus or corpus_path())
    if not Path(corpus).is_file():
        print(f"corpus not found: {corpus}", file=sys.stderr)
        return 2
    out_dir = a.keep or Path(tempfile.mkdtemp(prefix="eqsat-callgrind-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        setup = count("setup", corpus, out_dir)
        base = count("baseline", corpus, out_dir) - setup
        eg = count("egraph", corpus, out_dir) - setup
    finally:
        if a.keep is None:
            shutil.rmtree(out_dir, ignore_errors=True)
    print(f"corpus {corpus}; one optimize call a case; instructions (callgrind), setup "
          f"{setup / 1e9:.2f} G left out")
    print(f"  baseline {base / 1e9:8.2f} G")
    print(f"  e-graph  {eg / 1e9:8.2f} G")
    print(f"  ratio e-graph/baseline x{eg / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
