"""UOp graphs <-> an egglog e-graph: constructors, bulk insertion, snapshots.

Every UOp op has an egglog constructor of the one sort ``E``:

=====================================  =============================================
UOp                                    egglog term
=====================================  =============================================
CONST of bool/int/index (fits i64)     ``(Cst DT v)`` (bools as 0/1)
ALU op (unary/binary/ternary, no arg)  ``(Add DT a b)``, ``(Neg DT a)``, ``(Where DT c t f)``, ...
CAST / BITCAST                         ``(Cast DT x)`` / ``(Bitcast DT x)`` (DT = target)
any other leaf (var, buffer, float or   ``(Leaf OP DT arg)``
  vector constant, invalid, ...)
any other op with 1-4 sources           ``(G1 OP DT arg x)`` ... ``(G4 OP DT arg a b c d)``
  (range, special, index, load, ...)
any other op with more sources          ``(GL OP DT arg (Cons a (Cons b ... (Nil))))``
=====================================  =============================================

``DT`` is the dtype's name (``"index"``, ``"f32x4"``, ``"f32*"``), ``OP`` the op's
name (``"RANGE"``) and ``arg`` an i64 key into the session's :class:`ArgTable`.

Terms are inserted in bulk: each e-class the Python side knows has a *handle*,
an unextractable ``(H k)`` e-node in the class. A node is one row of the input
relation ``RNode`` (``(RNode k "Add" "index" "" 0 a b 0 0)`` means ``(union (H k)
(Add "index" (H a) (H b)))``; tag ``"U"`` unions two handles), written as a
tab-separated file and loaded with egglog's ``input`` command, then applied by the
``insert`` rule set: thousands of nodes cost milliseconds, where one egglog command
per node costs about a millisecond each (and one ``input`` command about as much as
hundreds of rows: every constructor shares the one relation). ``RLo``/``RHi`` set
interval facts, ``RDef`` marks never-Invalid classes.

A :class:`Snapshot` reads the whole e-graph back (``EGraph.freeze()``): every
e-node with its class (named by the smallest handle in it), dtype, arg and
children, and the ``lo``/``hi`` analysis. Classes that egglog's own rewrites
created get fresh handles there (deterministically, bottom-up). A row equal to
the last snapshot's row at the same place keeps that snapshot's result (its Node)
unless a class it names changed its handle: most of the e-graph is unchanged from
one iteration to the next, and converting a row costs several times comparing it.
"""

from __future__ import annotations

import math
import os
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from itertools import takewhile
from operator import attrgetter, eq, itemgetter, truth
from sys import intern
from typing import Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import LATE_RULESET
from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp, const_value

#: the op name of a context variable: an atom of a guarded subterm with narrowed bounds
CTXVAR = "CTXVAR"

__all__ = [
    "CTXVAR", "CTORS", "ALU_CTOR", "CTOR_OP", "NODE_REL", "Node", "ArgTable", "Inserter",
    "Snapshot", "declarations", "I64_MIN", "I64_MAX", "dtype_of", "fits_i64", "uop_ctor",
    "E_POS", "write_file", "align_rows"]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

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
_SUBSUMABLE_SET = frozenset(_SUBSUMABLE)


def declarations() -> str:
    """egglog program text: the sort, constructors, handles and the insertion relation."""
    out = ["(datatype E)", "(constructor H (i64) E :unextractable)"]
    for name, sig in CTORS.items():
        out.append(f"(constructor {name} ({' '.join(_SORT[s] for s in sig)}) E)")
    out.append("(ruleset insert)")
    out.append(f"(relation {NODE_REL} (i64 String String String i64 i64 i64 i64 i64))")
    for name, sig in CTORS.items():
        ss, es = iter(["s1", "s2"]), iter(["e1", "e2", "e3", "e4"])
        vs = [next(ss) if ch == "S" else "i" if ch == "I" else next(es) for ch in sig]
        args = " ".join(f"(H {v})" if ch == "E" else v for v, ch in zip(vs, sig, strict=True))
        row = f'{NODE_REL} k "{name}" s1 s2 i e1 e2 e3 e4'
        out.append(f"(rule (({row})) ((union (H k) ({name} {args})) (delete ({row})))"
                   f" :ruleset insert :name \"insert-{name}\")")
    row = f'{NODE_REL} k "{_UNION_TAG}" s1 s2 i e1 e2 e3 e4'
    out.append(f'(rule (({row})) ((union (H k) (H e1)) (delete ({row}))) '
               ':ruleset insert :name "insert-union")')
    # RSub: subsume an existing e-node (its children named by handles), in a rule set of
    # its own run after the insertion's (a child may be a class this load names)
    out.append(f"(ruleset {SUB_RULESET})")
    out.append(f"(relation {SUB_REL} (String String String i64 i64 i64 i64 i64))")
    for name in _SUBSUMABLE:
        sig = CTORS[name]
        ss, es = iter(["s1", "s2"]), iter(["e1", "e2", "e3", "e4"])
        vs = [next(ss) if ch == "S" else "i" if ch == "I" else next(es) for ch in sig]
        kids = [v for v, ch in zip(vs, sig, strict=True) if ch == "E"]
        args = " ".join(f"h{v}" if ch == "E" else v for v, ch in zip(vs, sig, strict=True))
        row = f'{SUB_REL} "{name}" s1 s2 i e1 e2 e3 e4'
        query = " ".join([f"({row})", *[f"(= h{v} (H {v}))" for v in kids],
                          f"(= n ({name} {args}))"])
        out.append(f"(rule ({query}) ((subsume ({name} {args})) (delete ({row}))) "
                   f':ruleset {SUB_RULESET} :name "subsume-{name}")')
    return "\n".join(out)


