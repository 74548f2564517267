"""``eqsat rules --prove`` (docs/rules.md "Proofs"): every rule of both engines proven
with z3 or tested over its stated domain, none failed.

z3's budget is a count of its own steps (``--rlimit``), so a verdict does not depend on
the machine's load. The whole registry takes many minutes on two cores
(docs/perf.md); CI proves every rule but the slow ones, plus one slow rule a day in
turn. ``EQSAT_PROVE_WHOLE=1`` proves the whole registry, as ``eqsat rules --prove``
does, and checks the tested-only share, which is of the whole registry.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import z3  # noqa: F401  (the dev extra installs z3-solver: a missing one fails, not skips)

import eqsat.engines.egraph.proofs  # noqa: F401  (registers the e-graph's passes)
from eqsat.cli import main
from rules.proof import prove
from rules.proof.registry import entries
from rules.proof.semantics import RLIMIT

SUMMARY = re.compile(r"^(\d+) proven, (\d+) tested-only, (\d+) failed$")
WHOLE = os.environ.get("EQSAT_PROVE_WHOLE") == "1"

#: the rules whose proof takes over 8 s of a core (docs/perf.md): CI proves one a day
SLOW = ("invalid_into_cast",
        "cast_cast_roundtrip", "cast_cast_widen", "cast_cast_in_range", "cast_into_where",
        "mod_coef_reduce", "recombine_divmod_2", "cmp_by_bounds",
        "idiv_small_offset", "idiv_large_offset", "fold_divmod_general", "gep_of_gep",
        "idiv_of_mod_const", "mod_of_mod_multiple", "remove_nested_mod",
        "gcd_with_remainder", "divide_by_gcd", "factor_remainder",
        "nest_div_by_smallest_factor", "idiv_one_bucket",
        "nested_idiv_offset", "canonical_sum")
#: slow beyond a CI run's minutes (only the whole run proves them): minutes of a core
#: each (docs/perf.md), which on the day of their turn doubled the prove test's time
WHOLE_ONLY = ("cast_cast_widen_float", "idiv_drop_multiple_small", "idiv_drop_multiple",
              "fold_const_by_bounds", "lt_simplex")


def _chosen() -> list[str] | None:
    """The rules this run proves (None: the whole registry)."""
    if WHOLE:
        return None
    today = SLOW[time.gmtime().tm_yday % len(SLOW)]
    return [e.name for e in entries() if e.name not in SLOW + WHOLE_ONLY or e.name == today]


@pytest.fixture(scope="module")
def proof_run() -> tuple[int, list[str], list[str] | None]:
    names = _chosen()
    cmd = [sys.executable, "-m", "eqsat.cli", "rules", "--prove", "--jobs", "2"]
    if names is not None:
        cmd += ["--rule", ",".join(names)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    return p.returncode, p.stdout.splitlines(), names


def test_the_slow_lists_name_rules() -> None:
    known = {e.name for e in entries()}
    assert set(SLOW + WHOLE_ONLY) <= known, set(SLOW + WHOLE_ONLY) - known


@pytest.mark.slow
def test_every_rule_is_proven_or_tested_and_none_fails(proof_run) -> None:
    rc, lines, names = proof_run
    m = SUMMARY.match(lines[-1])
    assert m, lines[-3:]
    proven, tested, failed = map(int, m.groups())
    bad = [ln for ln in lines[:-1] if ln.split()[1] == "failed"]
    assert failed == 0 and rc == 0, "\n".join(bad)
    assert proven + tested == len(lines) - 1 == len(names or entries())
    for ln in lines[:-1]:  # a line per rule: name, status, seconds, resource units
        name, status, secs, units = ln.split()[:4]
        assert status in ("proven", "tested-only") and secs.endswith("s"), ln
        assert 0 <= int(units) <= RLIMIT, ln  # what its most costly settled query took


@pytest.mark.slow
@pytest.mark.skipif(not WHOLE, reason="the share is of the whole registry: "
                    "EQSAT_PROVE_WHOLE=1")
def test_tested_only_stays_under_a_tenth(proof_run) -> None:
    _rc, lines, _names = proof_run
    proven, tested, _failed = map(int, SUMMARY.match(lines[-1]).groups())
    assert tested < 0.1 * (proven + tested)


def test_one_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--prove", "--rule", "add_zero,idiv_self"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[:2] for ln in out[:-1]] == [["add_zero", "proven"],
                                                  ["idiv_self", "proven"]]
    assert out[-1] == "2 proven, 0 tested-only, 0 failed"


def test_the_verdict_is_the_budget_s_not_the_clock(capsys: pytest.CaptureFixture[str]) -> None:
    # a budget below what the proof takes gives up (z3 counts its steps, not seconds)
    main(["rules", "--prove", "--rule", "add_self", "--detail"])
    line = capsys.readouterr().out.splitlines()[0]
    need = int(line.split()[3])
    assert line.split()[1] == "proven" and need > 1000
    assert main(["rules", "--prove", "--rule", "add_self", "--rlimit", str(need // 1000)]) == 1
    assert "failed" in capsys.readouterr().out


def _units(capsys: pytest.CaptureFixture[str], rules: str, jobs: str) -> dict[str, int]:
    assert main(["rules", "--prove", "--rule", rules, "--detail", "--jobs", jobs]) == 0
    lines = capsys.readouterr().out.splitlines()[:-1]
    return {ln.split()[0]: int(ln.split()[3]) for ln in lines}


def test_a_rule_s_proof_does_not_depend_on_the_rules_before_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # in one process z3's count for lt_mul_neg_pos moves with what was solved before
    # (71,826 units alone, 56,753 after add_zero): each rule has a process of its own
    alone = _units(capsys, "lt_mul_neg_pos", "1")["lt_mul_neg_pos"]
    after = _units(capsys, "add_zero,add_self,lt_mul_neg_pos", "1")
    beside = _units(capsys, "add_zero,add_self,lt_mul_neg_pos", "2")
    assert after["lt_mul_neg_pos"] == beside["lt_mul_neg_pos"] == alone


def test_a_proof_in_process_does_not_depend_on_the_proofs_before_it() -> None:
    # each proof has a z3 context of its own: in the process's one context
    # lt_mul_neg_pos's most costly query took 71,826 units alone, 108,201 after these two
    alone = prove("lt_mul_neg_pos")
    prove("add_zero")
    prove("add_self")
    again = prove("lt_mul_neg_pos")
    assert (again.status, again.rlimit, again.detail) == (alone.status, alone.rlimit,
                                                           alone.detail)
    assert alone.status == "proven"


_PROVE_ON_CUE = ("import sys\n"
                 "from rules.proof import prove\n"
                 "from rules.proof.registry import entries\n"
                 "entries()\n"
                 "print('ready', flush=True)\n"
                 "sys.stdin.readline()\n"
                 "o = prove(sys.argv[1])\n"
                 "print(o.status, o.rlimit, o.detail)\n")


def _prove_slowed(name: str, run: float, stop: float) -> str:
    """``status units detail`` of ``name`` proven in a process that runs ``run``
    seconds in each ``run + stop`` (SIGSTOP, SIGCONT): a machine that much slower to
    every clock, its CPU time the same."""
    p = subprocess.Popen([sys.executable, "-c", _PROVE_ON_CUE, name], text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline() == "ready\n"
        p.stdin.write("\n")
        p.stdin.flush()
        while p.poll() is None:
            time.sleep(run)
            os.kill(p.pid, signal.SIGSTOP)
            time.sleep(stop)
            os.kill(p.pid, signal.SIGCONT)
        return p.stdout.read().strip()
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
        p.wait()


def test_a_proof_on_a_slow_machine_is_the_same() -> None:
    # z3's strategy for nonlinear integers (z3.Solver()) cuts its SMT stage after 2 s
    # of the clock: at a quarter of the speed floormod_cancel_factor's query (over 0.5 s
    # of a core) was cut and the rule became tested-only; the proofs' solver has no clock
    o = prove("floormod_cancel_factor")
    assert o.status == "proven"
    assert _prove_slowed("floormod_cancel_factor", 0.05, 0.15) == \
        f"{o.status} {o.rlimit} {o.detail}"


def test_a_budget_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--prove", "--rule", "add_zero", "--rlimit", "0"]) == 1
    assert "--rlimit" in capsys.readouterr().err
    assert main(["rules", "--prove", "--rule", "add_zero", "--jobs", "0"]) == 1
    assert "--jobs must be >= 1" in capsys.readouterr().err


def test_without_z3_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "z3", None)  # import z3 raises ImportError
    assert main(["rules", "--prove", "--rule", "add_zero"]) == 2
    assert "pip install z3-solver" in capsys.readouterr().err
