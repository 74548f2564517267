"""What a fresh process imports to optimize an index expression."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_FIRST_CALL = """
import sys
sys.path.insert(0, {repo!r})
import eqsat
from eqsat.ir.sexpr import parse, to_sexpr
r = eqsat.optimize(parse("(add (mod (idiv (max (var x 0 9) 1) 2) 3) 0)"), engine={engine!r})
to_sexpr(r.graph)
print(sorted(m for m in ("numpy", "egglog.bindings") if m in sys.modules))
"""


@pytest.mark.parametrize("engine", ["egraph", "baseline"])
def test_an_index_expression_needs_no_numpy_nor_egglog(engine: str) -> None:
    # (the e-graph replays this small run in Python: egglog is not loaded)
    code = _FIRST_CALL.format(repo=str(REPO), engine=engine)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_bindings_are_egglog_s_once_read() -> None:
    from eqsat.engines.egraph._egglog import bindings

    egraph = bindings.EGraph()
    assert type(egraph) is sys.modules["egglog.bindings"].EGraph
    assert vars(bindings)["EggSmolError"] is sys.modules["egglog.bindings"].EggSmolError


_GENERATED = """
import sys, hashlib
sys.path.insert(0, {repo!r})
import rules
rs = rules.all_rules()
rules.matcher()
print(sum("_apply" in vars(r) for r in rs))
h = hashlib.sha256()
for r in (rs if {forward!r} else rs[::-1]):
    r._apply
for r in rs:
    c = r._apply.__code__ if r._apply is not None else None
    h.update(repr((r.name, c and (c.co_code, c.co_consts, c.co_names, c.co_varnames))).encode())
print(h.hexdigest())
"""


def test_a_rule_s_matcher_is_written_at_its_first_read_alike_in_any_order() -> None:
    outs = [subprocess.run([sys.executable, "-c", _GENERATED.format(repo=str(REPO), forward=f)],
                           capture_output=True, text=True, check=True).stdout.split()
            for f in (True, False)]
    assert outs[0][0] == outs[1][0] == "0"  # (none written by making the rules)
    assert outs[0][1] == outs[1][1]


_PREPARED = """
import sys
sys.path.insert(0, {repo!r})
import rules
from eqsat.engines.egraph import session_for
session_for(None).prepare()
print(sum("_apply" not in vars(r) for r in rules.all_rules()))
"""


def test_a_warm_up_writes_every_rule_s_matcher() -> None:
    out = subprocess.run([sys.executable, "-c", _PREPARED.format(repo=str(REPO))],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"