def fits_i64(v: Any) -> bool:
    return isinstance(v, int) and I64_MIN <= v <= I64_MAX


def dtype_of(name: str) -> DType:
    return DType.parse(name)


def _int_const_value(u: UOp) -> int | None:
    """The i64 value of an integer/bool scalar CONST, or None (kept as an opaque leaf)."""
    if u.op is not Ops.CONST or u.dtype.count != 1 or u.dtype.ptr:
        return None
    if not (u.dtype.is_int or u.dtype.is_bool):
        return None
    v = int(u.arg)
    return v if fits_i64(v) else None


def uop_ctor(u: UOp) -> str:
    """The constructor a UOp node is encoded with."""
    if _int_const_value(u) is not None:
        return "Cst"
    if not u.src:
        return "Leaf"
    if u.op in ALU_CTOR and u.arg is None and len(u.src) == _ARITY[u.op]:
        return ALU_CTOR[u.op]
    return f"G{len(u.src)}" if len(u.src) <= _GMAX else "GL"


# ---------------------------------------------------------------------------
# args
# ---------------------------------------------------------------------------
def _arg_key(arg: Any) -> Any:
    """A hashable key telling -0.0 from 0.0, NaNs alike, bools from ints."""
    if isinstance(arg, float):
        return ("nan",) if math.isnan(arg) else ("f", struct.pack("<d", arg))
    if isinstance(arg, bool):
        return ("b", arg)
    if isinstance(arg, tuple):
        return ("t",) + tuple(_arg_key(a) for a in arg)
    if isinstance(arg, Ops):
        return ("op", arg.name)
    return (type(arg).__name__, arg)


class ArgTable:
    """Args (and whole opaque leaves) as i64 keys: the same arg always gets the same key."""

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._args: list[Any] = []

    def key(self, arg: Any) -> int:
        k = _arg_key(arg)
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


# ---------------------------------------------------------------------------
# insertion
# ---------------------------------------------------------------------------
def _fast_tmp() -> str | None:
    """A memory-backed temp directory when there is one (a disk /tmp costs ms per file)."""
    for d in (os.environ.get("EQSAT_TMPDIR"), "/dev/shm"):
        if d and os.path.isdir(d) and os.access(d, os.W_OK):
            return d
    return None


#: the ops whose node is never Invalid when its sources are not
_DEF_OPS = frozenset(GroupOp.ALU | {Ops.CONST, Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL,
                                    Ops.CAST, Ops.BITCAST})
#: id(dtype) -> (dtype, its name, whether it is an integer/bool scalar (interval facts))
_DT_INFO: dict[int, tuple[DType, str, bool]] = {}


def _dt_info(dt: DType) -> tuple[DType, str, bool]:
    info = _DT_INFO.get(id(dt))
    if info is None:  # the entry keeps ``dt`` alive: its id is not reused
        info = _DT_INFO[id(dt)] = (dt, str(dt), dt.count == 1 and not dt.ptr and
                                   (dt.is_int or dt.is_bool))
    return info


def _dt_name(dt: DType) -> str:
    """``str(dt)``, cached."""
    return _dt_info(dt)[1]


def _int_scalar(dt: DType) -> bool:
    """Whether ``dt`` is an integer or bool scalar (its nodes get interval facts)."""
    return _dt_info(dt)[2]


