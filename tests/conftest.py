"""Shared pytest fixtures: the index-expression corpus and hypothesis settings.

The corpus lives outside the repository, in ``<repo>/../shared/corpus/`` (a fresh
clone with ``shared/`` beside it, as in CI), or wherever ``EQSAT_CORPUS`` points
(a path to ``index-exprs.jsonl``). Tests that need it skip, saying why, when it
is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent

# No per-example deadline: the machine is shared and noisy, and a deadline makes
# tests flaky rather than finding bugs. Example counts are kept modest.
settings.register_profile("eqsat", deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("eqsat-thorough", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "eqsat"))


def corpus_path() -> Path:
    """Where the corpus file is expected (``EQSAT_CORPUS`` or ``../shared/corpus``)."""
    env = os.environ.get("EQSAT_CORPUS")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "corpus" / "index-exprs.jsonl"


def load_corpus() -> list[dict[str, Any]]:
    """Every line of the corpus as a dict; ``pytest.skip`` when the file is absent."""
    path = corpus_path()
    if not path.is_file():
        pytest.skip(f"index-expression corpus not found at {path} (clone the repo next to "
                    "shared/, or set EQSAT_CORPUS to the .jsonl file)")
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

