"""Proof obligations of the e-graph's own passes (``eqsat rules --prove``).

The passes of :mod:`eqsat.engines.egraph.computed` (the constant fold, the canonical
sums and conjunctions, the linear comparisons, the lifting of Invalid guards, the basis
search, the context of a gate) rewrite e-classes, not UOps: their obligation runs the
e-graph on a stated list of inputs that make the pass fire and checks the whole
e-graph of each run (:func:`check_egraph`): every e-node of every class, its operands
read as their class's term, equals the class's term for every value of the leaves
(z3, :func:`rules.proof.uops.same_graph`). A pass that never fired on its inputs
fails. Status tested-only: the passes' decisions read coefficients and bounds
concretely; the inputs are their domain.

Importing this module registers the obligations in
:data:`rules.proof.python.OBLIGATIONS` (the rules package never imports the engine).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import z3

from eqsat.engines.egraph.encoding import ALU_CTOR, CTOR_OP, Snapshot
from eqsat.engines.egraph.encoding.snapshot import Node
from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.sexpr import parse
from eqsat.ir.uop import UOp
from rules.proof.laws import Outcome
from rules.proof.passes_sym import PassCase, prove_pass, term_value
from rules.proof.python import register
from rules.proof.semantics import RLIMIT
from rules.proof.symbolic import SymInt, term

__all__ = ["check_egraph", "PASS_INSTANCES", "SYMBOLIC_PASSES", "sym_snapshot", "fold_cases",
           "and_cases",
           "sum_cases", "sum_trees",
           "lift_trees", "prove_lift"]

_A, _B, _S, _R = "(var a 0 3)", "(var b 0 9)", "(var s -4 -1)", "(range 0 16)"

#: the inputs that make each pass fire
PASS_INSTANCES: dict[str, list[str]] = {
    "fold_known": [f"(idiv {_A} 4)", f"(max {_A} 5)", f"(add (mod {_A} 4) (mul {_S} 0))",
                   f"(lt (add {_A} {_B}) 13)", f"(cast i8 (min (add {_S} 4) 3))"],
    "canonical_sum": [f"(add (add {_A} 3) (sub {_B} {_A}))", f"(add (mul {_A} 2) (mul {_A} 3))",
                      f"(sub (add {_B} (add {_A} 1)) (add {_A} 1))",
                      f"(add (add (mul {_R} 4) {_B}) (mul (neg {_R}) 4))"],
    "lt_linear": [f"(lt (add (mul {_A} 4) 30) 0)", f"(lt (add (mul {_A} 4) (mod {_B} 4)) 8)",
                  f"(lt (add (mul {_R} 6) (mul {_B} 3)) 10)", f"(lt (mul {_S} -2) 5)"],
    "canonical_and": [f"(and (lt {_A} 2) (and (lt {_B} 5) (lt {_A} 2)))",
                      f"(and (and (lt {_B} 5) (lt {_R} 3)) (lt {_A} 2))"],
    "lift_invalid": [f"(add (where (lt {_R} 8) {_R} (invalid)) 3)",
                     f"(mul (add (where (lt {_R} 8) {_R} (invalid)) {_B}) 2)",
                     f"(add (where (lt {_R} 8) {_R} (invalid)) (where (lt {_B} 4) {_B} "
                     "(invalid)))"],
    "where_valid_context": [f"(where (lt {_R} 4) (idiv {_R} 4) (invalid))",
                            f"(where (lt {_R} 8) (mod {_R} 8) (invalid))",
                            f"(where (and (lt {_R} 12) (lt 3 {_R})) (idiv (add {_R} 4) 8) "
                            "(invalid))"],
    "divmod_basis": [f"(add (add (mul (idiv {_R} 30) 30) (mod {_R} 10)) (mul (mod (idiv {_R} 10) "
                     "3) -10))",
                     f"(add (mul (idiv {_R} 4) 4) (mul (mod {_R} 4) 2))",
                     f"(add (mod {_R} 8) (mul (mod (idiv {_R} 8) 2) 8))"],
}


def check_egraph(u: UOp, rlimit: int = RLIMIT) -> tuple[dict[str, int], str | None, int]:
    """Run the e-graph on ``u`` and check every e-node of the classes it reached (see the
    module docstring): ``(rule -> matches, the first failure or None, e-nodes checked)``.
    """
    from eqsat.engines.egraph import Limits, optimize_egraph
    from extraction import get_cost_model
    from extraction.extract import uop_builder
    from rules.proof.uops import same_graph

    # from the input alone: the passes, not the baseline's rules, make the e-nodes
    _out, stats = optimize_egraph(u, cost_model=get_cost_model("default"), keep_egraph=True,
                                  budget=Limits(baseline_start=False))
    rec = stats["egraph"]
    _root, nodes = rec.chosen(u)
    ref: dict[int, UOp] = {en.eclass: n for n, en in nodes.items()}
    classes = rec.classes

    def build(en: Any) -> UOp | None:
        if en.op is None or not all(k in ref for k in en.children):
            return None
        try:
            return uop_builder(en, tuple(ref[k] for k in en.children))
        except Exception:  # an e-node no UOp has (a list cell): not a value
            return None
    grew = True
    while grew:  # a class the run made gets the term of its first buildable e-node
        grew = False
        for c, ens in classes.items():
            if c in ref:
                continue
            for en in ens:
                t = build(en)
                if t is not None:
                    ref[c] = t
                    grew = True
                    break
    checked = 0
    for c, ens in classes.items():
        if c not in ref:
            continue
        for en in ens:
            t = build(en)
            if t is None or t is ref[c]:
                continue
            checked += 1
            try:
                r, model = same_graph(ref[c], t, rlimit)
            except NotImplementedError:
                continue  # an e-node the z3 model has no value for (a loop, a kernel)
            if r == z3.sat:
                return {}, f"{ref[c]!r} is not {t!r}: {model}", checked
            if r != z3.unsat:
                return {}, f"z3 gave up on {ref[c]!r} == {t!r}", checked
    fired: dict[str, int] = {}
    for it in rec.history:
        for k, v in it.rules.items():
            fired[k] = fired.get(k, 0) + v
    return fired, None, checked


def _obligation(name: str, texts: list[str]) -> Callable[[int], Outcome]:
    def ob(rlimit: int) -> Outcome:
        t0 = time.perf_counter()
        fired = 0
        checked = 0
        for text in texts:
            matches, bad, n = check_egraph(parse(text), rlimit)
            checked += n
            if bad is not None:
                return Outcome(name, "failed", time.perf_counter() - t0, f"on {text}: {bad}")
            fired += matches.get(name, 0)
        if not fired:
            return Outcome(name, "failed", time.perf_counter() - t0,
                           "the pass never fired on its inputs")
        return Outcome(name, "tested-only", time.perf_counter() - t0,
                       f"the e-graph of {len(texts)} inputs ({'; '.join(texts)}): {checked} "
                       "e-nodes each equal to their class's term for every value of the "
                       "leaves (the pass's decisions read coefficients and bounds)")
    return ob


# ---------------------------------------------------------------------------
# passes proven by running their code on symbolic e-graphs (rules/proof/passes_sym.py)
def sym_snapshot(nodes: list[Any], lo: dict[int, Any], hi: dict[int, Any],
                 defined: set[int]) -> Any:
    """A :class:`~eqsat.engines.egraph.encoding.Snapshot` of the e-nodes ``nodes`` with
    the bounds ``lo``/``hi`` (symbolic integers; a class missing is unbounded there) and
    the never-Invalid classes ``defined``: the snapshot's own methods read it."""
    s = Snapshot.__new__(Snapshot)
    s.nodes = list(nodes)
    s.classes = {}
    for i, n in enumerate(s.nodes):
        s.classes.setdefault(n.cls, []).append(i)
    s.lo, s.hi, s.defined = lo, hi, set(defined)
    s.consts = {n.cls: n.fields[1] for n in s.nodes if n.ctor == "Cst"}
    return s


