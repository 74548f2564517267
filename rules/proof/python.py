"""Proof obligations of the rules written in Python (one function a rule).

Each entry of :data:`OBLIGATIONS` maps a rule's name to a function ``(rlimit) ->
Outcome`` (``rlimit``: the budget of one z3 query, in z3's resource units). The rule's
own code runs on instances of its pattern (UOp graphs) and z3 shows its output equal to
its input for every value of the instance's leaves (:func:`rules.proof.uops.same_graph`):

- **proven**: the instances cover every shape the rule's code reads (lane lists of
  vectors of up to :data:`MAX_LANES` lanes, every op it takes, every dtype it
  distinguishes) and the values are symbolic: constants too where the rule only moves
  them (``symbolic_consts``). The shapes are the rule's structure, not its values.
- **tested-only**: the rule's decisions read concrete values z3 cannot follow through
  its code (coefficients, divisors and bounds of linear forms; the bounds a guard
  compares): its instances are a stated grid of those values, each proven over every
  value of its leaves; or its meaning is a kernel's effects, run by the reference
  interpreter over every value of a small domain.

A rule whose instances never fire fails: its obligation would be empty.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

import z3

from eqsat.ir.dtype import dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.pattern import Rule
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from rules.proof.laws import Outcome
from rules.proof.uops import same_graph, same_graphs

__all__ = ["OBLIGATIONS", "MAX_LANES", "register"]

#: vectors of up to this many lanes are enumerated (every lane list of them)
MAX_LANES = 3

OBLIGATIONS: dict[str, Callable[[int], Outcome]] = {}

#: rewrites proven in one z3 query (see :func:`rules.proof.uops.same_graphs`)
_CHUNK = 32


def register(name: str, fn: Callable[[int], Outcome]) -> None:
    """Give the rule ``name`` its proof obligation (an engine registers its passes')."""
    OBLIGATIONS[name] = fn


def _rule(name: str) -> Rule:
    import rules

    for r in rules.all_rules():
        if r.name == name:
            return r
    raise KeyError(name)


def _check(name: str, apply: Callable[[UOp], UOp | None], instances: Iterable[UOp],
           rlimit: int, status: str, domain: str, symbolic_consts: bool = False) -> Outcome:
    """Run the rule on each instance and prove every rewrite (see the module docstring)."""
    t0 = time.perf_counter()
    pairs = []
    for u in instances:
        try:
            out = apply(u)
        except Exception as e:  # the rule's code fails on an instance of its pattern
            return Outcome(name, "failed", time.perf_counter() - t0,
                           f"the rule raised {type(e).__name__} on {u!r}")
        if out is not None and out is not u:
            pairs.append((u, out))
    fired = len(pairs)
    # a chunk of rewrites at a time in one z3 query (a twentieth of the budget); a chunk z3 does
    # not settle so is halved, down to single rewrites, proven one by one (which finds
    # a counterexample)
    todo = []
    chunks = [pairs[i:i + _CHUNK] for i in range(0, len(pairs), _CHUNK)]
    while chunks:
        chunk = chunks.pop()
        if len(chunk) < 2:
            todo.extend(chunk)
        elif not same_graphs(chunk, rlimit // 20, symbolic_consts):
            half = len(chunk) // 2
            chunks += [chunk[:half], chunk[half:]]
    for u, out in todo:
        try:
            r, model = same_graph(u, out, rlimit, symbolic_consts)
        except NotImplementedError as e:
            return Outcome(name, "failed", time.perf_counter() - t0, f"no semantics: {e}")
        if r == z3.sat:
            return Outcome(name, "failed", time.perf_counter() - t0,
                           f"counterexample on {u!r} -> {out!r}: {model}")
        if r != z3.unsat:
            return Outcome(name, "failed", time.perf_counter() - t0, f"z3 gave up on {u!r}")
    if not fired:
        return Outcome(name, "failed", time.perf_counter() - t0, "no instance fired the rule")
    return Outcome(name, status, time.perf_counter() - t0, f"{fired} instances: {domain}")


def _baseline(name: str, instances: Callable[[], Iterable[UOp]], status: str, domain: str,
              symbolic_consts: bool = False) -> None:
    def fn(rlimit: int) -> Outcome:
        return _check(name, _rule(name).apply, instances(), rlimit, status, domain,
                      symbolic_consts)
    register(name, fn)


# ---------------------------------------------------------------------------
# GEP pushing: lanes of vectors (every lane list of up to MAX_LANES lanes)
def _vars(n: int, prefix: str = "v") -> list[UOp]:
    return [UOp.var(f"{prefix}{i}", -9, 9) for i in range(n)]


def _vec(n: int, prefix: str = "v", dt: Any = None) -> UOp:
    xs = _vars(n, prefix)
    if dt is not None:
        xs = [x.cast(dt) for x in xs]
    return UOp(Ops.VECTORIZE, xs[0].dtype.vec(n), tuple(xs))


def _lane_lists(n: int, most: int = MAX_LANES) -> Iterable[tuple[int, ...]]:
    for k in range(1, most + 1):
        yield from itertools.product(range(n), repeat=k)


def _gep_instances() -> dict[str, Callable[[], Iterable[UOp]]]:
    widths = range(2, MAX_LANES + 1)

    def gep_of_gep() -> Iterable[UOp]:
        for n in widths:
            v = _vec(n)
            for inner in _lane_lists(n):
                for outer in _lane_lists(len(inner)):
                    yield v.gep(*inner).gep(*outer) if len(inner) > 1 else \
                        UOp(Ops.GEP, v.dtype.scalar(), (v.gep(*inner),), outer)

    def gep_of_broadcast() -> Iterable[UOp]:
        x = UOp.var("x", -9, 9)
        for n in widths:
            v = UOp(Ops.VECTORIZE, x.dtype.vec(n), (x,) * n)
            for i in range(n):
                yield v.gep(i)

    def gep_of_vectorize() -> Iterable[UOp]:
        for n in widths:
            v = _vec(n)
            for idx in _lane_lists(n):
                yield v.gep(*idx)

    def gep_of_scalar() -> Iterable[UOp]:
        for x in (UOp.var("x", -9, 9), UOp.var("x", -9, 9).cast(dtypes.f32)):
            yield x.gep(0)

    def gep_of_const() -> Iterable[UOp]:
        for dt in (dtypes.index, dtypes.f32, dtypes.i8):
            for n in widths:
                c = UOp.const(dt.vec(n), 5)
                for idx in _lane_lists(n):
                    yield c.gep(*idx)

    def gep_of_vconst() -> Iterable[UOp]:
        for n in widths:
            c = UOp.vconst(dtypes.index, tuple(range(3, 3 + n)))
            for idx in _lane_lists(n):
                yield c.gep(*idx)

    def gep_of_invalid() -> Iterable[UOp]:
        for dt in (dtypes.index, dtypes.i32, dtypes.f32, dtypes.bool):
            for n in widths:
                inv = UOp.invalid().cast(dt.vec(n))
                for idx in _lane_lists(n):
                    yield inv.gep(*idx)

    def gep_identity() -> Iterable[UOp]:
        for n in widths:
            yield _vec(n).gep(*range(n))

    def gep_through_alu() -> Iterable[UOp]:
        for n in widths:
            a, b, c = _vec(n, "a"), _vec(n, "b"), _vec(n, "c")
            cond = UOp(Ops.LT, dtypes.bool.vec(n), (a, b))
            nz = UOp(Ops.VECTORIZE, dtypes.index.vec(n),
                     tuple(UOp.var(f"p{i}", 1, 9) for i in range(n)))
            alus = [UOp(op, a.dtype, (a, b)) for op in sorted(
                GroupOp.Binary - GroupOp.Comparison - GroupOp.IntDiv - {
                    Ops.MULHI, Ops.FDIV, Ops.POW, Ops.SHL, Ops.SHR},
                key=lambda o: o.value)]
            alus += [UOp(op, a.dtype, (a, nz)) for op in sorted(GroupOp.IntDiv,
                                                                 key=lambda o: o.value)]
            alus += [UOp(Ops.NEG, a.dtype, (a,)), UOp(Ops.WHERE, a.dtype, (cond, a, b)),
                     UOp(Ops.MULACC, a.dtype, (a, b, c)),
                     UOp(Ops.LT, dtypes.bool.vec(n), (a, b))]
            for alu in alus:
                for idx in _lane_lists(n, 2):
                    yield alu.gep(*idx)

    def gep_of_cat() -> Iterable[UOp]:
        for n in widths:
            cat = UOp(Ops.CAT, dtypes.index.vec(n + 2), (_vec(n, "a"), _vec(2, "b")))
            for idx in _lane_lists(n + 2, 2):
                yield cat.gep(*idx)

    def gep_through_cast() -> Iterable[UOp]:
        for n in widths:
            v = _vec(n)
            f = UOp(Ops.CAST, dtypes.f32.vec(n), (v,))
            i = UOp(Ops.CAST, dtypes.i32.vec(n), (v,))
            b = UOp(Ops.BITCAST, dtypes.f32.vec(n), (i,))
            for x in (f, i, b):
                for idx in _lane_lists(n, 2):
                    yield x.gep(*idx)

    def vectorize_of_geps() -> Iterable[UOp]:
        for n in widths:
            v = _vec(n)
            for idx in _lane_lists(n):
                if len(idx) > 1:
                    yield UOp(Ops.VECTORIZE, v.dtype.scalar().vec(len(idx)),
                              tuple(v.gep(i) for i in idx))

    def gep_of_ptrcat() -> Iterable[UOp]:
        buf = UOp.buffer(0, dtypes.f32, 16)
        idx = [UOp(Ops.INDEX, buf.dtype, (buf, UOp.var(f"i{k}", 0, 15))) for k in range(3)]
        pc = UOp(Ops.PTRCAT, buf.dtype.vec(3) if False else buf.dtype, tuple(idx))
        for lanes in _lane_lists(3, 2):
            yield UOp(Ops.GEP, pc.dtype, (pc,), lanes)

    return {"gep_of_gep": gep_of_gep, "gep_of_broadcast": gep_of_broadcast,
            "gep_of_vectorize": gep_of_vectorize, "gep_of_scalar": gep_of_scalar,
            "gep_of_const": gep_of_const, "gep_of_vconst": gep_of_vconst,
            "gep_of_invalid": gep_of_invalid,
            "gep_identity": gep_identity, "gep_through_alu": gep_through_alu,
            "gep_of_cat": gep_of_cat, "gep_through_cast": gep_through_cast,
            "vectorize_of_geps": vectorize_of_geps, "gep_of_ptrcat": gep_of_ptrcat}


_LANES = f"every lane list of vectors of 2-{MAX_LANES} lanes, lanes symbolic"
for _name, _gen in _gep_instances().items():
    _baseline(_name, _gen, "proven", _LANES, symbolic_consts=True)


def _vectorize_of_invalid() -> Iterable[UOp]:
    for dt in (dtypes.index, dtypes.i32, dtypes.f32, dtypes.bool):
        inv = UOp.invalid() if dt == dtypes.index else UOp.invalid().cast(dt)
        x = UOp.var("x", -9, 9)
        x = x if dt == dtypes.index else x.cast(dt)
        for n in range(2, MAX_LANES + 2):
            yield UOp(Ops.VECTORIZE, dt.vec(n), (inv,) * n)
            for k in range(n):  # one valid lane: not a vector Invalid
                yield UOp(Ops.VECTORIZE, dt.vec(n), (inv,) * k + (x,) + (inv,) * (n - k - 1))


_baseline("vectorize_of_invalid", _vectorize_of_invalid, "proven",
          f"vectors of 2-{MAX_LANES + 1} lanes of index, i32, f32 and bool, every lane "
          "Invalid or all but one")


def _void(rlimit: int) -> Outcome:
    """GEP of a void node (an effect) is the node: proven on a store and a NOOP."""
    buf = UOp.buffer(0, dtypes.f32, 16)
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, UOp.var("i", 0, 15))),
                                      UOp.var("x", -9, 9).cast(dtypes.f32)))
    return _check("gep_of_void", _rule("gep_of_void").apply,
                  [UOp(Ops.GEP, dtypes.void, (st,), (0,)), UOp(Ops.GEP, dtypes.void,
                                                               (UOp(Ops.NOOP),), (0,))],
                  rlimit, "proven", "a store and a NOOP (a void value is its effect)")


