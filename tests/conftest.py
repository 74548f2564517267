"""Shared pytest fixtures: the index-expression corpus and hypothesis settings.

The corpus is ``data/corpus/index-exprs.jsonl`` in the repository, or the file
``EQSAT_CORPUS`` names (:func:`benchmarks.corpus.corpus_path`). A missing file is an
error of the checkout, not a reason to skip: the tests that read it fail, saying where
they looked.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from benchmarks.corpus import corpus_path

REPO = Path(__file__).resolve().parent.parent

# tinygrad's CPU device compiles with clang; on a machine without it, the tests that run
# tinygrad programs use its PYTHON device (an interpreter of the same kernels) instead.
# tinygrad reads DEV when it first picks its default device.
if "DEV" not in os.environ and shutil.which("clang") is None:
    os.environ["DEV"] = "PYTHON"

# No per-example deadline: the machine is shared and noisy, and a deadline makes
# tests flaky rather than finding bugs. Example counts are kept modest.
settings.register_profile("eqsat", deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("eqsat-thorough", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "eqsat"))


def load_corpus() -> list[dict[str, Any]]:
    """Every line of the corpus as a dict."""
    path = corpus_path()
    if not path.is_file():
        raise FileNotFoundError(f"index-expression corpus not found at {path} (the "
                                "repository ships it in data/corpus/; EQSAT_CORPUS, when "
                                "set, must name a .jsonl file)")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise AssertionError(f"{path}:{n}: bad JSON in corpus: {e}") from None
    return rows


@pytest.fixture(scope="session")
def corpus_lines() -> list[dict[str, Any]]:
    """The index-expression corpus (dicts with id, expr, tinygrad, cost_in, ...)."""
    return load_corpus()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's top directory."""
    return REPO


@pytest.fixture(scope="session", autouse=True)
def _warm_egraph_session() -> None:
    """Build the e-graph's default warm session once per test process, before any test:
    otherwise the first e-graph test of each worker spends 0.5-3 s of its 2 s time
    budget on the build (more on a loaded CI runner) and may return early."""
    try:
        from eqsat.engines.egraph import session_for
    except ImportError:  # pragma: no cover - engine unavailable: its tests say so
        return
    session_for(None)



@pytest.fixture(autouse=True)
def _empty_result_cache():
    """Every test starts with the e-graph's result cache empty: a test that watches
    what a run does (a spy, a monkeypatched step) must see the run, not an earlier
    test's kept result."""
    from eqsat.engines.egraph.results import clear_result_cache

    clear_result_cache()
    yield


@pytest.fixture
def egglog_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs whose steps egglog runs (no replay in Python, ``eqsat/engines/egraph/
    pystep.py``): for a test of egglog's own commands, rule sets or reset."""
    from eqsat.engines.egraph import pystep

    monkeypatch.setattr(pystep, "MAX_ROWS", -1)