def write_file(path: str, data: bytes) -> None:
    """Write a file (``os`` calls: a third of the cost of ``open()``'s file object)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


class Inserter:
    """Collects rows of the insertion relations and loads them into an egglog EGraph.

    ``new_handle()`` allocates a class handle; ``node(ctor, *fields)`` (fields:
    strings, ints, child handles) records one e-node and returns its handle
    (memoized: the same node twice gets the same handle); ``union(a, b)``;
    ``bound(k, lo, hi)``; ``flush()`` loads everything recorded so far.
    """

    def __init__(self, egraph: bindings.EGraph, args: ArgTable, workdir: str | None = None):
        self.egraph = egraph
        self.args = args
        self._dir = workdir or tempfile.mkdtemp(prefix="eqsat-egraph-", dir=_fast_tmp())
        self._rows: dict[str, list[str]] = {}
        self._next = 0
        self._memo: dict[tuple, int] = {}
        self.uop_handle: dict[int, int] = {}   # id(UOp) -> handle
        self._keep: list[UOp] = []             # keeps the UOps of uop_handle alive
        self.handle_uop: dict[int, UOp] = {}   # handle -> the inserted UOp
        self.pending = 0
        self._flushes = 0
        #: (class, ctor, fields, subsumed) -> Node, reused by the next snapshots
        self.node_cache: dict[tuple, Node] = {}
        #: the last snapshot's rows and their results, per egglog function, and its
        #: class names (egglog value -> handle): a row that did not change is not read
        #: again (see Snapshot). Valid while the e-graph is not popped (a ``(pop)``
        #: may give egglog's values other meanings): :meth:`restore` drops them.
        self._reads: dict[str, tuple[list, list]] = {}
        self._read_cls: dict[Any, int] | None = None
        #: called for every e-node recorded while set (a computed pass's
        #: :class:`~eqsat.engines.egraph.computed.seed.BoundSeeder`)
        self.seeder: Callable[..., None] | None = None
        #: rows loaded after the step's native rules (the seeded bounds): rel -> lines
        self._late: dict[str, list[str]] = {}
        #: the constructors of the e-node rows recorded since the last restore (the
        #: engine runs the interval rules of the others only when one of them is here)
        self.ctors: set[str] = set()
        #: the classes a snapshot found holding a constant (their other operator
        #: e-nodes are subsumed: see Snapshot)
        self._const_classes: set[int] = set()

    # ---- state save/restore (push/pop of the e-graph) ---------------------
    def state(self) -> tuple:
        return (self._next, dict(self._memo), dict(self.uop_handle), list(self._keep),
                dict(self.handle_uop))

    def restore(self, st: tuple) -> None:
        self._next, self._memo, self.uop_handle, self._keep, self.handle_uop = \
            st[0], dict(st[1]), dict(st[2]), list(st[3]), dict(st[4])
        self.node_cache.clear()
        self._reads = {}
        self._read_cls = None
        self._rows.clear()
        self._late.clear()
        self.ctors.clear()
        self._const_classes = set()
        self.seeder = None
        self.pending = 0

    @property
    def has_rows(self) -> bool:
        """Whether rows wait for :meth:`flush` (a ``(run insert 1)`` before ``extra``)."""
        return bool(self._rows)

    @property
    def pending_nodes(self) -> int:
        """How many e-node and union rows wait for :meth:`flush` (each makes at most one
        e-node; the fact rows make none)."""
        return len(self._rows.get(NODE_REL, ()))

    @property
    def load_runs(self) -> int:
        """How many run reports loading the waiting rows gives (before ``extra``'s): a
        ``(run insert 1)``, and a ``(run subsume 1)`` when e-nodes wait to be subsumed."""
        return 0 if not self._rows else 2 if SUB_REL in self._rows else 1

    @property
    def has_late(self) -> bool:
        """Whether late rows wait (a ``(run insert 1)`` between ``extra`` and ``after``)."""
        return bool(self._late)

    @property
    def handles(self) -> int:
        """How many handles were allocated (handles are 0 .. handles-1)."""
        return self._next

    def new_handle(self) -> int:
        k = self._next
        self._next += 1
        return k

    def _row(self, rel: str, fields: tuple[Any, ...]) -> None:
        """Record one row of a fact relation (``RLo``, ``RHi``, ``RDef``); e-nodes and
        unions go to :data:`NODE_REL` through :meth:`node` and :meth:`union`."""
        line = "\t".join(map(str, fields))
        if "True" in line or "False" in line:  # a bool field is written as 0/1
            line = "\t".join(str(int(f)) if isinstance(f, bool) else str(f) for f in fields)
        rows = self._rows.get(rel)
        if rows is None:
            rows = self._rows[rel] = []
        rows.append(line)
        self.pending += 1

    def _node_row(self, ctor: str, k: int, fields: tuple[Any, ...]) -> None:
        self.ctors.add(ctor)
        line = _NODE_FMT[ctor].format(k, *fields)
        if "True" in line or "False" in line:  # a bool field is written as 0/1
            line = _NODE_FMT[ctor].format(k, *[int(f) if isinstance(f, bool) else f
                                               for f in fields])
        self._node_line(line)

    def _node_line(self, line: str) -> None:
        rows = self._rows.get(NODE_REL)
        if rows is None:
            rows = self._rows[NODE_REL] = []
        rows.append(line)
        self.pending += 1

    def node(self, ctor: str, *fields: Any) -> int:
        """Record the e-node ``(ctor fields...)`` (E fields are handles); its handle."""
        key = (ctor, *fields)
        k = self._memo.get(key)
        if k is not None:
            return k
        k = self._next
        self._next = k + 1
        self._memo[key] = k
        self._node_row(ctor, k, fields)
        if self.seeder is not None:
            self.seeder(self, k, ctor, fields, True)
        return k

    def node_with_handle(self, k: int, ctor: str, *fields: Any) -> None:
        """Record ``(union (H k) (ctor fields...))`` for an existing handle ``k``."""
        self._memo.setdefault((ctor, *fields), k)
        self._node_row(ctor, k, fields)
        if self.seeder is not None:
            self.seeder(self, k, ctor, fields, False)

    def subsume(self, ctor: str, fields: tuple[Any, ...]) -> None:
        """Record that the e-node ``(ctor fields...)`` (E fields are handles) is to be
        subsumed (loaded by the next flush, with the other rows)."""
        k = _NODE_FMT[ctor].format(0, *fields).split("\t", 1)[1]
        rows = self._rows.get(SUB_REL)
        if rows is None:
            rows = self._rows[SUB_REL] = []
        rows.append(k)
        self.pending += 1

    def late_bound(self, k: int, lo: int | None, hi: int | None) -> int:
        """Record the bounds of class ``k`` (either may be None: not known) as rows
        loaded after the next step's native rules; how many rows."""
        n = 0
        if lo is not None:
            self._late.setdefault("RLo", []).append(f"{k}\t{lo}")
            n += 1
        if hi is not None:
            self._late.setdefault("RHi", []).append(f"{k}\t{hi}")
            n += 1
        return n

    def union(self, a: int, b: int) -> None:
        if a != b:
            self._node_line(f"{a}\t{_UNION_TAG}\t\t\t0\t{b}\t0\t0\t0")

    def add_uop(self, root: UOp, order: list[UOp] | None = None) -> int:
        """Insert a UOp graph (every unique node once); the root's handle. ``order``:
        ``root.toposort()`` when the caller has it already."""
        memo = self.uop_handle
        for u in root.toposort() if order is None else order:
            if id(u) in memo:
                continue
            k = self._encode(u, [memo[id(s)] for s in u.src])
            memo[id(u)] = k
            self._keep.append(u)
            self.handle_uop.setdefault(k, u)
        return memo[id(root)]

    def add_uop_with_facts(self, root: UOp, order: list[UOp] | None = None) -> int:
        """:meth:`add_uop` plus the IR's facts of the new nodes: their bounds (``RLo``/
        ``RHi``) and which are never Invalid (``RDef``). ``order``: ``root.toposort()``
        when the caller has it already."""
        before = len(self._keep)
        if order is None:
            order = root.toposort()
        h = self.add_uop(root, order)
        new = self._keep[before:]
        if not new:
            return h
        may_inv: set[int] = set()  # the nodes that may be Invalid (ids)
        for u in order:
            if u.op is Ops.INVALID or (may_inv and not may_inv.isdisjoint(map(id, u.src))):
                may_inv.add(id(u))
        handle = self.uop_handle
        defs: list[str] = []
        los: list[str] = []
        his: list[str] = []
        for u in new:
            k = handle[id(u)]
            if u.op in _DEF_OPS and id(u) not in may_inv:
                defs.append(str(k))
            if not _int_scalar(u.dtype):
                continue
            lo, hi = u.vmin, u.vmax
            if isinstance(lo, float) or isinstance(hi, float):
                continue
            lo, hi = int(lo), int(hi)
            if I64_MIN <= lo <= hi <= I64_MAX:
                los.append(f"{k}\t{lo}")
                his.append(f"{k}\t{hi}")
        for rel, lines in (("RDef", defs), ("RLo", los), ("RHi", his)):
            if lines:
                self._rows.setdefault(rel, []).extend(lines)
                self.pending += len(lines)
        return h

    def _encode(self, u: UOp, kids: list[int]) -> int:
        dt = _dt_name(u.dtype)
        ctor = uop_ctor(u)
        if ctor == "Cst":
            return self.node("Cst", dt, _int_const_value(u))
        if ctor == "Leaf":
            return self.node("Leaf", u.op.name, dt, self.args.key(u.arg))
        if ctor in CTOR_OP:
            return self.node(ctor, dt, *kids)
        a = self.args.key(u.arg)
        if ctor == "GL":
            lst = self.node("Nil")
            for k in reversed(kids):
                lst = self.node("Cons", k, lst)
            return self.node("GL", u.op.name, dt, a, lst)
        return self.node(ctor, u.op.name, dt, a, *kids)

    def flush(self, extra: str = "", after: str = "", late: bool = True) -> list[Any]:
        """Load the recorded rows, run the egglog commands ``extra``, load the late rows
        (:meth:`late_bound`; not with ``late=False``: they wait for the next flush), run
        ``after``; the outputs of the egglog commands (a ``(run insert 1)`` loads each
        group of rows: its report comes first, then ``extra``'s, then the late rows'
        when there are any, then ``after``'s)."""
        if not self._rows and not (late and self._late) and not extra and not after:
            return []
        self._flushes += 1
        cmds = self._inputs(self._rows, "")
        if extra:
            cmds.append(extra)
        if late:
            cmds += self._inputs(self._late, "late.", LATE_RULESET)
        if after:
            cmds.append(after)
        self.pending = 0
        return self.egraph.run_program(*self.egraph.parse_program("\n".join(cmds)))

    def _inputs(self, rows: dict[str, list[str]], tag: str, ruleset: str = "insert"
                ) -> list[str]:
        """Write ``rows`` (rel -> lines) to files; the commands that load them (none
        when there are none) by a run of ``ruleset``, and ``rows`` emptied."""
        if not rows:
            return []
        cmds = []
        for rel, lines in sorted(rows.items()):
            path = os.path.join(self._dir, f"{tag}{rel}.{self._flushes % 2}.tsv")
            lines.append("")  # the last line's newline
            write_file(path, "\n".join(lines).encode())
            cmds.append(f'(input {rel} "{path}")')
        cmds.append(f"(run {ruleset} 1)")
        if SUB_REL in rows:
            cmds.append(f"(run {SUB_RULESET} 1)")
        rows.clear()
        return cmds

    def close(self) -> None:
        """Remove the temporary files."""
        try:
            for name in os.listdir(self._dir):
                os.unlink(os.path.join(self._dir, name))
            os.rmdir(self._dir)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# reading the e-graph back
# ---------------------------------------------------------------------------
#: constructor -> the positions of its e-class (``E``) fields, its children
E_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "E") for name, sig in CTORS.items()}


