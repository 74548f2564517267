"""Batches on any ``concurrent.futures.Executor``: ``optimize_many(executor=...)`` and
``eqsat batch --scheduler`` (a Dask cluster), with the outputs of a local run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
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


class _Queued(Executor):
    """Runs nothing until a task's result is asked for; the first task fails (or the
    wait is interrupted: ``stop``), and every task's cancel is recorded."""

    def __init__(self, stop: type[BaseException]):
        self.stop, self.futures = stop, []

    def submit(self, fn, *args):  # type: ignore[override]
        f: Future = Future()
        if not self.futures:
            f.set_exception(self.stop("the first task"))
        self.futures.append(f)
        return f


@pytest.mark.parametrize("stop", [RuntimeError, KeyboardInterrupt])
def test_optimize_many_cancels_the_tasks_left_when_it_stops(corpus_lines, stop) -> None:
    ex = _Queued(stop)
    with pytest.raises(stop, match="the first task"):
        eqsat.optimize_many(_graphs(corpus_lines, 6), executor=ex, chunk=2)
    assert [f.cancelled() for f in ex.futures] == [False, True, True]


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


class _Hanging(Executor):
    """Runs in this thread the tasks whose first case is on a line in ``quick``; the
    others never finish (until :meth:`release`, the tests' way out of a hang). Records
    ``cancel`` calls and the events of a batch's end."""

    def __init__(self, quick: set[int]):
        self.quick = quick
        self.futures: list[Future] = []
        self.events: list[tuple[str, int]] = []

    def submit(self, fn, jobs):  # type: ignore[override]
        f: Future = Future()
        if jobs[0][0] in self.quick:
            f.set_result(fn(jobs))
        self.futures.append(f)
        return f

    def cancel(self, futures: list[Future]) -> None:
        self.events.append(("cancel", len(futures)))
        assert all(f in self.futures and not f.done() for f in futures)
        for f in futures:
            f.cancel()

    def close(self) -> None:
        self.events.append(("close", 0))

    def release(self) -> None:
        for f in self.futures:
            if not f.done():
                f.set_exception(RuntimeError("released"))


OPTS = {"engine": "baseline", "cost": "reference", "rulesets": None,
        "budget": (12, 20_000, 2.0, 1, None)}
CASES = [(n, json.dumps({"id": n, "expr": f"(add (var x 0 {n}) 0)"}), OPTS)
         for n in range(1, 7)]


@pytest.mark.parametrize("own_cancel", [True, False], ids=["cancel-call", "future-cancel"])
def test_closing_an_executor_batch_cancels_the_tasks_in_flight(own_cancel):
    ex = _Hanging(quick={1})
    rows = cli._executor_results(CASES, ex, chunk=1, window=3,
                                 cancel=ex.cancel if own_cancel else None)
    assert next(rows)["out"] == "(var x 0 1)"
    assert len(ex.futures) == 3  # the window: cases 1 (done), 2 and 3 in flight
    rows.close()
    assert [f.cancelled() for f in ex.futures] == [False, True, True]
    assert ex.events == ([("cancel", 2)] if own_cancel else [])


def test_a_signal_cancels_a_cluster_batch_s_tasks_then_closes_it(monkeypatch, tmp_path,
                                                                   capsys):
    """SIGTERM while the batch waits on the cluster: the tasks in flight cancelled (one
    call), then the client closed; every row written whole, status 143."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(c[1] + "\n" for c in CASES))
    ex = _Hanging(quick={1, 2})
    monkeypatch.setattr(cli, "_cluster_executor", lambda address: (ex, 4, ex.close))

    def signal_after_two_rows() -> None:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if dst.exists() and dst.read_text().count("\n") >= 2:
                os.kill(os.getpid(), signal.SIGTERM)
                break
            time.sleep(0.02)
        time.sleep(30)
        ex.release()  # had the signal not stopped the batch, it ends now (and fails)

    threading.Thread(target=signal_after_two_rows, daemon=True).start()
    rc = main(["batch", "--scheduler", "tcp://127.0.0.1:1", "--chunk", "1", str(src), "-o",
               str(dst)])
    err = capsys.readouterr().err
    assert rc == 128 + signal.SIGTERM, err
    assert [json.loads(r)["id"] for r in dst.read_text().splitlines()] == [1, 2]
    assert dst.read_text().endswith("\n")
    assert ex.events == [("cancel", 4), ("close", 0)]  # cases 3 to 6 were in flight
    assert err.endswith(f"stopped by SIGTERM: 2 of 6 rows written to {dst}\n")


def _sleepy_rows(chunk):
    from tests.eqsat.test_batch_signals import sleepy_chunk

    return sleepy_chunk(chunk)


@pytest.mark.cluster
def test_closing_a_dask_batch_cancels_its_tasks_on_the_cluster() -> None:
    import distributed

    from tests.eqsat.test_batch_signals import SLEEPY

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            ex = cli._DaskExecutor(client)
            futures: list = []
            submit = ex.submit
            ex.submit = lambda fn, *a: futures.append(submit(fn, *a)) or futures[-1]
            rows = cli._executor_results(SLEEPY, ex, chunk=1, window=3, fn=_sleepy_rows,
                                         cancel=ex.cancel)
            assert next(rows) == {"id": 1}  # cases 2 (running, 120 s) and 3 in flight
            rows.close()
            assert [f.status for f in futures] == ["finished", "cancelled", "cancelled"]
            forgotten = client.run_on_scheduler(
                lambda dask_scheduler: sorted(str(k) for k in dask_scheduler.tasks))
            assert forgotten == [str(futures[0].key)]


@pytest.mark.cluster
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
def test_sigterm_stops_a_batch_on_a_dask_cluster(tmp_path: Path) -> None:
    """A real ``eqsat batch --scheduler`` process signalled mid-run: status 143, every
    row it wrote whole, and none of its tasks left on the cluster."""
    import distributed

    from tests.eqsat.test_batch_signals import REPO, _until, reap

    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes((REPO / "data" / "corpus" / "index-exprs.jsonl").read_bytes() * 3)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    err = tmp_path / "err.txt"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, open(err, "w") as fh:
        p = subprocess.Popen([sys.executable, "-m", "eqsat", "batch", "--scheduler",
                              cluster.scheduler_address, "--chunk", "2", str(src), "-o",
                              str(dst)], stdout=subprocess.DEVNULL, stderr=fh, env=env,
                             cwd=REPO)
        try:
            assert _until(lambda: dst.exists() and dst.read_text() or p.poll() is not None,
                          120), "no row in 120 s"
            assert p.poll() is None, err.read_text()
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=60)
        finally:
            reap(p)
        with distributed.Client(cluster) as client:
            assert _until(lambda: client.run_on_scheduler(
                lambda dask_scheduler: len(dask_scheduler.tasks)) == 0, 30)
    assert rc == 128 + signal.SIGTERM, err.read_text()
    rows = dst.read_text().splitlines()
    assert dst.read_text().endswith("\n") and 0 < len(rows) < 3 * 429
    assert all("out" in json.loads(r) for r in rows)
