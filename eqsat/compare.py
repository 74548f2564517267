"""The engines side by side over a corpus: ``eqsat compare`` and ``benchmarks/compare.py``.

:func:`run` optimizes every line of a corpus (JSON objects with ``id`` and ``expr``;
``source`` groups them, ``tinygrad`` holds tinygrad's output and ``tg_us`` its time)
with each engine asked for, and keeps per case and engine the output, its reference
cost and idiv+mod count, its cost under the chosen model, and the time it took.
:func:`summary` adds them up per source (the corpus's ``kernel:*`` sources grouped as
``kernel``) and for all cases, with how many cases each engine does strictly better
and worse than each one before it (tinygrad first, when asked); :func:`table` prints
that, :func:`summary` is also the ``--json`` report.

In one process the engines take turns batch by batch (the baseline on a batch's
``batch`` cases, then the e-graph on the same batch), so a load change on a shared
machine hits both alike. Every case is one ``eqsat.optimize`` call of its own (its
output does not depend on the batch), and its output is the engine's result or, when
that is costlier under the chosen model, the input (what ``eqsat.optimize``
returns). ``repeat`` times everything several times: each case keeps
the median of its times (the outputs are the first round's). Each round optimizes
freshly parsed graphs with nothing of an earlier round alive (the outputs kept as
text meanwhile), as a compiler meets new graphs; ``warm`` parses them once instead.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqsat.api import CHUNK, Budget, optimize
from eqsat.ir.sexpr import ParseError, parse, to_sexpr
from eqsat.jsonl import not_utf8, numbered_lines
from extraction import divmod_count, get_cost_model, reference_cost

__all__ = ["Case", "ENGINES", "TINYGRAD", "run", "finish", "load", "read_rows", "error_text",
           "source_group", "summary", "table", "case_rows", "columns", "take_output",
           "short_name"]

#: the engines a comparison can run, in the order they run (and are compared)
ENGINES = ("baseline", "egraph")
#: the name of tinygrad's column: its output stored in each line's ``tinygrad`` field
TINYGRAD = "tinygrad"
_SHORT = {"baseline": "base", "egraph": "eg", TINYGRAD: "tg", "input": "in"}


def short_name(name: str) -> str:
    """The table's short column name of an engine (``eg``, ``base``, ``tg``)."""
    return _SHORT.get(name, name)


def source_group(source: str) -> str:
    """The corpus's source kinds (its ``kernel:*`` sources grouped as ``kernel``)."""
    return "kernel" if source.startswith("kernel") else source


def load(path: str | Path, limit: int | None = None, tinygrad: bool = False
         ) -> list[dict[str, Any]]:
    """The cases of a JSONL corpus file (see :func:`read_rows`); a line that is none
    raises ValueError naming the file and the line."""
    with open(path, "rb") as f:
        rows, errors = read_rows(numbered_lines(f, str(path)), limit, tinygrad)
    if errors:
        e = errors[0]
        raise ValueError(f"{path}:{e['line']}: {error_text(e)}")
    return rows