#: constructor -> the positions of its String / i64 fields
_S_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "S") for name, sig in CTORS.items()}
_I_POS: dict[str, tuple[int, ...]] = {
    name: tuple(i for i, c in enumerate(sig) if c == "I") for name, sig in CTORS.items()}
_FIRST = itemgetter(0)
_ROW_OF = attrgetter("row")
_NONE: frozenset[int] = frozenset()


#: how many rows of the last snapshot a row is compared with past a mismatch
#: (rows the e-graph deleted in between: see :func:`align_rows`)
_LOOKAHEAD = 8


def align_rows(rows: list, last: list) -> list[int]:
    """For each of a function's rows (``FrozenRow``, which compare in Rust), the index of
    the equal row of the last snapshot, or -1. egglog keeps a table's rows in order,
    deletes rows in place and adds rows at the end (a row a merge rewrites is deleted
    and added again): walking both lists, a row that differs from the last snapshot's
    row at the same step is compared with the next :data:`_LOOKAHEAD` ones (the deleted
    rows are skipped), else it is new. On the corpus this finds every row of the last
    snapshot that is still there; comparing by place alone finds two thirds of them."""
    n, on = len(rows), len(last)
    src = [-1] * n
    i = j = 0
    while i < n and j < on:
        # the run of equal rows from (i, j), compared in C
        ri, li = iter(rows), iter(last)
        ri.__setstate__(i)
        li.__setstate__(j)
        run = len(list(takewhile(truth, map(eq, ri, li))))
        if run:
            src[i:i + run] = range(j, j + run)
            i += run
            j += run
            if i >= n or j >= on:
                break
        r = rows[i]
        stop = min(on, j + 1 + _LOOKAHEAD)
        k = j + 1
        while k < stop:
            if r == last[k]:
                break
            k += 1
        if k < stop:
            src[i] = k
            j = k + 1
        i += 1
    return src


