"""Where the index-expression corpus is, for the tests and the benchmarks.

The corpus ships in the repository, ``data/corpus/index-exprs.jsonl`` (its README
describes the fields); the environment variable ``EQSAT_CORPUS`` names another file of
the same shape instead.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "CORPUS", "corpus_path"]

REPO = Path(__file__).resolve().parent.parent
#: the corpus in the repository
CORPUS = REPO / "data" / "corpus" / "index-exprs.jsonl"


def corpus_path() -> Path:
    """The corpus file: ``$EQSAT_CORPUS`` when set, else :data:`CORPUS`."""
    env = os.environ.get("EQSAT_CORPUS")
    return Path(env) if env else CORPUS