def read_rows(lines: Iterable[tuple[int, str]], limit: int | None = None,
              tinygrad: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cases of numbered lines (:func:`eqsat.jsonl.numbered_lines`), the first
    ``limit`` lines only, and the lines that are no case: ``(rows, errors)``, each
    error ``{"line": n, "id": the line's id or None, "error": what is wrong}``. A case
    is a JSON object with ``id`` and ``expr`` (and ``tinygrad`` when ``tinygrad``),
    whose ``expr`` (and ``tinygrad``, when a string) parse; a line that is not UTF-8
    or not JSON, lacks a field or does not parse is an error, and the other lines are
    read on."""
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for k, (n, line) in enumerate(lines, 1):
        row, error = _case_of(n, line, tinygrad)
        if error is None:
            rows.append(row)
        else:
            errors.append({"line": n, "id": row.get("id"), "error": error})
        if limit and k >= limit:
            break
    return rows, errors


def error_text(error: dict[str, Any]) -> str:
    """An error of :func:`read_rows` as text: its case's id (when known) and what is
    wrong."""
    return (f"case {error['id']!r}: " if error["id"] is not None else "") + error["error"]


def _case_of(n: int, line: str, tinygrad: bool) -> tuple[dict[str, Any], str | None]:
    """Line ``n`` as a case: (the JSON object, None), or (what is known of it, what is
    wrong)."""
    bad = not_utf8(n, line)
    if bad:
        return {}, bad
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        return {}, f"bad JSON: {e}"
    except RecursionError:
        return {}, "bad JSON: nested too deeply"
    if not isinstance(row, dict):
        return {}, "expected a JSON object with id and expr"
    for key in ("id", "expr") + ((TINYGRAD,) if tinygrad else ()):
        if key not in row or (key != "id" and not isinstance(row[key], str)):
            return row, (f"needs the field {key!r}" + (" (a string)" if key != "id" else "")
                         + (" holding tinygrad's output (--tinygrad reads it)"
                            if key == TINYGRAD else ""))
    for key in ("expr", TINYGRAD):
        if isinstance(row.get(key), str):
            try:
                parse(row[key])
            except ParseError as e:
                return row, f"field {key!r}:{e.line}:{e.col}: {e.msg}"
    return row, None


@dataclass
class Case:
    """One corpus line and what each engine made of it (dicts keyed by engine name;
    ``cost``/``divmod`` also have ``"input"`` and, when the line has tinygrad's output,
    ``"tinygrad"``; ``wall`` has tinygrad's time from ``tg_us`` when given)."""

    id: Any
    source: str
    cost: dict[str, int] = field(default_factory=dict)
    divmod: dict[str, int] = field(default_factory=dict)
    model: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    equivalent: dict[str, bool] = field(default_factory=dict)
    #: engine -> why its output's check stopped before its last draw (a kernel's check
    #: past its work bound): no difference found, but not every draw compared
    unchecked: dict[str, str] = field(default_factory=dict)
    out: dict[str, Any] = field(default_factory=dict, repr=False)
    stats: dict[str, dict] = field(default_factory=dict, repr=False)


def take_output(c: Case, engine: str, g: Any, o: Any, cm: Any,
                stats: dict | None = None) -> None:
    """Record ``engine``'s output ``o`` of input ``g``: the input when that is cheaper
    under ``cm`` (``eqsat.optimize``'s rule)."""
    cin, cout = cm.graph_cost(g), cm.graph_cost(o)
    c.out[engine], c.model[engine] = (o, cout) if cout <= cin else (g, cin)
    c.stats[engine] = stats or {}


def _parse_row(row: dict[str, Any], key: str) -> Any:
    try:
        return parse(row[key])
    except ParseError as e:
        raise ValueError(f"case {row.get('id')!r}: field {key!r}:{e.line}:{e.col}: "
                         f"{e.msg}") from None


def run(rows: list[dict[str, Any]], *, engines: Sequence[str] = ENGINES, batch: int = CHUNK,
        model: str = "reference", check: bool = False, seconds: float = 300.0,
        samples: int = 3000, repeat: int = 1, warm: bool = False,
        on_batch: Callable[[int], None] | None = None
        ) -> tuple[list[Case], list[dict[str, dict[str, float]]]]:
    """Optimize every row with each of ``engines`` (see the module docstring): the
    per-case results and every timing round's totals (``{"wall": {engine: s}, "cpu":
    ...}``). ``check``: test every output's equivalence to its input (``samples``
    points at most). ``on_batch(n)``: called after each batch of ``n`` cases of the
    first round (a progress bar's ``update``)."""
    for e in engines:
        if e not in ENGINES:
            raise ValueError(f"unknown engine {e!r}; choose among {', '.join(ENGINES)}")
    engines = [e for e in ENGINES if e in engines]
    cm = get_cost_model(model)
    graphs = [_parse_row(r, "expr") for r in rows]
    cases = [Case(r["id"], str(r.get("source", "-"))) for r in rows]
    for c, r, g in zip(cases, rows, graphs, strict=True):
        c.cost["input"], c.divmod["input"] = reference_cost(g), divmod_count(g)
        if isinstance(r.get(TINYGRAD), str):
            t = _parse_row(r, TINYGRAD)
            c.cost[TINYGRAD], c.divmod[TINYGRAD] = reference_cost(t), divmod_count(t)
            if isinstance(r.get("tg_us"), int | float):
                c.wall[TINYGRAD] = r["tg_us"] * 1e-6
    times: dict[str, list[list[float]]] = {f"{k}_{e}": [[] for _ in cases]
                                           for k in ("wall", "cpu") for e in engines}
    if "egraph" in engines:
        from eqsat.engines.egraph import session_for

        session_for(None)  # the session's one-time setup is not a case's time
    step = max(batch, 1)
    nrounds = max(repeat, 1)
    for rnd in range(nrounds):
        if "egraph" in engines:
            # each round starts with an empty result cache: no round is answered from
            # an earlier one's results (a case twice in the corpus still hits it)
            from eqsat.engines.egraph import clear_result_cache

            clear_result_cache()
        if rnd and not warm:
            if rnd == 1:  # the first round's outputs as text: nothing of it stays alive
                for c in cases:
                    c.out = {e: to_sexpr(o, compact=True) for e, o in c.out.items()}
            graphs = gs = res = g = t = None  # the last round's graphs, released
            gc.collect()  # (the old graphs' weak cache entries go now, not in a timing)
            graphs = [parse(r["expr"]) for r in rows]
        for i in range(0, len(graphs), step):
            gs, cs = graphs[i:i + step], cases[i:i + step]
            for e in engines:
                for k, w, p, res in _timed(e, gs, cm, seconds):
                    times[f"wall_{e}"][i + k].append(w)
                    times[f"cpu_{e}"][i + k].append(p)
                    if rnd == 0:
                        take_output(cs[k], e, gs[k], res[0], cm, res[1])
            if rnd == 0 and on_batch is not None:
                on_batch(len(gs))
    rounds = [{k: {e: sum(v[r] for v in times[f"{k}_{e}"] if len(v) > r) for e in engines}
               for k in ("wall", "cpu")} for r in range(nrounds)]
    for key, per_case in times.items():
        kind, e = key.split("_", 1)
        for c, v in zip(cases, per_case, strict=True):
            if v:
                getattr(c, kind)[e] = statistics.median(v)
    for c in cases:  # the first round's outputs kept as text: read back (hash-consed)
        c.out = {e: parse(o) if isinstance(o, str) else o for e, o in c.out.items()}
    finish(cases, graphs, engines, check, samples)
    return cases, rounds


def finish(cases: list[Case], graphs: list[Any], engines: Sequence[str], check: bool = False,
           samples: int = 3000) -> None:
    """Fill in each case's reference cost and idiv+mod count of each engine's output
    (and, with ``check``, whether it is equivalent to its input graph in ``graphs``; a
    check that stopped early is named in ``Case.unchecked``)."""
    for c, g in zip(cases, graphs, strict=True):
        for e in engines:
            o = c.out[e]
            c.cost[e], c.divmod[e] = reference_cost(o), divmod_count(o)
            if check:
                from eqsat.ir.equiv import check_equivalent

                eq = check_equivalent(g, o, samples=samples)
                c.equivalent[e] = bool(eq)
                if eq and eq.stopped:
                    c.unchecked[e] = eq.stopped


def _timed(engine: str, gs: list[Any], cm: Any, seconds: float
           ) -> list[tuple[int, float, float, tuple[Any, dict]]]:
    """Run ``engine`` on one batch, one ``eqsat.optimize`` call a case: per case (index,
    wall s, CPU s, (output, stats))."""
    out = []
    budget = Budget(seconds=seconds)
    for k, g in enumerate(gs):
        w, p = time.perf_counter(), time.process_time()
        res = optimize(g, engine=engine, cost_model=cm, budget=budget)
        out.append((k, time.perf_counter() - w, time.process_time() - p,
                    (res.graph, res.stats)))
    return out


def columns(engines: Sequence[str], tinygrad: bool = False) -> list[str]:
    """The report's columns after the input: tinygrad (when asked), then the engines in
    their running order."""
    return ([TINYGRAD] if tinygrad else []) + [e for e in ENGINES if e in engines]


def _pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """(a, b) for every engine a and every column b before it: a is compared to b."""
    return [(a, b) for i, a in enumerate(names) for b in names[:i] if a != TINYGRAD]


def summary(cases: list[Case], engines: Sequence[str], tinygrad: bool = False
            ) -> dict[str, Any]:
    """The figures per source group and for all cases (``"ALL"``): ``n``, ``cost`` and
    ``divmod`` totals (input, tinygrad, each engine), ``seconds`` (total) and
    ``median_ms`` (per case) of each engine (and tinygrad's, from ``tg_us``),
    ``better``/``worse``: ``"a<b"`` -> how many cases a's output is strictly cheaper /
    costlier than b's (reference cost), for each engine a and each column b before it;
    ``inequivalent`` where checked. JSON-ready."""
    names = columns(engines, tinygrad)
    groups: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        groups[source_group(c.source)].append(c)
    out: dict[str, Any] = {"cases": len(cases), "engines": list(engines),
                           "tinygrad": tinygrad, "sources": {}}
    for name in [*sorted(groups), "ALL"]:
        cs = cases if name == "ALL" else groups[name]
        timed = [n for n in names if all(n in c.wall for c in cs)]
        s: dict[str, Any] = {
            "n": len(cs),
            "cost": {k: sum(c.cost[k] for c in cs) for k in ["input", *names]},
            "divmod": {k: sum(c.divmod[k] for c in cs) for k in ["input", *names]},
            "seconds": {k: round(sum(c.wall[k] for c in cs), 6) for k in timed},
            "median_ms": {k: round(statistics.median(c.wall[k] for c in cs) * 1e3, 3)
                          for k in timed},
            "better": {f"{a}<{b}": sum(c.cost[a] < c.cost[b] for c in cs)
                       for a, b in _pairs(names)},
            "worse": {f"{a}>{b}": sum(c.cost[a] > c.cost[b] for c in cs)
                      for a, b in _pairs(names)},
        }
        if any(c.equivalent for c in cs):
            s["inequivalent"] = {e: sum(c.equivalent.get(e) is False for c in cs)
                                 for e in engines}
        if any(c.unchecked for c in cs):
            s["check_stopped"] = {e: sum(e in c.unchecked for c in cs) for e in engines}
        if name == "ALL":
            out["all"] = s
        else:
            out["sources"][name] = s
    return out


def table(rep: dict[str, Any]) -> list[str]:
    """:func:`summary`'s figures as a text table, one line per source group and ALL."""
    names = columns(rep["engines"], rep["tinygrad"])
    pairs = _pairs(names)
    allrow = rep["all"]
    timed = list(allrow["seconds"])
    cols = ["input", *names]
    checked = list(rep["engines"]) if "inequivalent" in allrow else []
    sn = short_name
    # the segments of a line, each a list of columns (header, width, format, value)
    segs: list[list[tuple[str, int, str, Callable[[dict[str, Any]], Any]]]] = [
        [("source", 20, "<", lambda s: s["name"]), ("n", 5, ">", lambda s: s["n"])],
        [(sn(k), 7, ">", lambda s, k=k: s["cost"][k]) for k in cols],
        [(sn(k), 5, ">", lambda s, k=k: s["divmod"][k]) for k in cols],
        [c for k in timed
         for c in ((sn(k) + " s", 8, ">.2f", lambda s, k=k: s["seconds"][k]),
                   ("med ms", 7, ">.1f", lambda s, k=k: s["median_ms"][k]))],
        [c for a, b in pairs
         for c in ((f"{sn(a)}<{sn(b)}", 9, ">", lambda s, a=a, b=b: s["better"][f"{a}<{b}"]),
                   (f"{sn(a)}>{sn(b)}", 9, ">", lambda s, a=a, b=b: s["worse"][f"{a}>{b}"]))],
        [(sn(e), 6, ">", lambda s, e=e: s.get("inequivalent", {}).get(e, 0)) for e in checked],
    ]

    def segments(s: dict[str, Any] | None) -> list[str]:
        """The line's segments (the header's when ``s`` is None)."""
        if s is None:
            return ["".join(f"{h:{f[0]}{w}}" for h, w, f, _ in seg) for seg in segs]
        return ["".join(f"{get(s):{f[0]}{w}{f[1:]}}" for _, w, f, get in seg) for seg in segs]

    head = segments(None)
    titles = [("",), ("reference cost", "cost"), ("idiv+mod",),
              ("time (total, median)", "time"), ("cases better / worse", "better/worse"),
              ("not equivalent", "neq")]

    def title(i: int) -> str:  # the longest that fits its columns
        w = len(head[i])
        return f"{next((t for t in titles[i] if len(t) <= w), titles[i][-1][:w]):^{w}}"

    keep = [i for i, h in enumerate(head) if h]  # no time or check columns: no segment
    out = [" | ".join(title(i) for i in keep), " | ".join(head[i] for i in keep)]
    out.append("-" * len(out[-1]))
    for name, s in [*rep["sources"].items(), ("ALL", allrow)]:
        seg = segments({"name": name, **s})
        out.append(" | ".join(seg[i] for i in keep))
    return out


def case_rows(cases: list[Case], engines: Sequence[str], tinygrad: bool = False
              ) -> list[dict[str, Any]]:
    """Each case's id, source, and reference cost and idiv+mod count per column (the
    input's, tinygrad's when asked, each engine's): the ``--json`` report's
    ``per_case``."""
    keys = ["input", *columns(engines, tinygrad)]
    return [{"id": c.id, "source": c.source, "cost": {k: c.cost[k] for k in keys},
             "divmod": {k: c.divmod[k] for k in keys}} for c in cases]