def _unchanged(last: tuple[list, list] | None, rows: list, stale: set[int] | frozenset[int],
               kind: str = "") -> tuple[list, list[int]]:
    """For one function's rows (``FrozenRow``): the results the last snapshot had for
    the rows it had too (see :func:`align_rows`), None for the others and for the results
    that name a class in ``stale``; and the indices of the None ones. ``last``: that
    snapshot's ``(rows, results)``; ``kind``: what a result is, a ``"node"`` (Node), a
    ``"pair"`` (class, value) or a ``"class"``."""
    n = len(rows)
    if last is None:
        return [None] * n, list(range(n))
    old = last[1]
    if kind not in ("", "node", "pair", "class"):
        raise ValueError(f"_unchanged: unknown kind of result {kind!r}")
    res = [None if k < 0 else old[k] for k in align_rows(rows, last[0])]
    if stale:
        if kind == "node":
            res = [t if t is not None and t.cls not in stale and stale.isdisjoint(t.kids)
                   else None for t in res]
        elif kind == "pair":
            res = [t if t is not None and t[0] not in stale else None for t in res]
        elif kind == "class":
            res = [t if t not in stale else None for t in res]
    return res, [i for i, t in enumerate(res) if t is None]


#: constructor -> the position of its dtype field (-1: none, a list cell)
_DTYPE_POS: dict[str, int] = {
    name: (0 if name == "Cst" or name in CTOR_OP else -1 if name in ("Cons", "Nil") else 1)
    for name in CTORS}


class Node:
    """One e-node of a snapshot: its class, constructor, fields (children as classes).

    ``kids`` are the child classes (a GL's list not flattened), ``dtype`` the
    dtype name (None for list cells), ``row`` the tuple ``(cls, ctor, fields,
    subsumed)`` (the snapshot's sort key).
    """

    __slots__ = ("cls", "ctor", "fields", "subsumed", "kids", "dtype", "row")

    def __init__(self, cls: int, ctor: str, fields: tuple, subsumed: bool = False,
                 row: tuple | None = None):
        self.cls = cls
        self.ctor = ctor
        self.fields = fields
        self.subsumed = subsumed
        pos = E_POS[ctor]
        self.kids = tuple(map(fields.__getitem__, pos))
        d = _DTYPE_POS[ctor]
        self.dtype = None if d < 0 else fields[d]
        # ``row``: the caller's tuple when it has one (not checked)
        self.row = (cls, ctor, fields, subsumed) if row is None else row

    @property
    def op(self) -> Ops | None:
        """The IR op (None for Cons/Nil and engine-internal leaves)."""
        c = self.ctor
        if c == "Cst":
            return Ops.CONST
        if c in CTOR_OP:
            return CTOR_OP[c]
        if c in ("Cons", "Nil") or self.fields[0] not in Ops.__members__:
            return None
        return Ops[self.fields[0]]

    def __repr__(self) -> str:
        return f"Node({self.cls}, {self.ctor!r}, {self.fields!r}{', subsumed' * self.subsumed})"