#: the e-nodes of a class the fold reads: a non-division integer e-node, a division or
#: remainder (by a class of its own, bounds symbolic or unbounded), a constant
_FOLD_MEMBERS = ("op", "idiv", "mod", "cst")
_DIVISOR_BOUNDS = ((True, True), (True, False), (False, True), (False, False))


def fold_cases(fold: Callable[..., None]) -> list[PassCase]:
    """The e-graphs :func:`fold` (``fold_pass``'s signature) runs on: class 0 of dtype
    index, bool or f32 holding one e-node of :data:`_FOLD_MEMBERS`, never Invalid or
    not, or of index or f32 holding two, never Invalid (each division's divisor a
    class with symbolic or no bounds), its own bounds symbolic (or no upper bound).
    Its value X is within its bounds; a division e-node is defined where its divisor D
    is not 0. A union must be ``(Cst dtype v)`` of the class's dtype with ``v == X``,
    of a never-Invalid class with an e-node defined on every value (no division by a
    possible 0)."""
    cases = []
    for k in (1, 2):
        for members in itertools.combinations_with_replacement(_FOLD_MEMBERS, k):
            ndiv = sum(m in ("idiv", "mod") for m in members)
            for dbounds in itertools.product(_DIVISOR_BOUNDS, repeat=ndiv):
                for dt in ("index", "bool", "f32") if k == 1 else ("index", "f32"):
                    for has_hi in (True, False):
                        for is_def in (True, False) if k == 1 else (True,):
                            cases.append(_fold_case(fold, members, dbounds, dt, has_hi,
                                                    is_def))
    return cases