register("gep_of_void", _void)


def _unroll(rlimit: int) -> Outcome:
    r = _rule("gep_of_unroll")
    v = _vec(3)
    u = UOp(Ops.GEP, dtypes.index, (UOp(Ops.UNROLL, v.dtype, (v,), ((0, 3),)),), (1,))
    t0 = time.perf_counter()
    out = r.apply(u)
    ok = out is v.gep(1)
    return Outcome("gep_of_unroll", "tested-only" if ok else "failed", time.perf_counter() - t0,
                   "UNROLL has no value in the reference interpreter (an expansion marker "
                   "of vectorization): checked that the GEP moves onto its source")


register("gep_of_unroll", _unroll)

# ---------------------------------------------------------------------------
# loads and stores through an Invalid index or a constant gate; where on load
_BUF = "(buffer 0 f32 16)"
_I = "(var i 0 15)"


def _memory() -> dict[str, list[Any]]:
    alt = "(cast f32 (var a -9 9))"
    val = "(cast f32 (var v -9 9))"
    return {
        "load_invalid_index": [f"(load (index {_BUF} (invalid)))"],
        "load_alt_invalid_index": [f"(load (index {_BUF} (invalid)) {alt})"],
        "load_cast_invalid_index": [("load", f"(index {_BUF} (invalid))")],
        "store_invalid_index": [f"(store (index {_BUF} (invalid)) {val})"],
        "store_cast_invalid_index": [("store", f"(index {_BUF} (invalid))", val)],
        "index_gate_true": [f"(load (index {_BUF} {_I} true))"],
        "load_gate_false": [f"(load (index {_BUF} {_I} false))"],
        "load_alt_gate_false": [f"(load (index {_BUF} {_I} false) {alt})"],
        "store_gate_false": [f"(store (index {_BUF} {_I} false) {val})"],
    }