class Snapshot:
    """The whole e-graph as Python data, read with ``EGraph.freeze()``.

    ``nodes``: every constructor e-node (classes named by handle); ``classes``:
    class -> indices into ``nodes``; ``lo``/``hi``: the interval analysis;
    ``new_handles``: how many classes got a handle during this read (their
    rows were recorded in ``inserter``; flush it to make egglog know them).
    """

    def __init__(self, egraph: bindings.EGraph, inserter: Inserter,
                 analyses: tuple[str, ...] = ("lo", "hi")) -> None:
        fr = egraph.freeze()
        funcs = fr.functions
        to_i64, to_string = egraph.value_to_i64, egraph.value_to_string
        # A row equal to the last snapshot's row at the same place (see _unchanged)
        # keeps its result: an (H k) row always, any other row unless it names a class
        # whose egglog value now has another handle or is gone (``stale``)
        reads = inserter._reads
        fresh: dict[str, tuple[list, list]] = {}
        hrows = funcs["H"].rows
        last_rows = reads.get("H")
        if last_rows is None:  # (a comprehension: the fast way to read every row)
            hres = [(to_i64(r.inputs[0]), r.output) for r in hrows]
        else:
            hres, todo = _unchanged(last_rows, hrows, _NONE)
            for i in todo:
                r = hrows[i]
                hres[i] = (to_i64(r.inputs[0]), r.output)
        fresh["H"] = (hrows, hres)
        handle_val: dict[int, Any] = dict(hres)
        cls_of: dict[Any, int] = {}  # a class is named by its smallest handle
        first = cls_of.setdefault
        for k, o in hres:
            if first(o, k) > k:
                cls_of[o] = k
        last = inserter._read_cls
        if last is None:
            reads = {}
        stale = _NONE if last is None else {k for _, k in last.items() - cls_of.items()}
        strs: dict[Any, str] = {}
        sget = strs.get
        # every row becomes a Node (class, ctor, fields, subsumed) with its classes named
        # by handle; a row whose class or a child's has no handle yet waits in `raw` as
        # (ctor, output, fields with classes still as egglog values, subsumed). Node
        # objects are immutable: the previous snapshots' are reused
        cache = inserter.node_cache
        cget = cache.get
        nodes: list[Node] = []
        raw: list[tuple[str, Any, list, bool]] = []
        csts: list[Node] = []  # the Cst e-nodes
        made: list[Node] = []  # the Node objects made by this read (not cached before)
        get = cls_of.get
        for name, sig in CTORS.items():
            f = funcs.get(name)
            if f is None:
                continue
            rows = f.rows
            if not rows:
                continue
            res, todo = _unchanged(reads.get(name), rows, stale, "node")
            if not todo:
                pass
            elif sig == "SEE":  # binary ALU nodes, the common case
                for i in todo:
                    r = rows[i]
                    a = r.inputs
                    o = r.output
                    c, x, y = get(o), get(a[1]), get(a[2])
                    v = a[0]
                    d = sget(v)
                    if d is None:
                        d = strs[v] = intern(to_string(v))
                    if c is None or x is None or y is None:
                        a[0] = d
                        raw.append((name, o, a, r.subsumed))
                    else:
                        t = (c, name, (d, x, y), r.subsumed)
                        n = cget(t)
                        if n is None:
                            n = cache[t] = Node(*t, row=t)
                            made.append(n)
                        res[i] = n
            else:
                s_pos, i_pos, pos = _S_POS[name], _I_POS[name], E_POS[name]
                for i in todo:
                    r = rows[i]
                    a = r.inputs
                    for j in s_pos:
                        v = a[j]
                        d = sget(v)
                        if d is None:
                            d = strs[v] = intern(to_string(v))
                        a[j] = d
                    for j in i_pos:
                        a[j] = to_i64(a[j])
                    o = r.output
                    c = get(o)
                    if c is not None and pos:
                        vals = list(a)
                        for j in pos:
                            k = get(a[j])
                            if k is None:
                                c = None
                                break
                            vals[j] = k
                        else:
                            a = vals
                    if c is None:
                        raw.append((name, o, a, r.subsumed))
                    else:
                        t = (c, name, tuple(a), r.subsumed)
                        n = cget(t)
                        if n is None:
                            n = cache[t] = Node(*t, row=t)
                            made.append(n)
                        res[i] = n
            fresh[name] = (rows, res)
            if name == "Cst":
                csts = [n for n in res if n is not None]
            nodes += filter(None, res)
        # classes without a handle (made by egglog's rewrites): handles bottom-up
        self.new_handles = 0
        #: e-nodes left out: no finite term names their class or a child's
        self.dropped = 0
        todo_raw = [x for x in raw if x[1] not in cls_of]
        while todo_raw:
            ready, rest = [], []
            for x in todo_raw:
                if x[1] in cls_of:
                    continue
                if all(x[2][i] in cls_of for i in E_POS[x[0]]):
                    ready.append(x)
                else:
                    rest.append(x)
            if not ready:
                # e-nodes left without a finite term: no term can be built of them (a
                # class reachable only through a cycle, or a row egglog 13.2 leaves with a
                # child class that has no e-node at all, after `(Add x x) -> (Mul x 2)`
                # matched a class holding `x + x` of itself: x == 0). The snapshot leaves
                # them out (``dropped``), as the extraction could not use them anyway
                self.dropped = len(rest)
                break
            keyed = []
            for x in ready:
                sig = CTORS[x[0]]
                fields = tuple(cls_of[v] if ch == "E" else v
                               for v, ch in zip(x[2], sig, strict=True))
                keyed.append(((x[0], fields), x))
            keyed.sort(key=lambda t: _det_key(t[0]))
            for (ctor, fields), x in keyed:
                if x[1] in cls_of:
                    continue
                k = inserter.new_handle()
                cls_of[x[1]] = k
                inserter.node_with_handle(k, ctor, *fields)
                self.new_handles += 1
            todo_raw = rest
        for name, out, vals, sub in raw:
            c = get(out)
            if c is None:
                continue  # a class without a finite term (see ``dropped``)
            ok = True
            for i in E_POS[name]:
                k = get(vals[i])
                if k is None:
                    ok = False
                    break
                vals[i] = k
            if ok:
                t = (c, name, tuple(vals), sub)
                n = cget(t)
                if n is None:
                    n = cache[t] = Node(*t, row=t)
                    made.append(n)
                nodes.append(n)
                if name == "Cst":
                    csts.append(n)
        # sorted: the nodes' order is part of the result ((class, ctor, fields) is unique)
        nodes.sort(key=_ROW_OF)
        if len(cache) > 4 * len(nodes) + 4096:
            cache.clear()
        rows4 = list(map(_ROW_OF, nodes))
        classes: dict[int, list[int]] = {}
        #: class -> the value of its Cst e-node; class -> its dtype name (that of its
        #: first e-node with one: all but list cells)
        csts.sort(key=_ROW_OF)
        self.consts: dict[int, int] = {n.cls: n.fields[1] for n in csts}
        self.dtypes: dict[int, str] = {}
        dtypes_ = self.dtypes
        prev = -1  # the rows are sorted by class: each class is one run
        lst: list[int] = []
        need_dt = False
        for i, c in enumerate(map(_FIRST, rows4)):
            if c != prev:
                prev = c
                lst = classes[c] = [i]
                dt = nodes[i].dtype
                if dt is None:
                    need_dt = True
                else:
                    dtypes_[c] = dt
                    need_dt = False
            else:
                lst.append(i)
                if need_dt:
                    dt = nodes[i].dtype
                    if dt is not None:
                        dtypes_[c] = dt
                        need_dt = False
        self.nodes = nodes
        #: ``(class, ctor, fields, subsumed)`` of every e-node, in the order of ``nodes``
        self.rows = rows4
        self.classes = classes
        self.cls_of = cls_of
        self._handle_val = handle_val
        self.lo: dict[int, int] = {}
        self.hi: dict[int, int] = {}
        for name, table in (("lo", self.lo), ("hi", self.hi)):
            if name not in analyses or name not in funcs:
                continue
            rows = funcs[name].rows
            last_rows = reads.get(name)
            if last_rows is None:
                res = [None if (c := get(r.inputs[0])) is None else (c, to_i64(r.output))
                       for r in rows]
            else:
                res, todo = _unchanged(last_rows, rows, stale, "pair")
                for i in todo:
                    r = rows[i]
                    c = get(r.inputs[0])
                    if c is not None:
                        res[i] = (c, to_i64(r.output))
            fresh[name] = (rows, res)
            table.update(filter(None, res))
        known: set[int] = set()
        if "Def" in funcs:
            rows = funcs["Def"].rows
            last_rows = reads.get("Def")
            if last_rows is None:
                res = [get(r.inputs[0]) for r in rows]
            else:
                res, todo = _unchanged(last_rows, rows, stale, "class")
                for i in todo:
                    res[i] = get(rows[i].inputs[0])
            fresh["Def"] = (rows, res)
            known = set(res)
            known.discard(None)  # type: ignore[arg-type]
        inserter._reads = fresh
        inserter._read_cls = cls_of
        self.defined = defined_classes(nodes, known, classes)
        for c in sorted(self.defined - known):  # for the native rules' guards
            inserter._row("RDef", (c,))
        # an e-node with its own class among its children (x == f(x, k): 0 == 0 // 3,
        # x == x + 0) is subsumed: no finite term goes through it, and matching it only
        # makes more such e-nodes, each step more: (0 // 3) // 3 -> 0 // 9, then every
        # product of the divisors, each pair of them a match of the same pattern
        # (an e-node is looked at when its Node is made: a row that changes, e.g. when
        # its class or a child's merges into another, makes a new Node)
        self.loops = 0
        for n in made:
            if not n.subsumed and n.cls in n.kids and n.ctor in _SUBSUMABLE_SET:
                inserter.subsume(n.ctor, n.fields)
                self.loops += 1
        # the operator e-nodes of a class that holds a constant are subsumed too: the
        # class is that constant (a Cst is never Invalid), and its other e-nodes only
        # feed the rules, which then pile up more of them (x // 7 == 0 for x < 7 puts
        # every x // k, k >= 7, into the class of 0; (x // b) // c -> x // (b*c) matched
        # them pairwise: 11.7 million matches in one step of a chunk of random index
        # expressions)
        seen = inserter._const_classes
        new_consts = [c for c in self.consts if c not in seen]
        seen.update(new_consts)
        check = {id(n): n for n in made if n.cls in self.consts}
        for c in new_consts:
            for i in classes[c]:
                check[id(nodes[i])] = nodes[i]
        for n in check.values():
            if not n.subsumed and n.ctor in CTOR_OP and n.cls not in n.kids:
                inserter.subsume(n.ctor, n.fields)
                self.loops += 1
        self.relations: dict[str, list[tuple[int, ...]]] = {}
        for name in analyses:
            if name in ("lo", "hi") or name not in funcs:
                continue
            self.relations[name] = [tuple(cls_of.get(v, -1) for v in r.inputs)
                                    for r in funcs[name].rows]
        self.enodes = len(nodes)
        #: class -> height of its cheapest term (filled by the computed pass)
        self.height: dict[int, int] = {}
        #: class -> tree cost of its cheapest term under the run's cost model (filled by
        #: the computed pass; the engine's stall check reads the roots' entries)
        self.best_cost: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<Snapshot {len(self.classes)} classes, {len(self.nodes)} e-nodes>"

    def cls_of_handle(self, k: int) -> int:
        """The class (its smallest handle) that handle ``k`` belongs to."""
        v = self._handle_val.get(k)
        if v is None:
            raise KeyError(f"handle {k} is not in the e-graph")
        return self.cls_of[v]

    def class_nodes(self, c: int) -> Iterator[Node]:
        for i in self.classes.get(c, ()):
            yield self.nodes[i]

    def reached(self, roots: Iterable[int]) -> set[int]:
        """The classes ``roots`` reach through any e-node (subsumed ones and list cells
        too), the roots included."""
        nodes, classes = self.nodes, self.classes
        seen = set(roots)
        stack = list(seen)
        while stack:
            for i in classes.get(stack.pop(), ()):
                for k in nodes[i].kids:
                    if k not in seen:
                        seen.add(k)
                        stack.append(k)
        return seen

    def bounds(self, c: int) -> tuple[float, float]:
        return (self.lo.get(c, -math.inf), self.hi.get(c, math.inf))

    def const_node_of(self, c: int) -> int | None:
        """The value of a Cst e-node in class ``c`` (not the interval), else None."""
        return self.consts.get(c)

    def const_of(self, c: int) -> int | None:
        """The integer constant of class ``c`` (a Cst e-node in it), else None."""
        v = self.consts.get(c)
        if v is not None:
            return v
        lo, hi = self.lo.get(c), self.hi.get(c)
        if lo is not None and lo == hi:
            return lo
        return None

    def list_items(self, c: int) -> list[int]:
        """The classes of a Cons list (GL's children), in order."""
        out = []
        seen = set()
        while c not in seen:
            seen.add(c)
            cons = [n for n in self.class_nodes(c) if n.ctor == "Cons"]
            if not cons:
                break
            out.append(cons[0].fields[0])
            c = cons[0].fields[1]
        return out