def _fold_case(fold: Callable[..., None], members: tuple[str, ...], dbounds: tuple,
               dt: str, has_hi: bool, is_def: bool) -> PassCase:
    x = z3.Int("X")
    lo: dict[int, Any] = {0: SymInt.var("lo")}
    hi: dict[int, Any] = {0: SymInt.var("hi")} if has_hi else {}
    premise = [lo[0].t <= x] + ([x <= hi[0].t] if has_hi else [])
    nodes, defs = [], []
    divs = iter(dbounds)
    for j, m in enumerate(members):
        if m == "op":
            nodes.append(Node(0, "Add", (dt, 1, 2)))
            defs.append(z3.BoolVal(True))
        elif m == "cst":
            nodes.append(Node(0, "Cst", (dt, SymInt.var(f"k{j}"))))
            defs.append(z3.BoolVal(True))
        else:
            d, (has_dlo, has_dhi) = 10 + j, next(divs)
            dv = z3.Int(f"D{j}")
            if has_dlo:
                lo[d] = SymInt.var(f"D{j}_lo")
                premise.append(lo[d].t <= dv)
            if has_dhi:
                hi[d] = SymInt.var(f"D{j}_hi")
                premise.append(dv <= hi[d].t)
            nodes.append(Node(0, "Idiv" if m == "idiv" else "Mod", (dt, 3, d)))
            defs.append(dv != 0)
    defined = {0} if is_def else set()
    # the operands' classes: variables, so the class has a value wherever its
    # divisions' divisors are not 0
    nodes += [Node(k, "Leaf", ("DEFINE_VAR", dt, k)) for k in sorted(
        {k for n in nodes for k in n.kids})]

    def run() -> list[tuple[int, Any]]:
        made: list[tuple[int, Any]] = []
        fold(sym_snapshot(nodes, lo, hi, defined), {0},
             lambda c, t, _name: made.append((c, t)), "fold_known")
        return made

    def goal(c: int, t: Any) -> Any:
        if not (is_def and c == 0 and isinstance(t, tuple) and t[:2] == ("Cst", dt)):
            return z3.BoolVal(False)
        return z3.And(term(t[2]) == x, z3.Or(*defs))
    label = (f"class 0 ({dt}) = {' | '.join(members)}, divisor bounds {dbounds}, "
             f"{'bounded' if has_hi else 'no upper bound'}, "
             f"{'never Invalid' if is_def else 'may be Invalid'}")
    return PassCase(label, premise, run, goal)


