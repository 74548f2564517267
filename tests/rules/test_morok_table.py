"""docs/rules-morok.md tables every pattern of Morok's symbolic simplifier: each row names
rules of the registry, or says why the pattern is left out."""

from __future__ import annotations

import re
from pathlib import Path

import eqsat.engines.egraph.proofs  # noqa: F401  (registers the e-graph's passes)
from rules.lang import EGRAPH_ABSENT, LAWS_BY_NAME
from rules.proof.registry import entries

TABLE = Path(__file__).resolve().parents[2] / "docs" / "rules-morok.md"


def _rows() -> list[tuple[int, str, list[str], str]]:
    out = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.replace("\\|", "/").split("|")]
        if len(cells) == 6 and cells[1].isdigit():  # | # | pattern | our rules | note |
            _, num, pattern, ours, note, _ = cells
            out.append((int(num), pattern, re.findall(r"`([a-z0-9_]+)`", ours), note))
    return out


ROWS = _rows()


def test_the_table_is_whole() -> None:
    assert [r[0] for r in ROWS] == list(range(1, len(ROWS) + 1)), "rows numbered 1..n"
    assert len(ROWS) >= 170  # every pattern of patterns.rs (180 rows today)


def test_every_rule_the_table_names_is_in_the_registry() -> None:
    known = {e.name: e.engines for e in entries()}
    missing = [(num, n) for num, _p, names, _note in ROWS for n in names if n not in known]
    assert not missing, missing


def test_every_row_names_a_rule_in_each_engine_or_says_why_not() -> None:
    known = {e.name: e.engines for e in entries()}
    for num, pattern, names, note in ROWS:
        if not names:
            assert note.startswith("left out:") and len(note) > 20, (num, pattern)
            continue
        engines = set().union(*(known[n] for n in names))
        if engines == {"baseline", "egraph"}:
            continue
        # a rule of one engine only says why the other does not run it
        for n in names:
            if known[n] == {"baseline"}:
                assert EGRAPH_ABSENT.get(n), (num, n)
            else:
                law = LAWS_BY_NAME.get(n)
                assert law is None or law.baseline_reason, (num, n)