def defined_classes(nodes: list[Node], known: set[int],
                    classes: dict[int, list[int]] | None = None) -> set[int]:
    """The classes that are never Invalid: a least fixed point over the e-nodes (a
    constant, a leaf other than Invalid, range/special of such an end, an ALU op
    whose operands all are), starting from ``known``. With ``classes`` (class ->
    indices into ``nodes``, as :attr:`Snapshot.classes`) only the e-nodes of the
    classes not in ``known`` are visited (the fixed point does not depend on the
    order the e-nodes are visited in)."""
    out = set(known)
    if classes is not None:
        nodes = [nodes[i] for c in sorted(classes.keys() - out) for i in classes[c]]
    waiting: dict[int, list[Node]] = {}
    stack: list[int] = []

    def ready(n: Node) -> bool:
        c = n.ctor
        if c == "Cst":
            return True
        if c == "Leaf":
            return n.fields[0] != "INVALID"
        if c in CTOR_OP or (c == "G1" and n.fields[0] in ("RANGE", "SPECIAL")):
            return all(k in out for k in n.kids)
        return False

    for n in nodes:
        if n.cls in out:
            continue
        c = n.ctor
        if not (c in ("Cst", "Leaf") or c in CTOR_OP or
                (c == "G1" and n.fields[0] in ("RANGE", "SPECIAL"))):
            continue
        if ready(n):
            out.add(n.cls)
            stack.append(n.cls)
        else:
            for k in n.kids:
                if k not in out:
                    waiting.setdefault(k, []).append(n)
    while stack:
        k = stack.pop()
        for n in waiting.pop(k, ()):
            if n.cls not in out and ready(n):
                out.add(n.cls)
                stack.append(n.cls)
    return out