_FOLD_DOMAIN = ("class 0 of dtype index, bool or f32 holding one of: an integer "
                "e-node, a division or remainder by a class of symbolic or no bounds, a "
                "constant (never Invalid or not), or of index or f32 holding two of them; "
                "its bounds symbolic (or no upper bound); every path of fold_pass (the "
                "union into the class is the e-graph's, checked by the e-graph runs)")


def _fold_obligation(rlimit: int) -> Outcome:
    from eqsat.engines.egraph.computed.passes import fold_pass

    return prove_pass("fold_known", fold_cases(fold_pass), _FOLD_DOMAIN, rlimit)


def _trees(leaves: int, labels: int) -> list[Any]:
    """Every binary tree of ``leaves`` leaves, each leaf one of ``labels`` (an int);
    an inner node is a pair."""
    if leaves == 1:
        return list(range(labels))
    out: list[Any] = []
    for k in range(1, leaves):
        out += [(a, b) for a in _trees(k, labels) for b in _trees(leaves - k, labels)]
    return out


def _step_unions(step: Callable[[Any], None], kind: str, name: str,
                 **data: Any) -> list[tuple[int, Any]]:
    """Run a pass step (``PassStep.run``) with its one rule ``name`` of ``kind`` on the
    pass data ``data`` (the fields the step reads); the unions it records."""
    made: list[tuple[int, Any]] = []
    step(SimpleNamespace(union=lambda c, t, _name: made.append((c, t)),
                         kinds={kind: [SimpleNamespace(name=name)]}, **data))
    return made


def _same_value(values: dict[int, Any]) -> Callable[[int, Any], Any]:
    """The goal of a union: the term's value is its class's (``values``: class -> z3)."""
    def goal(c: int, t: Any) -> Any:
        return term_value(t, values) == values[c]
    return goal


def and_cases(step: Callable[[Any], None], most: int = 4, labels: int = 3) -> list[PassCase]:
    """The e-graphs ``step`` (``AndStep.run``'s signature) runs on: every binary tree of
    bool ``And`` e-nodes of 2 to ``most`` leaves over ``labels`` leaf classes (repeats
    too), each inner e-node its own class and its class's cheapest e-node, every class
    dirty. A leaf's value is a z3 bool; an inner class's the conjunction of its
    operands'. A union must give its class's value."""
    cases = []
    for n in range(2, most + 1):
        for tree in _trees(n, labels):
            cases.append(_and_case(step, tree, labels))
    return cases


def _and_case(step: Callable[[Any], None], tree: Any, labels: int) -> PassCase:
    values: dict[int, Any] = {i: z3.Bool(f"b{i}") for i in range(labels)}
    nodes: list[Node] = []

    def build(t: Any) -> int:
        if isinstance(t, int):
            return t
        a, b = build(t[0]), build(t[1])
        c = labels + len(nodes)
        nodes.append(Node(c, "And", ("bool", a, b)))
        values[c] = z3.And(values[a], values[b])
        return c
    build(tree)
    best = {n.cls: i for i, n in enumerate(nodes)}  # (children first)

    def run() -> list[tuple[int, Any]]:
        return _step_unions(step, "canon_and", "canonical_and",
                            snap=sym_snapshot(nodes, {}, {}, set()),
                            state=SimpleNamespace(done=set()), best=best,
                            dirty_best=list(best.items()), ctors={"And"})

    return PassCase(f"the And tree {tree}", [], run, _same_value(values))


_AND_DOMAIN = ("every binary tree of bool And e-nodes of 2-4 leaves over 3 leaf classes "
               "(repeats too), each leaf a symbolic bool; every class of the tree rewritten "
               "by AndStep (the union into the class is the e-graph's, checked by the "
               "e-graph runs)")


def _and_obligation(rlimit: int) -> Outcome:
    from eqsat.engines.egraph.computed.passes import AndStep

    return prove_pass("canonical_and", and_cases(AndStep().run), _AND_DOMAIN, rlimit)


