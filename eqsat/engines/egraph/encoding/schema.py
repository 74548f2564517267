"""The e-graph's schema: the egglog constructors of UOps, the insertion relations'
rows, their egglog declarations, and the arg table (see :mod:`..encoding`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eqsat.engines.egraph.analyses import I64_MAX, I64_MIN
from eqsat.ir.dtype import DType
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp, arg_key

__all__ = ["CTXVAR", "CTORS", "ALU_CTOR", "CTOR_OP", "NODE_REL", "SUB_REL", "SUB_RULESET",
           "INSERT_RULESET", "load_part",
           "ArgTable", "declarations", "I64_MIN", "I64_MAX", "dtype_of", "fits_i64",
           "uop_ctor", "int_const_value", "dt_name", "int_scalar", "OP_NAME"]

#: the op name of a context variable: an atom of a guarded subterm with narrowed bounds
CTXVAR = "CTXVAR"

# ---------------------------------------------------------------------------
# constructors
# ---------------------------------------------------------------------------
#: ALU op -> constructor name (signature ``(String E^arity) E``)
ALU_CTOR: dict[Ops, str] = {op: op.name.capitalize() for op in
                            sorted(GroupOp.ALU | {Ops.CAST, Ops.BITCAST}, key=lambda o: o.value)}
#: constructor name -> ALU op
CTOR_OP: dict[str, Ops] = {v: k for k, v in ALU_CTOR.items()}
_ARITY: dict[Ops, int] = {**{o: 1 for o in GroupOp.Unary | {Ops.CAST, Ops.BITCAST}},
                          **{o: 2 for o in GroupOp.Binary}, **{o: 3 for o in GroupOp.Ternary}}
_GMAX = 4  # G1..G4; more sources go through a Cons list

#: constructor name -> the sorts of its fields ("S" String, "I" i64, "E" a class)
CTORS: dict[str, str] = {
    "Cst": "SI",
    "Leaf": "SSI",
    **{name: "S" + "E" * _ARITY[op] for op, name in ALU_CTOR.items()},
    **{f"G{n}": "SSI" + "E" * n for n in range(1, _GMAX + 1)},
    "GL": "SSIE",
    "Cons": "EE",
    "Nil": "",
}
_SORT = {"S": "String", "I": "i64", "E": "E"}


#: the insertion relation of every e-node and union: ``(RNode k tag s1 s2 i e1 e2 e3 e4)``
#: is ``(union (H k) (tag ...))`` with the constructor's String fields in ``s1 s2``,
#: its i64 field in ``i`` and its children's handles in ``e1..e4`` (unused ones ``""``
#: or 0); tag ``"U"`` unions ``(H k)`` with ``(H e1)``. One relation: each egglog
#: ``input`` command costs about as much as loading hundreds of rows.
NODE_REL = "RNode"
_UNION_TAG = "U"
#: the relation of e-nodes to subsume: ``(RSub tag s1 s2 i e1 e2 e3 e4)`` is
#: ``(subsume (tag ...))`` of the existing e-node with those fields (children as handles)
SUB_REL = "RSub"
SUB_RULESET = "subsume"
#: the rule set of the insertion rules that name no constructor (unions, facts); each
#: constructor's insertion rule, and its subsumption rule, is in a rule set of its own
#: (:func:`load_part`), and a load runs the parts of the constructors its rows name
#: combined with this one (``Inserter``): every run of a rule set builds and searches
#: all its rules, and a load names a few of the constructors
INSERT_RULESET = "insert"


def load_part(base: str, ctor: str) -> str:
    """The rule set of ``ctor``'s rule of the loading rule set ``base``
    (:data:`INSERT_RULESET` or :data:`SUB_RULESET`)."""
    return f"{base}_{ctor}"


def _node_template(ctor: str) -> str:
    """The TSV line of an RNode row of ``ctor`` as a ``str.format`` template taking the
    handle and the fields (every signature is String fields, an i64, then classes)."""
    sig = CTORS[ctor]
    s, i, e = sig.count("S"), sig.count("I"), sig.count("E")
    if sig != "S" * s + "I" * i + "E" * e:
        raise ValueError(f"constructor {ctor}: fields {sig!r} are not String, i64, E in order")
    cols = ["{}", ctor, *["{}"] * s, *[""] * (2 - s), "{}" if i else "0", *["{}"] * e,
            *["0"] * (4 - e)]
    return "\t".join(cols)


_NODE_FMT: dict[str, str] = {name: _node_template(name) for name in CTORS}
#: the constructors of e-nodes that may be subsumed through RSub: the IR ops with children
_SUBSUMABLE = tuple(name for name, sig in CTORS.items()
                    if "E" in sig and name not in ("Cons", "GL"))
#: ... as a set (what an RSub row may name)
SUBSUMABLE = frozenset(_SUBSUMABLE)


def declarations(loads: Iterable[str] | None = None,
                 declared: Iterable[str] | None = None) -> str:
    """egglog program text: the sort, constructors, handles and the insertion relation.
    ``loads``: the constructors whose rows the insertion (and subsumption) rules load
    (None: every one); ``declared``: the constructors declared (None: every one; they
    must hold ``loads`` and every constructor the e-graph's rules name)."""
    load = set(CTORS) if loads is None else set(loads)
    out = ["(datatype E)", "(constructor H (i64) E :unextractable)"]
    for name, sig in CTORS.items():
        if declared is None or name in declared:
            out.append(f"(constructor {name} ({' '.join(_SORT[s] for s in sig)}) E)")
    out.append(f"(ruleset {INSERT_RULESET})")
    out.append(f"(relation {NODE_REL} (i64 String String String i64 i64 i64 i64 i64))")
    for name, sig in CTORS.items():
        if name not in load:
            continue
        part = load_part(INSERT_RULESET, name)
        out.append(f"(ruleset {part})")
        vs = _field_vars(sig)
        args = " ".join(f"(H {v})" if ch == "E" else v for v, ch in zip(vs, sig, strict=True))
        row = f'{NODE_REL} k "{name}" s1 s2 i e1 e2 e3 e4'
        out.append(f"(rule (({row})) ((union (H k) ({name} {args})) (delete ({row})))"
                   f" :ruleset {part} :name \"insert-{name}\")")
    row = f'{NODE_REL} k "{_UNION_TAG}" s1 s2 i e1 e2 e3 e4'
    out.append(f'(rule (({row})) ((union (H k) (H e1)) (delete ({row}))) '
               f':ruleset {INSERT_RULESET} :name "insert-union")')
    # RSub: subsume an existing e-node (its children named by handles), in a rule set of
    # its own run after the insertion's (a child may be a class this load names). The
    # RSub row stays: a run's reset deletes the subsumed e-node through it
    # (:func:`subsumed_deletions`; a subsumed row matches no query of its own)
    out.append(f"(ruleset {SUB_RULESET})")
    out.append(f"(relation {SUB_REL} (String String String i64 i64 i64 i64 i64))")
    for name, row, kids, args in _sub_rows(load):
        part = load_part(SUB_RULESET, name)
        query = " ".join([f"({row})", *kids, f"(= n ({name} {args}))"])
        out.append(f"(ruleset {part})")
        out.append(f"(rule ({query}) ((subsume ({name} {args}))) "
                   f':ruleset {part} :name "subsume-{name}")')
    return "\n".join(out)


def _field_vars(sig: str) -> list[str]:
    """The variables of a constructor's fields in its insertion row's columns (``s1 s2``
    String, ``i`` i64, ``e1..e4`` classes)."""
    ss, es = iter(["s1", "s2"]), iter(["e1", "e2", "e3", "e4"])
    return [next(ss) if ch == "S" else "i" if ch == "I" else next(es) for ch in sig]


def _sub_rows(load: set[str]) -> list[tuple[str, str, list[str], str]]:
    """Per subsumable constructor in ``load``: its name, its RSub row pattern, the
    atoms binding its children's classes from their handles, and its arguments."""
    out = []
    for name in _SUBSUMABLE:
        if name not in load:
            continue
        sig = CTORS[name]
        vs = _field_vars(sig)
        kids = [f"(= h{v} (H {v}))" for v, ch in zip(vs, sig, strict=True) if ch == "E"]
        args = " ".join(f"h{v}" if ch == "E" else v for v, ch in zip(vs, sig, strict=True))
        out.append((name, f'{SUB_REL} "{name}" s1 s2 i e1 e2 e3 e4', kids, args))
    return out


def subsumed_deletions(ruleset: str, loads: Iterable[str] | None = None) -> str:
    """egglog program text: rules that delete every e-node an RSub row names
    (subsumed by :data:`SUB_RULESET`), its children found through their handles, one
    part per constructor (:func:`load_part` of ``ruleset``), combined as ``ruleset``;
    ``loads`` as in :func:`declarations`. A subsumed row matches no query, so only its
    RSub row can name it; the rules must run before the handles' rows go."""
    load = set(CTORS) if loads is None else set(loads)
    out, parts = [], []
    for name, row, kids, args in _sub_rows(load):
        part = load_part(ruleset, name)
        parts.append(part)
        out.append(f"(ruleset {part})")
        out.append(f"(rule (({row}) {' '.join(kids)}) ((delete ({name} {args}))) "
                   f':ruleset {part} :name "unsubsume-{name}")')
    out.append(f"(unstable-combined-ruleset {ruleset} {' '.join(parts)})" if parts
               else f"(ruleset {ruleset})")
    return "\n".join(out)


def fits_i64(v: Any) -> bool:
    return isinstance(v, int) and I64_MIN <= v <= I64_MAX


def dtype_of(name: str) -> DType:
    """The dtype of a dtype name (``DType.parse``), parsed once per name (dtypes are
    interned and immutable)."""
    dt = _DTYPES.get(name)
    if dt is None:
        dt = _DTYPES[name] = DType.parse(name)
    return dt


#: dtype name -> its dtype (:func:`dtype_of`)
_DTYPES: dict[str, DType] = {}


_CONST = Ops.CONST  # (read once: an ``Ops.X`` read runs the enum's Python code)


def int_const_value(u: UOp) -> int | None:
    """The i64 value of an integer/bool scalar CONST, or None (kept as an opaque leaf)."""
    if u.op is not _CONST:
        return None
    dt = u.dtype
    if not (_DT_INFO.get(id(dt)) or dt_info(dt))[2]:  # (int_scalar, its memo read here)
        return None
    v = int(u.arg)
    return v if I64_MIN <= v <= I64_MAX else None  # (fits_i64: v is an int)


#: id(op) -> its name, of every op (an ``Ops``'s ``name`` is a Python-level property)
OP_NAME: dict[int, str] = {id(op): op.name for op in Ops}

#: id(op) -> (its constructor, its arity) of the ALU ops (an int key: an ``Ops`` hashes
#: in Python code)
_ALU_OF_ID: dict[int, tuple[str, int]] = {
    id(op): (name, _ARITY[op]) for op, name in ALU_CTOR.items()}


def uop_ctor(u: UOp) -> str:
    """The constructor a UOp node is encoded with."""
    src = u.src
    alu = _ALU_OF_ID.get(id(u.op))
    if alu is not None and src and u.arg is None and len(src) == alu[1]:
        return alu[0]  # (the usual node first: an ALU op is not a CONST)
    if int_const_value(u) is not None:
        return "Cst"
    if not src:
        return "Leaf"
    return f"G{len(src)}" if len(src) <= _GMAX else "GL"


# ---------------------------------------------------------------------------
# args
# ---------------------------------------------------------------------------
class ArgTable:
    """Args (and whole opaque leaves) as i64 keys: the same arg always gets the same key."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._args: list[Any] = []

    def key(self, arg: Any) -> int:
        k = arg_key(arg)
        i = self._ids.get(k)
        if i is None:
            i = self._ids[k] = len(self._args)
            self._args.append(arg)
        return i

    def arg(self, i: int) -> Any:
        return self._args[i]

    def __len__(self) -> int:
        return len(self._args)

    def __repr__(self) -> str:
        return f"<ArgTable {len(self._args)} args>"


#: id(dtype) -> (dtype, its name, whether it is an integer/bool scalar (interval facts));
#: a hot loop reads it as ``(_DT_INFO.get(id(dt)) or dt_info(dt))``, no call when known
_DT_INFO: dict[int, tuple[DType, str, bool]] = {}


def dt_info(dt: DType) -> tuple[DType, str, bool]:
    """``(dt, its name, whether it is an integer or bool scalar)``, kept per dtype."""
    info = _DT_INFO.get(id(dt))
    if info is None:  # the entry keeps ``dt`` alive: its id is not reused
        info = _DT_INFO[id(dt)] = (dt, str(dt), dt.count == 1 and not dt.ptr and
                                   (dt.is_int or dt.is_bool))
    return info


def dt_name(dt: DType) -> str:
    """``str(dt)``, cached."""
    return dt_info(dt)[1]


def int_scalar(dt: DType) -> bool:
    """Whether ``dt`` is an integer or bool scalar (its nodes get interval facts)."""
    return dt_info(dt)[2]
