"""Progress bars for long runs (``eqsat batch``, ``eqsat compare``, the benchmarks).

:func:`progress` gives a tqdm bar on standard error when a person watches it: stderr
is a terminal and the ``CI`` environment variable is not ``true``. Otherwise it gives
:class:`NoProgress`, which takes the same calls and draws nothing, so a log file or a
CI transcript never fills with bar redraws.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["progress", "progress_wanted", "NoProgress"]


def progress_wanted() -> bool:
    """Whether to draw a bar: stderr is a terminal and not under CI (``CI=true``)."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


class NoProgress:
    """A bar that draws nothing (the calls of tqdm's that the project makes)."""

    def __init__(self, total: int | None = None, **_: Any):
        self.total = total
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"NoProgress(total={self.total!r})"


def progress(total: int | None = None, desc: str = "", unit: str = "case",
             enabled: bool | None = None) -> Any:
    """A progress bar of ``total`` steps (``update(n)``, ``set_postfix_str``, ``close``;
    a context manager): tqdm's on stderr when ``enabled`` (None: :func:`progress_wanted`),
    else a :class:`NoProgress`."""
    if not (progress_wanted() if enabled is None else enabled):
        return NoProgress(total=total)
    from tqdm import tqdm

    return tqdm(total=total, desc=desc or None, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True, smoothing=0.1)
