"""``benchmarks/percall.py``'s table on a few corpus lines: medians per contender, the
e-graph's phases, and a digest of each engine's outputs that follows the outputs."""

from __future__ import annotations

from typing import Any

import tinygrad  # noqa: F401  (the tinygrad extra, in dev: a missing one fails, not skips)


def test_phase_table_and_digest(corpus_lines: list[dict[str, Any]]) -> None:
    from benchmarks import percall, vs_tinygrad

    res = vs_tinygrad.run_exprs(corpus_lines[:3], keep_text=True)
    assert all(set(r.text) == {"baseline", "egraph"} for r in res)
    table = percall.phase_table("some", res)
    lines = table.splitlines()
    assert lines[0] == "some: 3 expressions, median ms (total s)"
    phases = next(ln for ln in lines if ln.startswith("  e-graph phases (median ms): "))
    assert "egraph/tinygrad" in lines[2] and " replay " in phases and " baseline " in phases
    digest = {ln.split()[0]: ln.split()[-1] for ln in lines if "outputs digest" in ln}
    assert set(digest) == {"baseline", "egraph"}
    res[0].text["egraph"] += " "
    again = {ln.split()[0]: ln.split()[-1]
             for ln in percall.phase_table("some", res).splitlines() if "outputs digest" in ln}
    assert again["baseline"] == digest["baseline"] and again["egraph"] != digest["egraph"]


def test_count_sets_take_the_first_n_of_each_set() -> None:
    """``--count-set``: the corpus's first lines, ``random_exprs``' first draws, and the
    unseen cases with the kinds taking turns."""
    from benchmarks import percall, stress
    from tests.gen_cases import KINDS

    assert [r["expr"] for r in percall.count_rows("random", 4, 0)] == stress.random_exprs(4)
    unseen = percall.count_rows("unseen", len(KINDS) + 1, 0)
    assert len(unseen) == len(KINDS) + 1 and unseen[0]["id"] != unseen[1]["id"]
    assert len({r["id"][:2] for r in unseen[:len(KINDS)]}) == len(KINDS)
    assert len(percall.count_rows("corpus", 5, 0)) == 5