def _instance(t: Any) -> UOp:
    """A text instance, or ``(op, index, *srcs)``: that op of a pointer cast of the index
    (the s-expression reader has no pointer dtypes)."""
    if isinstance(t, str):
        return parse(t)
    op, ix, *rest = t
    ix = parse(ix)
    cast = UOp(Ops.CAST, ix.dtype, (ix,))
    if op == "load":
        return UOp(Ops.LOAD, dtypes.f32, (cast,))
    return UOp(Ops.STORE, dtypes.void, (cast, *map(parse, rest)))


def _memory_check(name: str, texts: list[Any]) -> Callable[[int], Outcome]:
    def fn(rlimit: int) -> Outcome:
        r = _rule(name)

        def apply(u: UOp) -> UOp | None:
            out = r.apply(u)
            if out is None and u.op in (Ops.LOAD, Ops.STORE):  # the rule's node is inside
                inner = r.apply(u.src[0])
                if inner is not None:
                    return u.replace(src=(inner,) + u.src[1:])
            return out
        return _check(name, apply, [_instance(t) for t in texts], rlimit, "proven",
                      "addresses, buffer contents and values symbolic")
    return fn


for _name, _texts in _memory().items():
    register(_name, _memory_check(_name, _texts))

# ---------------------------------------------------------------------------
# the div/mod core (rules.divmod_core): its decisions read coefficients, constants and
# bounds concretely, so its obligation is a grid of them, each instance proven for every
# value of its variables
_GRID_VARS = {"a": (0, 7), "b": (0, 5), "s": (-6, 6), "t": (-5, 0), "n": (1, 4), "e": (0, 1)}


