"""Batches on any ``concurrent.futures.Executor``: ``optimize_many(executor=...)`` and
``eqsat batch --scheduler`` (a Dask cluster), with the outputs of a local run."""

from __future__ import annotations

import json
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import eqsat
from eqsat import cli
from eqsat.cli import main
from eqsat.ir.sexpr import parse

BUDGET = eqsat.Budget(seconds=30.0)  # no time stop: the outputs are deterministic


def _graphs(corpus_lines: list[dict[str, Any]], n: int) -> list[eqsat.UOp]:
    return [parse(r["expr"]) for r in corpus_lines[:n]]


def test_optimize_many_on_a_thread_pool(corpus_lines) -> None:
    gs = _graphs(corpus_lines, 10)
    with ThreadPoolExecutor(2) as ex:
        got = eqsat.optimize_many(gs, cost_model="reference", budget=BUDGET, executor=ex,
                                  chunk=4)
    want = [eqsat.optimize(g, cost_model="reference", budget=BUDGET) for g in gs]
    assert [r.graph for r in got] == [r.graph for r in want]
    assert [(r.cost, r.input_cost) for r in got] == [(r.cost, r.input_cost) for r in want]
    assert all("batch" not in r.stats and r.egraph is None for r in got)


def test_optimize_many_executor_errors(corpus_lines) -> None:
    gs = _graphs(corpus_lines, 2)
    with ThreadPoolExecutor(1) as ex:
        with pytest.raises(ValueError, match="keep_egraph with an executor"):
            eqsat.optimize_many(gs, executor=ex, keep_egraph=True)
        with pytest.raises(ValueError, match="chunk must be >= 1"):
            eqsat.optimize_many(gs, executor=ex, chunk=0)


class _Flaky(Executor):
    """Runs tasks in this thread; a task of more than one case fails (as a lost worker
    would), and so does any task holding the case on line ``bad``."""

    def __init__(self, bad: int):
        self.bad = bad
        self.calls: list[int] = []

    def submit(self, fn, jobs):  # type: ignore[override]
        f: Future = Future()
        self.calls.append(len(jobs))
        if len(jobs) > 1 or any(j[0] == self.bad for j in jobs):
            f.set_exception(RuntimeError("worker lost"))
        else:
            f.set_result(fn(jobs))
        return f


def test_a_failed_task_is_rerun_case_by_case() -> None:
    opts = {"engine": "baseline", "cost": "reference", "rulesets": None,
            "budget": (12, 20_000, 2.0, 1)}
    cases = [(n, json.dumps({"id": f"c{n}", "expr": f"(add (var x 0 {n}) 0)"}), opts)
             for n in range(1, 6)]
    ex = _Flaky(bad=3)
    rows = list(cli._executor_results(cases, ex, chunk=5, window=2))
    assert [r["id"] for r in rows] == ["c1", "c2", "c3", "c4", "c5"]
    assert ex.calls == [3, 1, 1, 1, 1, 1]  # (cli.spans: 3, 1, 1; the 3 again one by one)
    assert rows[2]["line"] == 3 and "worker failed on this case (RuntimeError: worker lost)" \
        in rows[2]["error"]
    assert all(r["out"] == f"(var x 0 {i + 1})" for i, r in enumerate(rows) if i != 2)


def test_scheduler_without_a_cluster_is_a_clean_error(capsys, tmp_path: Path,
                                                      monkeypatch) -> None:
    p = tmp_path / "in.jsonl"
    p.write_text('{"id": 1, "expr": "(add 1 2)"}\n')
    import builtins

    real = builtins.__import__

    def no_distributed(name, *a, **kw):
        if name == "distributed":
            raise ImportError("no distributed")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    rc = main(["batch", "--scheduler", "tcp://127.0.0.1:1", str(p)])
    err = capsys.readouterr().err
    assert rc == 1 and "pip install 'uop-eqsat[cluster]'" in err


@pytest.mark.cluster
def test_batch_on_a_local_dask_cluster_matches_jobs(corpus_lines, tmp_path: Path,
                                                    capsys) -> None:
    import distributed  # the cluster extra, in dev: a missing one fails, not skips
    rows = corpus_lines[:12]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flags = ["--chunk", "4", "--seconds", "30", "--cost", "reference"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        out = tmp_path / "dask.jsonl"
        assert main(["batch", "--scheduler", cluster.scheduler_address, *flags, str(src),
                     "-o", str(out)]) == 0
        with distributed.Client(cluster) as client:  # the library call, same workers
            gs = [parse(r["expr"]) for r in rows]
            res = eqsat.optimize_many(gs, cost_model="reference", budget=BUDGET,
                                      executor=client.get_executor(), chunk=4)
    local = tmp_path / "jobs.jsonl"  # (test_cli: --jobs 2 writes the rows of --jobs 1)
    assert main(["batch", "--jobs", "1", *flags, str(src), "-o", str(local)]) == 0
    capsys.readouterr()

    def rows_of(p: Path) -> list[dict]:
        return [{k: v for k, v in json.loads(x).items() if k != "us"}
                for x in p.read_text().splitlines()]

    got, want = rows_of(out), rows_of(local)
    assert len(got) == len(rows) and got == want and not any("error" in r for r in got)
    assert [eqsat.to_sexpr(r.graph, compact=True) for r in res] == [r["out"] for r in want]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"budget": {"seconds": 1}}, TypeError, "budget must be an eqsat.Budget"),
    ({"engine": ["egraph"]}, ValueError, "unknown engine"),
    ({"rulesets": 5}, TypeError, "rulesets must be"),
])
def test_an_argument_of_the_wrong_kind_is_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        eqsat.optimize(eqsat.parse("(add (var x 0 9) 0)"), **kwargs)


@pytest.mark.parametrize("kwargs,match", [({"executor": 5}, "executor must be"),
                                          ({"chunk": 1.5}, "chunk must be an int")])
def test_optimize_many_names_a_bad_executor_or_chunk(kwargs, match):
    with pytest.raises(TypeError, match=match):
        eqsat.optimize_many([eqsat.parse("(add (var x 0 9) 0)")], **kwargs)
