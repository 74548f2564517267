"""``eqsat compare`` (the table and the JSON report), ``-v``/``--verbose`` and the
library's log, the progress bar's on/off rule."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from eqsat import compare
from eqsat.cli import main
from eqsat.ir.sexpr import parse
from eqsat.progress import NoProgress, progress, progress_wanted
from extraction import divmod_count, reference_cost

LINES = [
    {"id": "a", "source": "kernel:conv/reshape", "expr": "(mod (add (mul (range 0 4) 4) "
     "(range 1 4)) 4)", "tinygrad": "(mod (add (mul (range 0 4) 4) (range 1 4)) 4)",
     "tg_us": 100.0},
    {"id": "b", "source": "kernel:pool", "expr": "(idiv (add (mul (var x 0 9) 8) 3) 8)",
     "tinygrad": "(var x 0 9)", "tg_us": 300.0},
    {"id": "c", "source": "synthetic-view", "expr": "(add (mul (idiv (range 0 12) 4) 4) "
     "(mod (range 0 12) 4))", "tinygrad": "(add (mul (idiv (range 0 12) 4) 4) (mod "
     "(range 0 12) 4))", "tg_us": 200.0},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in LINES) + "\n\n")
    return p


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_compare_is_a_subcommand(capsys) -> None:
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "compare" in out
    rc, out, _ = run(capsys, "compare", "--help")
    assert rc == 0 and all(f in out for f in ("--engines", "--tinygrad", "--json", "-v"))


def test_compare_json_report(capsys, corpus: Path) -> None:
    rc, out, err = run(capsys, "compare", str(corpus), "--tinygrad", "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["cases"] == 3 and rep["engines"] == ["baseline", "egraph"] and rep["tinygrad"]
    assert set(rep["sources"]) == {"kernel", "synthetic-view"}  # kernel:* grouped
    assert rep["sources"]["kernel"]["n"] == 2
    total_in = sum(reference_cost(parse(r["expr"])) for r in LINES)
    total_tg = sum(reference_cost(parse(r["tinygrad"])) for r in LINES)
    a = rep["all"]
    assert a["cost"]["input"] == total_in and a["cost"]["tinygrad"] == total_tg
    assert a["divmod"]["tinygrad"] == sum(divmod_count(parse(r["tinygrad"])) for r in LINES)
    assert a["seconds"]["tinygrad"] == pytest.approx(600e-6)
    assert a["median_ms"]["tinygrad"] == pytest.approx(0.2)
    assert set(a["seconds"]) == {"tinygrad", "baseline", "egraph"}
    per = {c["id"]: c for c in rep["per_case"]}
    # b folds to x: both engines find it, tinygrad too; c folds to the range
    assert per["b"]["cost"] == {"input": 30, "tinygrad": 0, "baseline": 0, "egraph": 0}
    assert per["c"]["cost"]["egraph"] == 0 and per["c"]["cost"]["tinygrad"] == 55
    for k in ("input", "tinygrad", "baseline", "egraph"):  # the totals add the cases up
        assert a["cost"][k] == sum(c["cost"][k] for c in rep["per_case"])
    for a_, b_ in (("egraph", "baseline"), ("egraph", "tinygrad"), ("baseline", "tinygrad")):
        better = sum(per[i]["cost"][a_] < per[i]["cost"][b_] for i in per)
        worse = sum(per[i]["cost"][a_] > per[i]["cost"][b_] for i in per)
        assert a["better"][f"{a_}<{b_}"] == better and a["worse"][f"{a_}>{b_}"] == worse
    assert a["better"]["egraph<tinygrad"] >= 1  # c


def test_compare_table(capsys, corpus: Path) -> None:
    rc, out, err = run(capsys, "compare", str(corpus), "--engines", "egraph")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("3 cases from ")
    head = lines[2].split()
    assert "eg" in head and "base" not in head and "tg" not in head
    rows = {ln.split()[0]: ln for ln in lines[4:]}
    assert set(rows) == {"kernel", "synthetic-view", "ALL"}
    cells = rows["ALL"].replace("|", " ").split()
    assert cells[1] == "3" and cells[2] == str(sum(reference_cost(parse(r["expr"]))
                                                   for r in LINES))
    assert "tinygrad" not in out


@pytest.mark.parametrize("argv, fragment", [
    (["--engines", "egraph,magic"], "--engines: magic"),
    (["--chunk", "0"], "--chunk must be >= 1"),
    (["--cost", "cheap"], "unknown cost model"),
])
def test_compare_bad_flags(capsys, corpus: Path, argv: list[str], fragment: str) -> None:
    rc, _, err = run(capsys, "compare", str(corpus), *argv)
    assert rc == 1 and fragment in err and "Traceback" not in err


TRANSPOSE = ("(sink (end (store (index (buffer 0 f32 60) (range 0 60)) (load (index (buffer 1 "
             "f32 60) (add (mul (mod (range 0 60) 10) 6) (idiv (range 0 60) 10))))) (range 0 60)))")


def test_compare_check_runs_kernels(capsys, tmp_path: Path) -> None:
    """A kernel's outputs are checked by running them (they were refused)."""
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps({"id": "t", "source": "kernel:transpose", "expr": TRANSPOSE}) + "\n")
    rc, out, err = run(capsys, "compare", str(p), "--check", "--json")
    assert rc == 0, err
    assert json.loads(out)["all"]["inequivalent"] == {"baseline": 0, "egraph": 0}


