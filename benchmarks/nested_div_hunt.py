"""Hunt small nested divisions whose e-graph grows without end.

A rule that merges two divisors into their product (``floordiv(floordiv(x, c1) + c2,
c3) -> floordiv(x + c1*c2, c1*c3)``) can feed itself: where the merged quotient equals
the inner one (a class of two values), the class holds its own nested form and every
step multiplies the divisor again (docs/rules.md, "No unbounded expansion"). This
script draws random chains of ``floordiv``/``floormod``/``idiv``/``mod`` over narrow,
negative and mixed-sign ranges (a variable, or a variable times a constant), with
constant offsets and factors between the levels, runs each through the e-graph
(``cost_model="reference"``, each on its own, the result cache off) and the baseline,
and prints the stop reasons, the total costs, and the worst cases by e-nodes with the
rule that matched most. A run stopped by ``iterations`` or ``enodes`` under
``--stall 0`` is the sign of such a chain.

Usage: ``python benchmarks/nested_div_hunt.py [--n 3000] [--seed 0] [--stall 1]
[--iterations 12] [--top 10]``
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

__all__ = ["nested_div", "main"]

_OPS = ("floordiv", "floordiv", "idiv", "floormod", "mod")
_DIVISORS = (2, 3, 4, 5, 8, 9, 16, -2, -3)


def _leaf(rng: random.Random) -> str:
    lo = rng.randint(-24, 12)
    v = f"(var a {lo} {lo + rng.choice((1, 2, 3, 4, 5, 6, 8, 10, 12))})"
    return f"(mul {v} {rng.choice((-4, -3, -2, 2, 3, 4))})" if rng.random() < 0.5 else v


def nested_div(rng: random.Random) -> str:
    """One chain of two or three divisions (the innermost a quotient), with offsets."""
    x = _leaf(rng)
    for level in range(rng.choice((2, 2, 3))):
        op = rng.choice(_OPS) if level else rng.choice(("floordiv", "idiv"))
        x = f"({op} {x} {rng.choice(_DIVISORS)})"
        c = rng.randint(-6, 6)
        if c and (level == 0 or rng.random() < 0.7):
            x = f"(add {x} {c})"
        if rng.random() < 0.15:
            x = f"(mul {x} {rng.choice((-2, 2, 3))})"
    return x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stall", type=int, default=1, help="Budget.stall (0: run to the end)")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--top", type=int, default=10)
    a = ap.parse_args(argv)

    import eqsat
    from eqsat.api import Budget
    from eqsat.engines.egraph import set_result_cache_size
    from eqsat.ir.equiv import check_equivalent
    from eqsat.ir.sexpr import parse

    set_result_cache_size(0)
    eqsat.session_for(None).prepare()
    rng = random.Random(a.seed)
    budget = Budget(stall=a.stall, iterations=a.iterations)
    seen: set[str] = set()
    rows = []
    stops: Counter[str] = Counter()
    cost = base = 0.0
    worse = bad = 0
    while len(seen) < a.n:
        text = nested_div(rng)
        if text in seen:
            continue
        seen.add(text)
        g = parse(text)
        r = eqsat.optimize(g, cost_model="reference", budget=budget)
        b = eqsat.optimize(g, engine="baseline", cost_model="reference")
        stops[r.stats["stop_reason"]] += 1
        cost += r.cost
        base += b.cost
        worse += r.cost > b.cost
        bad += not check_equivalent(g, r.graph)
        m = r.stats.get("matches") or {}
        top = max(sorted(m), key=lambda k: m[k], default="-")
        rows.append((r.stats["enodes"], text, r.stats["stop_reason"], top, m.get(top, 0)))
    print(f"{a.n} chains (seed {a.seed}, stall {a.stall}, iterations {a.iterations}): "
          f"stops {dict(sorted(stops.items()))}")
    print(f"e-graph cost {cost:.0f}, baseline cost {base:.0f}, costlier than the baseline "
          f"{worse}, inequivalent {bad}")
    print(f"{'e-nodes':>8} {'stop':<10} {'most matches':<32} input")
    for n, text, stop, top, k in sorted(rows, key=lambda t: (-t[0], t[1]))[:a.top]:
        print(f"{n:>8} {stop:<10} {f'{top} {k}':<32} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
