"""``benchmarks/stress.py``: hostile inputs hold the budgets (the quick set, as CI runs
it; ``python3 benchmarks/stress.py`` runs them all and prints the table)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import stress
from eqsat.ir.sexpr import parse
from tests.conftest import REPO


def test_the_inputs_are_what_they_say() -> None:
    assert stress.floordiv_case(*stress.FLOORDIV_PARAMS[0]).count("(where") == 7
    assert stress.where_sum(40).count("(where ") == 40
    nest = parse(stress.divmod_nest(30))
    assert sum(u.op.name in ("IDIV", "MOD") for u in nest.toposort()) == 30
    assert stress.affine_sum(200).count("(mul (range") == 2 * 200
    a, b = stress.random_exprs(3), stress.random_exprs(3)
    assert a == b and all(parse(t) is not None for t in a)  # deterministic, valid
    names = [s.name for s in stress.INPUTS]
    assert len(set(names)) == len(names)


def test_within_bounds_names_what_it_broke() -> None:
    # enodes_share: the largest share of its own e-node budget a case's e-graph reached
    row = {"kind": "optimize", "seconds": 2.0, "build": 0.5, "max_case": 2.8,
           "enodes_budget": [100, 100], "max_enodes": 150, "enodes_share": 1.5,
           "peak_rss": 1 << 20}
    assert stress.within_bounds(row) == []
    assert stress.within_bounds({**row, "max_case": 3.0, "enodes_share": 2.01}) == [
        "time", "enodes"]
    batch = {"kind": "batch", "seconds": 2.0, "build": 0.0, "enodes_budget": [100, 400],
             "max_enodes": 300, "enodes_share": 1.5, "peak_rss": 1 << 20, "status": 0,
             "rows": 9, "cases": 10, "max_case": 1.0}
    assert stress.within_bounds(batch) == ["rows"]
    # each case has its own budget: a batch's bounds are one case's
    assert stress.within_bounds({**batch, "max_case": 2.5, "enodes_share": 2.01}) == [
        "rows", "time", "enodes"]


@pytest.mark.slow
def test_the_quick_inputs_hold_their_budgets() -> None:
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "stress.py"), "--quick"],
                       capture_output=True, text=True, timeout=900, cwd=str(REPO))
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    rows = p.stdout.strip().splitlines()[1:]
    assert len(rows) == sum(s.quick for s in stress.INPUTS)
    assert all(" ok " in r for r in rows), p.stdout