def test_a_kernel_check_stopped_early_is_named(capsys, tmp_path: Path, monkeypatch) -> None:
    """A kernel check past its work bound found nothing but did not run every draw: the
    report counts it and stderr names the case (it is not silently equivalent)."""
    from eqsat.ir import kernel_equiv

    monkeypatch.setitem(kernel_equiv.check_kernels.__kwdefaults__, "max_steps", 50)
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps({"id": "t", "source": "kernel:transpose", "expr": TRANSPOSE}) + "\n")
    rc, out, err = run(capsys, "compare", str(p), "--check", "--json")
    assert rc == 0, err
    rep = json.loads(out)["all"]
    assert rep["check_stopped"] == {"baseline": 1, "egraph": 1}
    assert "case t, egraph: the check stopped early (the work budget of 50" in err


def test_check_counts_a_wrong_kernel() -> None:
    g = parse(TRANSPOSE)
    c = compare.Case(id="t", source="kernel", out={"baseline": g, "egraph": parse(
        TRANSPOSE.replace("(idiv (range 0 60) 10)", "(idiv (range 0 60) 12)"))})
    compare.finish([c], [g], ["baseline", "egraph"], check=True)
    assert c.equivalent == {"baseline": True, "egraph": False}


def test_a_corpus_without_sources_or_tinygrad(capsys, tmp_path: Path) -> None:
    p = tmp_path / "plain.jsonl"
    p.write_text(json.dumps({"id": 1, "expr": "(idiv (mul (var x 0 9) 4) 4)"}) + "\n")
    rc, out, err = run(capsys, "compare", str(p), "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert list(rep["sources"]) == ["-"] and rep["all"]["cost"]["egraph"] == 0


def test_verbose_shows_the_library_log(capsys, corpus: Path) -> None:
    rc, _, err = run(capsys, "compare", str(corpus), "--engines", "baseline", "--limit", "1")
    assert rc == 0 and "INFO" not in err and "DEBUG" not in err
    rc, _, err = run(capsys, "compare", str(corpus), "--engines", "baseline", "--limit", "1",
                     "-v")
    assert rc == 0 and "eqsat: INFO: compare: 1 cases from" in err and "DEBUG" not in err
    rc, _, err = run(capsys, "-vv", "compare", str(corpus), "--engines", "baseline",
                     "--limit", "1")
    assert rc == 0 and "eqsat: DEBUG: optimize (baseline): cost" in err
    logger = logging.getLogger("eqsat")
    assert len(logger.handlers) == 1  # the command's, added once however often it runs
    logger.setLevel(logging.NOTSET)


def test_the_library_sets_no_handler() -> None:
    import subprocess

    code = ("import logging, eqsat, eqsat.api, eqsat.compare, eqsat.engines.egraph, lowering; "
            "eqsat.optimize(eqsat.parse('(add (var x 0 3) 0)')); "
            "print([n for n, l in logging.Logger.manager.loggerDict.items() "
            "if n.startswith('eqsat') and getattr(l, 'handlers', None)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_progress_only_on_a_terminal_and_not_under_ci(monkeypatch) -> None:
    class Tty:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

        def write(self, s: str) -> int:
            return len(s)

        def flush(self) -> None:
            pass

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stderr", Tty(False))
    assert not progress_wanted() and isinstance(progress(total=3), NoProgress)
    monkeypatch.setattr(sys, "stderr", Tty(True))
    assert progress_wanted()
    bar = progress(total=3, desc="x")
    assert not isinstance(bar, NoProgress)
    bar.update(3)
    bar.close()
    monkeypatch.setenv("CI", "true")
    assert not progress_wanted() and isinstance(progress(total=3), NoProgress)
    with progress(total=2, enabled=False) as p:
        p.update(2)
        assert p.n == 2


def test_summary_pairs_compare_each_engine_to_the_columns_before() -> None:
    cases = [compare.Case("a", "s", cost={"input": 9, TG: 5, "baseline": 4, "egraph": 6},
                          divmod={"input": 1, TG: 0, "baseline": 0, "egraph": 0})]
    rep = compare.summary(cases, ["baseline", "egraph"], tinygrad=True)
    assert rep["all"]["better"] == {"baseline<tinygrad": 1, "egraph<tinygrad": 0,
                                    "egraph<baseline": 0}
    assert rep["all"]["worse"] == {"baseline>tinygrad": 0, "egraph>tinygrad": 1,
                                   "egraph>baseline": 1}
    assert rep["all"]["seconds"] == {}  # no times: no time columns
    assert "time" not in compare.table(rep)[0]


TG = compare.TINYGRAD