#: a sum's best-term tree: a leaf ``"a"``/``"b"`` (an index variable), ``"k"`` (a
#: constant, symbolic), or ``(ctor, operands...)`` of Add, Sub, Mul, Neg
_SUM_LEAVES = ("a", "b", "k")


def sum_trees() -> list[Any]:
    """The sums' trees: every tree of Add, Sub and Mul of up to 2 leaves of
    :data:`_SUM_LEAVES` and its negation (Neg); every such tree of 3 leaves with each
    leaf once; and the forms ``k1*a + k2*b + k3``, ``k1*a - k2*b``, ``k1*a + k2``,
    ``k1*a + k2*a`` and ``(k1*a + b) - k2*a`` (coefficients from products by
    constants, so every coefficient is symbolic)."""
    by: dict[int, list[Any]] = {1: list(_SUM_LEAVES)}
    for n in (2, 3):
        by[n] = [(op, x, y) for k in range(1, n) for x in by[k] for y in by[n - k]
                 for op in ("Add", "Sub", "Mul")]
    by[3] = [t for t in by[3] if sorted(_leaves(t)) == sorted(_SUM_LEAVES)]
    out = [t for n in (1, 2, 3) for t in by[n]] + [("Neg", t) for n in (1, 2) for t in by[n]]

    def m(x: str, y: str) -> Any:
        return ("Mul", x, y)
    return out + [("Add", ("Add", m("a", "k"), m("b", "k")), "k"),
                  ("Sub", m("k", "a"), m("b", "k")), ("Add", m("a", "k"), "k"),
                  ("Add", m("a", "k"), m("a", "k")),
                  ("Sub", ("Add", m("a", "k"), "b"), m("a", "k"))]


def _leaves(t: Any) -> list[str]:
    return [t] if isinstance(t, str) else [x for k in t[1:] for x in _leaves(k)]


class _NoMemo(dict):
    """A memo that keeps nothing (a key holding a symbolic integer has no hash): the
    code computes what it would have looked up."""

    def get(self, key: Any, default: Any = None) -> Any:
        return default

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


class _NeverDone(set):
    """``PassState.done`` of a fresh run: nothing applied yet (its keys may hold
    symbolic integers, which have no hash; a class is visited once per run)."""

    def __contains__(self, key: object) -> bool:
        return False

    def add(self, key: Any) -> None:
        pass


def sum_cases(step: Callable[[Any], None], trees: list[Any] | None = None) -> list[PassCase]:
    """The e-graphs ``step`` (``SumStep.run``'s signature, its rules the canonical sum)
    runs on: each tree of :func:`sum_trees` as e-nodes, one class each (the cheapest
    e-node of its class), every constant a symbolic integer, every class never Invalid
    and in focus. A leaf's value is a z3 integer, an e-node's its operation's on its
    operands' values. A union must give its class's value."""
    return [_sum_case(step, t) for t in (sum_trees() if trees is None else trees)]


