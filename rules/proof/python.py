"""Proof obligations of the rules written in Python (one function a rule).

Each entry of :data:`OBLIGATIONS` maps a rule's name to a function ``(timeout_ms) ->
Outcome``. The rule's own code runs on instances of its pattern (UOp graphs) and z3
shows its output equal to its input for every value of the instance's leaves
(:func:`rules.proof.uops.same_graph`):

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
from rules.proof.uops import same_graph

__all__ = ["OBLIGATIONS", "MAX_LANES", "register"]

#: vectors of up to this many lanes are enumerated (every lane list of them)
MAX_LANES = 3

OBLIGATIONS: dict[str, Callable[[int], Outcome]] = {}


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
           timeout_ms: int, status: str, domain: str, symbolic_consts: bool = False) -> Outcome:
    """Run the rule on each instance and prove every rewrite (see the module docstring)."""
    t0 = time.perf_counter()
    fired = 0
    for u in instances:
        try:
            out = apply(u)
        except Exception as e:  # the rule's code fails on an instance of its pattern
            return Outcome(name, "failed", time.perf_counter() - t0,
                           f"the rule raised {type(e).__name__} on {u!r}")
        if out is None or out is u:
            continue
        fired += 1
        try:
            r, model = same_graph(u, out, timeout_ms, symbolic_consts)
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
    def fn(timeout_ms: int) -> Outcome:
        return _check(name, _rule(name).apply, instances(), timeout_ms, status, domain,
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
                GroupOp.Binary - GroupOp.Comparison - {Ops.MULHI, Ops.FDIV, Ops.POW, Ops.SHL,
                                                       Ops.SHR, Ops.IDIV, Ops.MOD},
                key=lambda o: o.value)]
            alus += [UOp(Ops.IDIV, a.dtype, (a, nz)), UOp(Ops.MOD, a.dtype, (a, nz)),
                     UOp(Ops.NEG, a.dtype, (a,)), UOp(Ops.WHERE, a.dtype, (cond, a, b)),
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
            "gep_identity": gep_identity, "gep_through_alu": gep_through_alu,
            "gep_of_cat": gep_of_cat, "gep_through_cast": gep_through_cast,
            "vectorize_of_geps": vectorize_of_geps, "gep_of_ptrcat": gep_of_ptrcat}


_LANES = f"every lane list of vectors of 2-{MAX_LANES} lanes, lanes symbolic"
for _name, _gen in _gep_instances().items():
    _baseline(_name, _gen, "proven", _LANES, symbolic_consts=True)


def _void(timeout_ms: int) -> Outcome:
    """GEP of a void node (an effect) is the node: proven on a store and a NOOP."""
    buf = UOp.buffer(0, dtypes.f32, 16)
    st = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, buf.dtype, (buf, UOp.var("i", 0, 15))),
                                      UOp.var("x", -9, 9).cast(dtypes.f32)))
    return _check("gep_of_void", _rule("gep_of_void").apply,
                  [UOp(Ops.GEP, dtypes.void, (st,), (0,)), UOp(Ops.GEP, dtypes.void,
                                                               (UOp(Ops.NOOP),), (0,))],
                  timeout_ms, "proven", "a store and a NOOP (a void value is its effect)")


register("gep_of_void", _void)


def _unroll(timeout_ms: int) -> Outcome:
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
    def fn(timeout_ms: int) -> Outcome:
        r = _rule(name)

        def apply(u: UOp) -> UOp | None:
            out = r.apply(u)
            if out is None and u.op in (Ops.LOAD, Ops.STORE):  # the rule's node is inside
                inner = r.apply(u.src[0])
                if inner is not None:
                    return u.replace(src=(inner,) + u.src[1:])
            return out
        return _check(name, apply, [_instance(t) for t in texts], timeout_ms, "proven",
                      "addresses, buffer contents and values symbolic")
    return fn


for _name, _texts in _memory().items():
    register(_name, _memory_check(_name, _texts))
