"""One answer per case: a batch's rows do not depend on ``--chunk``, ``--jobs`` or the
executor. Each case is optimized on its own, so its row is what ``eqsat.optimize`` gives
it alone, byte for byte (the ``us`` field, a time, aside)."""

from __future__ import annotations

import json
import multiprocessing
import random
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis.internal.conjecture.data import ConjectureData

import eqsat
from eqsat.cli import main
from eqsat.engines.egraph import clear_result_cache
from eqsat.ir.sexpr import parse, to_sexpr
from extraction import reference_cost
from tests.strategies import fixed_width_exprs, int_exprs

#: the default budget, as ``eqsat batch`` runs it (the work budgets end every run here)
BUDGET = eqsat.Budget()
#: a case that is not valid (its row is an error, whatever its chunk's other cases)
BAD = '{"id": "bad", "expr": "(add 1"}'


def _drawn(strategy: Any, tag: str, n: int) -> list[str]:
    """``n`` expressions drawn from ``strategy``, draw ``i`` seeded with ``(tag, i)``."""
    out = []
    for i in range(n):
        data = ConjectureData(random=random.Random(f"{tag}:{i}"))
        out.append(to_sexpr(data.draw(strategy), compact=True))
    return out


@pytest.fixture(scope="module")
def lines(corpus_lines: list[dict[str, Any]]) -> list[str]:
    """A corpus slice (every 7th case: every source), random index expressions (floor
    division and modulo among their ops), random fixed-width ones, a floor idiom and
    a case that does not parse: one JSONL line each."""
    exprs = [(r["id"], r["expr"]) for r in corpus_lines[::7][:60]]
    exprs += [(f"int{i}", e) for i, e in enumerate(_drawn(int_exprs(max_depth=4), "int", 14))]
    exprs += [(f"fixed{i}", e)
              for i, e in enumerate(_drawn(fixed_width_exprs(max_depth=3), "fixed", 8))]
    exprs.append(("floor", "(floordiv (add (mul (range 0 16) 3) (var x -7 7)) 4)"))
    out = [json.dumps({"id": i, "expr": e}) for i, e in exprs]
    out.insert(31, BAD)
    return out


@pytest.fixture(scope="module")
def alone(lines: list[str]) -> dict[Any, tuple[str, int]]:
    """Each valid case's (output, reference cost) from one ``eqsat.optimize`` call."""
    clear_result_cache()
    out = {}
    for line in lines:
        if line != BAD:
            row = json.loads(line)
            res = eqsat.optimize(parse(row["expr"]), cost_model="reference", budget=BUDGET)
            out[row["id"]] = (to_sexpr(res.graph, compact=True), reference_cost(res.graph))
    return out


def _batch(tmp_path: Path, lines: list[str], *flags: str) -> list[str]:
    """The output lines of ``eqsat batch --cost reference FLAGS``, each without its
    ``us`` field (a time)."""
    src, dst = tmp_path / "in.jsonl", tmp_path / f"out{'_'.join(flags)}.jsonl"
    src.write_text("\n".join(lines) + "\n")
    assert main(["batch", "--cost", "reference", *flags, str(src), "-o", str(dst)]) == 0
    return [re.sub(r', "us": [0-9.e+-]+', "", x) for x in dst.read_text().splitlines()]


@pytest.fixture(scope="module")
def reference_rows(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> list[str]:
    return _batch(tmp_path_factory.mktemp("batch"), lines, "--jobs", "1", "--chunk", "1")


def test_every_row_is_the_case_s_own_result(reference_rows: list[str], lines: list[str],
                                             alone: dict[Any, tuple[str, int]]) -> None:
    rows = [json.loads(x) for x in reference_rows]
    assert [r["id"] for r in rows] == [json.loads(x).get("id") for x in lines]
    bad = rows[31]
    assert bad["id"] == "bad" and bad["error"].startswith("expr:1:7: expected ')'")
    differ = [r["id"] for r in rows if "error" not in r
              and (r["out"], r["cost"]) != alone[r["id"]]]
    assert differ == [] and sum("error" in r for r in rows) == 1


@pytest.mark.parametrize("flags", [
    ("--jobs", "1", "--chunk", "7"),
    ("--jobs", "1", "--chunk", "64"),
    ("--jobs", "2", "--chunk", "1"),
    ("--jobs", "2", "--chunk", "7"),
    ("--jobs", "2", "--chunk", "64"),
])
def test_rows_do_not_depend_on_chunk_or_jobs(tmp_path: Path, lines: list[str],
                                             reference_rows: list[str],
                                             flags: tuple[str, ...]) -> None:
    got = _batch(tmp_path, lines, *flags)
    assert len(got) == len(reference_rows)
    assert [i for i, (a, b) in enumerate(zip(got, reference_rows, strict=True)) if a != b] == []


def test_optimize_many_is_optimize_per_graph_on_any_executor(
        lines: list[str], alone: dict[Any, tuple[str, int]]) -> None:
    rows = [json.loads(x) for x in lines if x != BAD]
    graphs = [parse(r["expr"]) for r in rows]
    want = [alone[r["id"]][0] for r in rows]
    clear_result_cache()
    here = eqsat.optimize_many(graphs, cost_model="reference", budget=BUDGET)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        pooled = {chunk: eqsat.optimize_many(graphs, cost_model="reference", budget=BUDGET,
                                             executor=ex, chunk=chunk) for chunk in (1, 7, 64)}
    for name, res in [("here", here), *pooled.items()]:
        got = [to_sexpr(r.graph, compact=True) for r in res]
        assert [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b] == [], name