def _det_key(x: Any) -> tuple:
    """A total, deterministic order over ctor/field tuples."""
    if isinstance(x, tuple):
        return (3, tuple(_det_key(y) for y in x))
    if isinstance(x, bool):
        return (0, int(x))
    if isinstance(x, int):
        return (0, x)
    return (1, str(x))


def decode_node(n: Node, args: ArgTable, snap: Snapshot) -> tuple[Ops, DType, Any,
                                                                      tuple[int, ...]] | None:
    """``(op, dtype, arg, children)`` of an e-node for the extractor (None: not an IR node)."""
    c = n.ctor
    if c == "Cst":
        dt = dtype_of(n.fields[0])
        return Ops.CONST, dt, const_value(dt, n.fields[1]), ()
    if c in CTOR_OP:
        return CTOR_OP[c], dtype_of(n.fields[0]), None, tuple(n.fields[1:])
    if c in ("Cons", "Nil") or n.fields[0] not in Ops.__members__:
        return None  # a list cell, or an engine-internal leaf (a context variable)
    op, dt, a = Ops[n.fields[0]], dtype_of(n.fields[1]), args.arg(n.fields[2])
    if c == "Leaf":
        return op, dt, a, ()
    if c == "GL":
        return op, dt, a, tuple(snap.list_items(n.fields[3]))
    return op, dt, a, tuple(n.fields[3:])


_ = dtypes
