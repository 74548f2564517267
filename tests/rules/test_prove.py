"""``eqsat rules --prove`` on the whole registry (docs/rules.md "Proofs"): every rule of
both engines proven with z3 or tested over its stated domain, none failed.

The run takes minutes (docs/perf.md): marked slow, still run in CI.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import z3  # noqa: F401  (the dev extra installs z3-solver: a missing one fails, not skips)

from eqsat.cli import main

SUMMARY = re.compile(r"^(\d+) proven, (\d+) tested-only, (\d+) failed$")


@pytest.fixture(scope="module")
def whole_registry() -> tuple[int, list[str], float]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "eqsat.cli", "rules", "--prove", "--jobs", "2",
                        "--timeout", "40"],
                       capture_output=True, text=True, timeout=1200)
    return p.returncode, p.stdout.splitlines(), time.perf_counter() - t0


@pytest.mark.slow
def test_every_rule_is_proven_or_tested_and_none_fails(whole_registry) -> None:
    rc, lines, _secs = whole_registry
    m = SUMMARY.match(lines[-1])
    assert m, lines[-3:]
    proven, tested, failed = map(int, m.groups())
    bad = [ln for ln in lines[:-1] if ln.split()[1] == "failed"]
    assert failed == 0 and rc == 0, "\n".join(bad)
    assert proven + tested == len(lines) - 1
    for ln in lines[:-1]:  # a line per rule: name, status, seconds
        name, status, secs = ln.split()[:3]
        assert status in ("proven", "tested-only") and secs.endswith("s"), ln


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the div/mod core, the bounds grids, the e-graph's "
                   "passes and the loops are tested over grids: 45 of 291 rules (docs/rules.md)")
def test_tested_only_stays_under_a_tenth(whole_registry) -> None:
    _rc, lines, _secs = whole_registry
    proven, tested, _failed = map(int, SUMMARY.match(lines[-1]).groups())
    assert tested < 0.1 * (proven + tested)


def test_one_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--prove", "--rule", "add_zero,idiv_self"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[:2] for ln in out[:-1]] == [["add_zero", "proven"],
                                                  ["idiv_self", "proven"]]
    assert out[-1] == "2 proven, 0 tested-only, 0 failed"


def test_without_z3_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "z3", None)  # import z3 raises ImportError
    assert main(["rules", "--prove", "--rule", "add_zero"]) == 2
    assert "pip install z3-solver" in capsys.readouterr().err