def _gv(name: str) -> UOp:
    lo, hi = _GRID_VARS[name]
    return UOp.var(name, lo, hi)


def _grid_atoms() -> list[UOp]:
    """Atoms: variables, their quotients and remainders, products, nested remainders."""
    a, b, s, t, n, e = (_gv(k) for k in "abstne")
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    return [a, b, s, t, e, a % c(4), a // c(2), a // c(4), (a // c(2)) % c(3), s % c(3),
            s // c(2), a * n, (a + b) % c(6), a % (n * c(3))]


_COEFS = (1, 2, 3, -2)
_CONSTS = (0, 1, 5, -2)
_PAIR_COEFS = ((1, 1), (2, 4), (3, 1), (2, -2))


def _grid_numerators() -> Iterable[UOp]:
    atoms = _grid_atoms()
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    for x in atoms:
        for k in _CONSTS:
            for f in _COEFS:
                yield x * c(f) + c(k) if f != 1 else x + c(k)
    for x, y in itertools.combinations(atoms[:7], 2):
        for f, g in _PAIR_COEFS:
            for k in (0, 3):
                yield x * c(f) + y * c(g) + c(k)


def _grid_divisors() -> list[UOp]:
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    n = _gv("n")
    return [c(2), c(3), c(4), c(6), c(-4), n, n * c(2)]


_DIVMOD_DOMAIN = ("x OP y for x = f*u + k over the atoms u in a, b, s, t, e, a%4, a//2, "
                  "a//4, (a//2)%3, s%3, s//2, a*n, (a+b)%6, a%(3n) (a in [0,7], b in [0,5], "
                  "s in [-6,6], t in [-5,0], n in [1,4], e in [0,1]), f in "
                  f"{_COEFS}, k in {_CONSTS}, and x = f*u + g*v + k over the first seven "
                  f"atoms, (f, g) in {_PAIR_COEFS}, k in (0, 3); y in 2, 3, 4, 6, -4, n, 2n; "
                  "each instance proven for every value of the variables")


def _grid() -> list[tuple[UOp, UOp, UOp]]:
    out = []
    for x in _grid_numerators():
        for y in _grid_divisors():
            out.append((x, y, x // y))
            out.append((x, y, x % y))
    return out


def _divmod_obligation(name: str, fn: Callable[..., Any],
                       every: int = 1) -> Callable[[int], Outcome]:
    def ob(rlimit: int) -> Outcome:
        from rules.divmod import UOpCtx, to_lin

        def apply(d: UOp) -> UOp | None:
            return fn("idiv" if d.op is Ops.IDIV else "mod", to_lin(d.src[0]),
                      to_lin(d.src[1]), UOpCtx(d))
        domain = _DIVMOD_DOMAIN if every == 1 else \
            f"one instance in {every} of: {_DIVMOD_DOMAIN}"
        return _check(name, apply, (d for _, _, d in _grid()[::every]), rlimit,
                      "tested-only", domain)
    return ob


def _register_divmod() -> None:
    from rules.divmod_core import DIVMOD_RULES, fold_divmod_general
    from rules.proof.divmod_sym import SYMBOLIC, obligation

    for r in DIVMOD_RULES:
        # a rule whose code runs on symbolic forms is proven so (rules.proof.divmod_sym);
        # the others over the grid
        register(r.name, obligation(r.name) if r.name in SYMBOLIC else
                 _divmod_obligation(r.name, r.fn))
    # fold_divmod_general is the first of the eight rules that fires, each proven on the
    # whole grid above: its own obligation takes one instance of it in six
    register("fold_divmod_general", _divmod_obligation("fold_divmod_general",
                                                       fold_divmod_general, 6))


_register_divmod()


def _sum_grid() -> Iterable[UOp]:
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    a, s, b = _gv("a"), _gv("s"), _gv("b")
    for x in (a, s, a + b):
        for n, d in ((2, 3), (4, 2)):
            terms = [x % c(n), x // c(n), (x // c(n)) % c(d), x // c(n * d), x % c(n * d),
                     (x + c(2 * n)) // c(n), (x // c(d) + c(1)) % c(n), (x + c(d)) // c(n * d)]
            for u, v in itertools.combinations(terms, 2):
                for f in (1, 2, -1):
                    for g in (1, n, n * d, -n):
                        for y in (None, b):
                            t = u * c(f) + v * c(g) if f != 1 else u + v * c(g)
                            yield t if y is None else t + y


_SUM_DOMAIN = ("f*u + g*v (+ b) for u, v two of x%n, x//n, (x//n)%d, x//(n*d), x%(n*d), "
               "(x + 2*n)//n, (x//d + 1)%n, (x + d)//(n*d), "
               "x in a, s, a+b, (n, d) in (2, 3), (4, 2), f in 1, 2, -1, g in 1, n, n*d, -n "
               "(a in [0,7], b in [0,5], s in [-6,6]); each instance proven for every value "
               "of the variables")


def _register_sum_rules(sum_rules: Iterable[Any], grid: Callable[[], Iterable[UOp]],
                        domain: str) -> None:
    """Whole-sum rules (their core over UOps, ``rules.divmod.UOpCtx``) on a grid of sums."""
    from rules.divmod import UOpCtx, to_lin

    for r in sum_rules:
        register(r.name, lambda ms, r=r: _check(
            r.name, lambda u: r.fn(to_lin(u), UOpCtx(u)), grid(), ms, "tested-only", domain))


def _register_sums() -> None:
    from rules.divmod_core import SUM_RULES

    _register_sum_rules(SUM_RULES, _sum_grid, _SUM_DOMAIN)
    register("recombine_divmod_sum", lambda ms: _check(
        "recombine_divmod_sum", _rule("recombine_divmod_sum").apply, _sum_grid(), ms,
        "tested-only", _SUM_DOMAIN))


_register_sums()


def _where_sum_grid() -> Iterable[UOp]:
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    a, b, s, t = _gv("a"), _gv("b"), _gv("s"), _gv("t")
    c1, c2 = a.lt(c(4)), s.lt(c(1))
    ws = [c1.where(c(1), b), c1.where(c(2), t), c1.where(s, c(3)), c1.where(a + b, c(-2)),
          c1.where(a, a + c(-4)), c1.where(c(0), c(1)), c1.where(c(3), s), c2.where(c(5), a),
          c2.where(c(-1), b * c(2)), c2.where(b, t + b)]
    for k in (2, 3):
        for group in itertools.combinations(ws, k):
            for f in (1, 2, -3):
                for y in (None, b, b + c(3)):
                    u = group[0] * c(f) if f != 1 else group[0]
                    for w in group[1:]:
                        u = u + w
                    yield u if y is None else u + y


_WHERE_SUM_DOMAIN = ("f*w1 + w2 (+ w3) (+ b or b+3) for w1, w2, w3 three of where(a<4, 1, b), "
                     "where(a<4, 2, t), where(a<4, s, 3), where(a<4, a+b, -2), "
                     "where(a<4, a, a-4), where(a<4, 0, 1), where(a<4, 3, s), "
                     "where(s<1, 5, a), where(s<1, -1, 2*b), "
                     "where(s<1, b, t+b), f in 1, 2, -3 (a in [0,7], b in [0,5], s in [-6,6], "
                     "t in [-5,0]); each instance proven for every value of the variables")


def _register_where_sums() -> None:
    from rules.where import SUM_RULES

    _register_sum_rules(SUM_RULES, _where_sum_grid, _WHERE_SUM_DOMAIN)


_register_where_sums()

# ---------------------------------------------------------------------------
# loops and effects (rules.dce): a loop over ranges of small constant ends is unrolled, one
# with a range that never runs writes nothing, any other is an unknown function of its
# body and ranges (rules.proof.uops.Graphs._loop)
_DBUF = "(buffer 0 f32 8)"
_DX = "(var x -9 9)"
_DN, _DE = "(var n 1 9)", "(var e -3 0)"  # a range end of any value; one never above 0


def _dce() -> dict[str, tuple[str, list[str]]]:
    st = f"(store (index {_DBUF} (range 1 4)) (cast f32 {_DX}))"
    stn = f"(store (index {_DBUF} (range 1 {_DN})) (cast f32 {_DX}))"
    stn0 = f"(store (index {_DBUF} (add (range 0 1) (range 1 {_DN}))) (cast f32 {_DX}))"
    st0 = f"(store (index {_DBUF} (add (range 0 1) (range 1 4))) (cast f32 {_DX}))"
    nost = f"(store (index {_DBUF} (invalid)) 1.0)"  # made a NOOP (the reader has none)
    return {
        "range_single_iteration": ("proven", [f"(add (range 0 1) {_DX})", "(range 3 1)"]),
        # an empty range among ranges of any ends (symbolic), first, last or alone
        "end_empty_range": ("proven", [
            f"(end {stn} (range 1 {_DN}) (range 2 0))", f"(end {stn} (range 2 -1) "
            f"(range 1 {_DN}))", f"(end {stn} (range 1 {_DN}) (range 2 {_DE}) (range 3 {_DN}))",
            f"(end (store (index {_DBUF} (range 2 {_DE})) 1.0) (range 2 {_DE}))"]),
        "end_drop_folded_ranges": ("proven", [
            f"(end {st0} (range 0 1) (range 1 4))", f"(end {st0} (range 1 4) (range 0 1))",
            f"(end {st0} (range 0 1))", f"(end {stn0} (range 0 1) (range 1 {_DN}))",
            f"(end {stn0} (range 1 {_DN}) (range 0 1) (range 3 {_DN}))"]),
        "end_of_noop": ("proven", [f"(end {nost} (range 1 4))", f"(end {nost} (range 1 {_DX}))"]),
        "reduce_empty_range": ("proven", [
            f"(reduce {op} (cast {dt} (add {_DX} (range 1 {_DN}))) (range 1 {_DN}) "
            f"(range 2 {_DE}))"
            for op in ("add", "mul", "max", "min") for dt in ("i8", "f32", "u16")] + [
            f"(reduce {op} (add {_DX} (range 1 {_DN})) (range 2 0) (range 1 {_DN}))"
            for op in ("add", "mul")]),
        "reduce_drop_folded_ranges": ("proven", [
            f"(reduce {op} (cast {dt} (add {_DX} (range 0 1))) (range 0 1))"
            for op in ("add", "mul", "max") for dt in ("i8", "f32")] + [
            "(reduce add (add (range 1 4) (range 0 1)) (range 0 1) (range 1 4))",
            "(reduce max (mul (range 1 4) (range 0 1)) (range 1 4) (range 0 1))",
            # a float sum of one -0.0 term is +0.0 (it folds from +0.0)
            f"(reduce add (mul (cast f32 (add {_DX} (range 0 1))) -0.0) (range 0 1))"] + [
            f"(reduce {op} (cast {dt} (add (range 1 {_DN}) (range 0 1))) (range 0 1) "
            f"(range 1 {_DN}))" for op in ("add", "mul", "max") for dt in ("i8", "f32")]),
        "sink_drop_noop": ("proven", [f"(sink {nost} {st})", f"(sink {st} {nost} {st0})",
                                      f"(sink {nost})"]),
        "after_no_deps": ("proven", [f"(after {_DX})", f"(after {st})"]),
        "after_drop_noop": ("proven", [f"(after {_DX} {nost} {st})"]),
    }


_EMPTY = ("a range that never runs (its end a constant <= 0 or a variable in [-3, 0]) "
          "first, last, between or alone, the other ranges' ends variables in [1, 9]: a "
          "loop with such a range runs zero times whatever the others' ends; values, "
          "addresses and buffers symbolic")


_FOLDED = ("a range folded to 0 first, last or between ranges of small constant ends "
           "(unrolled) and of variable ends in [1, 9] (a loop not unrolled is an unknown "
           "function of its body and its other ranges); values, addresses and buffers "
           "symbolic")


def _register_dce() -> None:
    table = _dce()
    for name, (status, texts) in table.items():
        def ob(ms: int, name: str = name, status: str = status, texts: list[str] = texts
               ) -> Outcome:
            r = _rule(name)

            def apply(u: UOp) -> UOp | None:  # the rule's node may be inside the instance
                for n in reversed(u.toposort()):
                    out = r.apply(n)
                    if out is not None and out is not n:
                        return u.substitute({n: out}) if n is not u else out
                return None
            domain = _EMPTY if "empty" in name else _FOLDED if "folded" in name else \
                "the instance's shape for every value of its leaves"
            prep = _folded if "folded" in name else _noops
            return _check(name, apply, [prep(parse(t)) for t in texts], ms, status, domain)
        register(name, ob)


def _noops(u: UOp) -> UOp:
    """``u`` with its stores to an Invalid index made NOOPs (what the rules of
    rules.invalid make them)."""
    dead = {s: UOp(Ops.NOOP) for s in u.toposort() if s.op is Ops.STORE
            and s.src[0].op is Ops.INDEX and s.src[0].src[1].op is Ops.INVALID}
    return u.substitute(dead) if dead else u


def _folded(u: UOp) -> UOp:
    """``u`` with its ranges of one iteration folded to 0 (range_single_iteration's work,
    which the rules dropping folded ranges follow; the reader writes no constant range)."""
    ones = {r: UOp.const(r.dtype, 0) for r in u.toposort()
            if r.op is Ops.RANGE and r.src[0].op is Ops.CONST and r.src[0].arg == 1}
    return u.substitute(ones) if ones else u


_register_dce()

# ---------------------------------------------------------------------------
# operand order, constant vectors, where on a load: their structure, values symbolic
def _commutative() -> Iterable[UOp]:
    a, b = UOp.var("a", -9, 9), UOp.var("b", 0, 9)
    k = UOp.const(dtypes.index, 3)
    for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR, Ops.EQ, Ops.NE):
        for x, y in ((a, b), (b, a), (k, a), (a, k)):
            yield x.alu(op, y)


def _vconsts() -> Iterable[UOp]:
    for dt, vals in ((dtypes.index, (3, -2, 3)), (dtypes.f32, (1.5, -0.0, 0.0)),
                     (dtypes.i8, (127, -128, 0)), (dtypes.bool, (True, False, True))):
        for n in (2, 3):
            yield UOp(Ops.VECTORIZE, dt.vec(n), tuple(UOp.const(dt, v) for v in vals[:n]))


def _where_on_load(negated: bool) -> Iterable[UOp]:
    buf = UOp.buffer(0, dtypes.f32, 64)
    r0, r1 = UOp.range(8, 0), UOp.range(8, 1)
    x = UOp.var("x", -9, 9)
    inv = UOp(Ops.INVALID, dtypes.index)
    zero = UOp.const(dtypes.f32, 0.0)
    gated = r0.lt(6).where(r0 * 8, inv)
    for idx in (r0 * 8 + r1, r0, gated):
        ld = UOp(Ops.LOAD, dtypes.f32, (UOp(Ops.INDEX, buf.dtype, (buf, idx)),))
        for cond in (r0.lt(4), r0.lt(4) & x.lt(3), x.lt(3) & r0.lt(6) & r1.lt(5), r0.lt(6),
                     r1.lt(2) & r0.lt(3)):
            yield cond.where(zero, ld) if negated else cond.where(ld, zero)


for _name, _gen, _sym in (("commutative_sort", _commutative, True),
                          ("vectorize_of_consts", _vconsts, True),
                          ("where_on_load", lambda: _where_on_load(False), False),
                          ("where_on_load_negated", lambda: _where_on_load(True), False)):
    _baseline(_name, _gen, "proven", "every op of the rule, operands in both orders; "
              "values (and constants where the rule only moves them) symbolic"
              if _sym else "conditions of movable and unmovable clauses, gated and plain "
              "indices; addresses, buffer contents and values symbolic", symbolic_consts=_sym)


# ---------------------------------------------------------------------------
# decisions by bounds: fold_const_by_bounds and lt_simplex run on UOps of symbolic
# bounds (rules.proof.bounds_sym); cmp_by_bounds (whose symbolic run z3 does not settle
# to the end, bounds_sym.UNSETTLED), lt_gcd_fold and where_gate_given_valid on a grid of
# bounds, each instance proven for every value in them
_BOUND_DOMAIN = ("op(u, v) for every comparison and u, v in a [0,3], b [5,9], s [-4,-1], "
                 "z [0,0], o [2,2], 0, 1, 4, -3, a%4, a//4, b//16, as index and as i8 "
                 "(wrapping); each instance proven for every value of the variables")


def _bound_grid() -> Iterable[UOp]:
    a, b, s = UOp.var("a", 0, 3), UOp.var("b", 5, 9), UOp.var("s", -4, -1)
    z, o = UOp.var("z", 0, 0), UOp.var("o", 2, 2)
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    xs = [a, b, s, z, o, c(0), c(1), c(4), c(-3), a % c(4), a // c(4), b // c(16)]
    for dt in (dtypes.index, dtypes.i8):
        ys = xs if dt is dtypes.index else [x.cast(dt) for x in xs]
        for op in sorted(GroupOp.Comparison, key=lambda o: o.value):
            for u in ys:
                for v in ys:
                    yield u.alu(op, v)


def _register_bounds() -> None:
    from rules.proof.bounds_sym import SYMBOLIC, UNSETTLED, obligation

    for name in SYMBOLIC:
        if name not in UNSETTLED:
            register(name, obligation(name))
    _baseline("cmp_by_bounds", _bound_grid, "tested-only",
              f"{_BOUND_DOMAIN} (symbolic intervals: {UNSETTLED['cmp_by_bounds']})")


_register_bounds()


def _gcd_grid() -> Iterable[UOp]:
    a, b, s = UOp.var("a", 0, 3), UOp.var("b", 5, 9), UOp.var("s", -4, -1)
    e, r = UOp.var("e", 0, 1), UOp.range(16, 0)
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    for u, v in itertools.permutations((a, b, s, r), 2):
        for f, g in ((2, 4), (4, 6), (3, 6), (2, 2), (6, 9)):
            for w in (None, e, a):
                base = u * c(f) + v * c(g)
                x = base if w is None else base + w
                for k in (1, 2, 3, 4, 5, 6, 8, 9, 12):
                    yield x.alu(Ops.LT, c(k))


_GCD_DOMAIN = ("f*u + g*v (+ w) < k for u, v two of a [0,3], b [5,9], s [-4,-1], a range "
               "of 16, (f, g) in (2,4), (4,6), (3,6), (2,2), (6,9), w in e [0,1], a, k in "
               "1-6, 8, 9, 12; each instance proven for every value of the variables")
_baseline("lt_gcd_fold", _gcd_grid, "tested-only", _GCD_DOMAIN)


def _gate_grid() -> Iterable[UOp]:
    r, b = UOp.range(16, 0), UOp.var("b", 0, 9)
    c = lambda v: UOp.const(dtypes.index, v)  # noqa: E731
    inv = UOp(Ops.INVALID, dtypes.index)
    conds = [r.lt(4), r.lt(8).alu(Ops.NOT), r.lt(4) & b.lt(7), r.lt(12) & c(3).lt(r), r.lt(0),
             b.lt(3) & r.lt(8), (r % c(4)).lt(2)]
    xs = [r // c(4), r % c(4), r // c(8) + c(3), (r + c(4)) // c(8), r % c(16),
          (r * c(2)) // c(8), (r // c(4)) % c(4), r.alu(Ops.MAX, c(3)), r, r + b, b // c(4)]
    for cond in conds:
        for x in xs:
            yield cond.where(x, inv)


_baseline("where_gate_given_valid", _gate_grid, "tested-only",
          "where(v, x, Invalid) for v among r<4, !(r<8), r<4 & b<7, r<12 & 3<r, r<0, "
          "b<3 & r<8, r%4<2 and x among r//4, r%4, r//8+3, (r+4)//8, r%16, 2r//8, "
          "(r//4)%4, max(r,3), r, r+b, b//4 (r a range of 16, b [0,9]); each instance "
          "proven for every value of the variables")


def _loop_end_instances() -> Iterable[UOp]:
    """A loop index over ENDs of every shape the rules read (only ``vmin(END) > 0``):
    a variable, a sum, a product, each as a range and as a special, over wide bounds."""
    a, b = UOp.var("a", 0, 1 << 40), UOp.var("b", 1, 1 << 20)
    ends = [UOp.var("n", 1, 1 << 40), a + UOp.const(dtypes.index, 2), b * b]
    for end in ends:
        for r in (UOp.range(end, 0), UOp(Ops.SPECIAL, dtypes.index, (end,), "g")):
            yield r // end
            yield r % end


for _name in ("idiv_loop_end", "mod_loop_end"):
    _baseline(_name, _loop_end_instances, "proven",
              "a range and a special over symbolic ENDs (a variable, a + 2, b*b)")