def _sum_case(step: Callable[[Any], None], tree: Any) -> PassCase:
    from eqsat.engines.egraph.computed import EClassCtx, LinForms
    from eqsat.engines.egraph.computed.passes import InnerSums  # noqa: F401 (read by step)

    class SymCtx(EClassCtx):
        """The pass's context; a symbolic constant is a ``Cst`` as it is (the i64 range
        a constant must fit is the e-graph's, not the value's)."""

        def const(self, v: Any) -> Any:
            return ("Cst", self.dt, v) if isinstance(v, SymInt) else super().const(v)

    def build() -> tuple[list[Node], dict[int, Any], int]:
        nodes: list[Node] = []
        values: dict[int, Any] = {}
        leaf: dict[str, int] = {}

        def walk(t: Any) -> int:
            if t in ("a", "b"):
                if t not in leaf:
                    c = leaf[t] = len(nodes)
                    nodes.append(Node(c, "Leaf", ("var", "index", c)))
                    values[c] = z3.Int(t)
                return leaf[t]
            c = len(nodes)
            if t == "k":
                v = SymInt.var(f"k{c}")
                nodes.append(Node(c, "Cst", ("index", v)))
                values[c] = v.t
                return c
            kids = [walk(k) for k in t[1:]]
            c = len(nodes)
            nodes.append(Node(c, t[0], ("index", *kids)))
            vs = [values[k] for k in kids]
            values[c] = {"Add": lambda: vs[0] + vs[1], "Sub": lambda: vs[0] - vs[1],
                         "Mul": lambda: vs[0] * vs[1], "Neg": lambda: -vs[0]}[t[0]]()
            return c
        root = walk(tree)
        return nodes, values, root
    nodes, values, root = build()

    def run() -> list[tuple[int, Any]]:
        ns, _values, _root = build()  # afresh: the same names, the same values
        snap = sym_snapshot(ns, {}, {}, {n.cls for n in ns})
        best = {n.cls: i for i, n in enumerate(ns)}
        lins = LinForms(snap, best)
        ctx = SymCtx(snap, lins, _NoMemo(), _NoMemo())
        classes = set(best)
        return _step_unions(
            step, "canon", "canonical_sum", snap=snap,
            state=SimpleNamespace(done=_NeverDone(), versions={}), lins=lins, ctx=ctx,
            by_kind=SimpleNamespace(no_div=[]),  # (its one rule is the canonical sum)
            best=best, free=classes, focus=classes, parents={}, roots=[_root],
            late=lambda: False, all_def=lambda x: True, bkey=lambda x: (),
            holds=lambda c, t: False)  # (no sum held already: every one is checked)

    return PassCase(f"the sum {tree}", [], run, _same_value(values))


_SUM_DOMAIN = ("every tree of index Add, Sub, Mul of up to 2 leaves (two variables, "
               "constants symbolic) and its negation, those of 3 leaves with each leaf once, "
               "and k1*a + k2*b + k3, k1*a - k2*b, k1*a + k2, k1*a + k2*a, (k1*a + b) - k2*a "
               "(every coefficient symbolic), one class an e-node; "
               "every class's linear form (LinForms) and canonical sum and its common factor "
               "taken out (SumStep; a symbolic constant needs no i64 check); the union into "
               "the class is the e-graph's, checked by the e-graph runs")


def _sum_obligation(rlimit: int) -> Outcome:
    from eqsat.engines.egraph.computed.passes import SumStep

    return prove_pass("canonical_sum", sum_cases(SumStep().run), _SUM_DOMAIN, rlimit)


# ---------------------------------------------------------------------------
# lift_invalid: its decisions read the e-graph's structure only (which e-node is an
# Invalid leaf, a where, an ALU op), no value: it runs on every e-graph of a stated
# size, each union proven for every value of the leaves
def lift_trees() -> list[UOp]:
    """Every index term of one or two ALU steps (``add``, ``where``) over the leaves
    ``x``, ``y``, Invalid, a ``where``'s condition ``x < 5``, ``y < 2`` or (at the top)
    ``t < 5`` for a one-step term ``t``, with at least one Invalid leaf."""
    x, y, inv = UOp.var("x", -9, 9), UOp.var("y", -9, 9), UOp.invalid()
    leaves = [x, y, inv]
    conds = [x.lt(5), y.lt(2)]
    one = [a + b for a in leaves for b in leaves] + \
        [c.where(a, b) for c in conds for a in leaves for b in leaves]
    two = [u for a in one for b in leaves for u in (a + b, b + a)]
    two += [c.where(a, b) for c in conds for a in one for b in (y, inv)]
    two += [c.where(b, a) for c in conds for a in one for b in (y, inv)]
    two += [a.lt(5).where(b, c) for a in one for b in (x, inv) for c in (y, inv)]
    return [u for u in one + two if any(v.op is Ops.INVALID for v in u.toposort())]


def _snapshot_of(u: UOp) -> tuple[Any, dict[int, UOp], dict[UOp, int]]:
    """The e-graph of the term ``u``: one class an UOp (hash-consed), its e-node the
    UOp's op over its operands' classes; ``(snapshot, class -> UOp, UOp -> class)``."""
    cls: dict[UOp, int] = {}
    nodes: list[Node] = []
    for v in u.toposort():
        c = cls[v] = len(nodes)
        if v.op is Ops.CONST:
            nodes.append(Node(c, "Cst", (str(v.dtype), v.arg)))
        elif v.op is Ops.INVALID:
            nodes.append(Node(c, "Leaf", ("INVALID", "index", 0)))
        elif v.op is Ops.DEFINE_VAR:
            nodes.append(Node(c, "Leaf", ("DEFINE_VAR", str(v.dtype), c)))
        else:
            nodes.append(Node(c, ALU_CTOR[v.op], (str(v.dtype), *(cls[s] for s in v.src))))
    return sym_snapshot(nodes, {}, {}, set()), {c: v for v, c in cls.items()}, cls


def _uop_of_term(t: Any, of: dict[int, UOp]) -> UOp:
    """The UOp of a pending term (class handles read through ``of``)."""
    if isinstance(t, int):
        return of[t]
    op = CTOR_OP[t[0]]
    return UOp(op, DType.parse(t[1]), tuple(_uop_of_term(k, of) for k in t[2:]))


def prove_lift(lift: Callable[..., None], terms: list[UOp], domain: str,
               rlimit: int) -> Outcome:
    """Run ``lift`` (``lift_pass``'s signature) on the e-graph of each term, every class
    dirty, and prove every union it makes: the class's term and the union's are the
    same for every value of the leaves, Invalid as the spec has it
    (:func:`rules.proof.uops.same_graph`)."""
    from rules.proof.uops import same_graph

    t0 = time.perf_counter()
    unions = 0
    for u in terms:
        snap, of, _cls = _snapshot_of(u)
        of = dict(of)
        inv = len(of)
        of[inv] = UOp.invalid()
        ins = SimpleNamespace(node=lambda *_a, h=inv: h,
                              args=SimpleNamespace(key=lambda _v: 0))
        made: list[tuple[int, Any]] = []
        best = {n.cls: i for i, n in enumerate(snap.nodes)}
        lift(snap, ins, best, SimpleNamespace(done=set()), "lift_invalid",
             lambda c, t, _name, m=made: m.append((c, t)), set(best))
        for c, t in made:
            unions += 1
            out = _uop_of_term(t, of)
            r, model = same_graph(of[c], out, rlimit)
            if r != z3.unsat:
                why = f"counterexample: {model}" if r == z3.sat else "z3 gave up"
                return Outcome("lift_invalid", "failed", time.perf_counter() - t0,
                               f"{of[c]!r} is not {out!r}: {why}")
    if not unions:
        return Outcome("lift_invalid", "failed", time.perf_counter() - t0,
                       "the pass made no union on its terms")
    return Outcome("lift_invalid", "proven", time.perf_counter() - t0,
                   f"{unions} unions on the e-graphs of {len(terms)} terms: {domain}")


_LIFT_DOMAIN = ("the e-graph of every index term of one or two add/where steps over x, y "
                "(variables), Invalid and the conditions x < 5, y < 2, t < 5 (t a one-step "
                "term), with an Invalid leaf; every class lifted (lift_pass reads no value: "
                "every leaf symbolic, Invalid as the spec has it; the union into the class "
                "is the e-graph's, checked by the e-graph runs)")


def _lift_obligation(rlimit: int) -> Outcome:
    from eqsat.engines.egraph.computed.lift import lift_pass

    return prove_lift(lift_pass, lift_trees(), _LIFT_DOMAIN, rlimit)


#: the passes proven on symbolic e-graphs: name -> obligation
SYMBOLIC_PASSES: dict[str, Callable[[int], Outcome]] = {
    "fold_known": _fold_obligation,
    "canonical_and": _and_obligation,
    "canonical_sum": _sum_obligation,
    "lift_invalid": _lift_obligation,
}

for _name, _texts in PASS_INSTANCES.items():
    register(_name, SYMBOLIC_PASSES.get(_name) or _obligation(_name, _texts))
