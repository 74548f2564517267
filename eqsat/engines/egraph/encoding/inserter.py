"""Bulk insertion into the e-graph: :class:`Inserter` records e-node, union and fact
rows and loads them with egglog's ``input`` command (see :mod:`..encoding`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from eqsat.engines.egraph._egglog import bindings
from eqsat.engines.egraph.analyses import FACT_TAGS, LATE_RULESET, LATE_TAGS
from eqsat.engines.egraph.encoding.schema import (
    _DT_INFO,
    _NODE_FMT,
    _UNION_TAG,
    CTOR_OP,
    I64_MAX,
    I64_MIN,
    INSERT_RULESET,
    NODE_REL,
    OP_NAME,
    SUB_REL,
    SUB_RULESET,
    ArgTable,
    dt_info,
    int_const_value,
    load_part,
    uop_ctor,
)
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.uop import UOp

if TYPE_CHECKING:
    from eqsat.engines.egraph.encoding.snapshot import Node, Snapshot

__all__ = ["Inserter", "write_file", "FACT_ROWS"]


def _fast_tmp() -> str | None:
    """A memory-backed temp directory when there is one (a disk /tmp costs ms per file)."""
    for d in (os.environ.get("EQSAT_TMPDIR"), "/dev/shm"):
        if d and os.path.isdir(d) and os.access(d, os.W_OK):
            return d
    return None


#: the bound relations, whose second field egglog reads as an i64
_BOUND_RELS = frozenset({"RLo", "RHi"})

#: the key in ``Inserter._rows`` of the fact rows that load as tagged insertion rows
#: (``analyses.FACT_TAGS``): written to the insertion relation's file, after its e-nodes
FACT_ROWS = "RNode+facts"


def _fact_line(tag: str, k: Any, v: Any = 0) -> str:
    """The insertion row (``NODE_REL``) of the fact ``tag`` of handle ``k``, value ``v``."""
    return f"{k}\t{tag}\t\t\t{v}\t0\t0\t0\t0"


#: a row waiting to load, as recorded: ``(handle, ctor, fields)`` for an e-node,
#: ``(a, "U", b)`` for a union, ``(handle, tag, value)`` for a fact (``FACT_TAGS``,
#: ``LATE_TAGS``) in ``NODE_REL`` and ``FACT_ROWS``; ``(ctor, fields)`` in ``SUB_REL``.
#: A load writes them as TSV lines (:func:`_line`); a replayed step reads them as they
#: are (``pystep.Mirror.load``)
Row = tuple


def _line(row: Row) -> str:
    """The TSV line of a row of ``NODE_REL`` or ``FACT_ROWS`` (see :data:`Row`)."""
    k, tag, x = row
    if tag in _NODE_FMT:
        return _NODE_FMT[tag].format(k, *x)
    if tag == _UNION_TAG:
        return f"{k}\t{_UNION_TAG}\t\t\t0\t{x}\t0\t0\t0"
    return _fact_line(tag, k, x)


def _sub_line(row: Row) -> str:
    """The TSV line of an ``SUB_REL`` row ``(ctor, fields)``: the e-node's row without
    its handle."""
    return _NODE_FMT[row[0]].format(0, *row[1]).split("\t", 1)[1]

#: the ops whose node is never Invalid when its sources are not, by ``id`` (an int key:
#: an ``Ops`` hashes in Python code)
_DEF_OPS = frozenset(map(id, GroupOp.ALU | {Ops.CONST, Ops.DEFINE_VAR, Ops.RANGE,
                                            Ops.SPECIAL, Ops.CAST, Ops.BITCAST}))
_INVALID = Ops.INVALID  # (read once: each ``Ops.X`` read runs the enum's ``__getattr__``)


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

    def __init__(self, egraph: bindings.EGraph | None, args: ArgTable,
                 workdir: str | None = None, loads: frozenset[str] | None = None,
                 load: Callable[[], bindings.EGraph] | None = None):
        if egraph is None and load is None:
            raise ValueError("Inserter: an egglog e-graph or a function that makes one")
        #: the egglog e-graph (None until ``load`` makes it: :attr:`egraph`)
        self._egraph = egraph
        self._load = load
        #: the constructors whose loading rules the e-graph holds (None: every one; as
        #: ``schema.declarations``'s ``loads``)
        self.loads = loads
        self.args = args
        self._dir = workdir or tempfile.mkdtemp(prefix="eqsat-egraph-", dir=_fast_tmp())
        self._rows: dict[str, list[Row]] = {}
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
        self.reads: dict[str, tuple[list, list]] = {}
        self.read_classes: dict[Any, int] | None = None
        #: called for every e-node recorded while set (a computed pass's
        #: :class:`~eqsat.engines.egraph.computed.seed.BoundSeeder`)
        self.seeder: Callable[..., None] | None = None
        #: rows loaded after the step's native rules (the seeded bounds): rel -> rows
        self._late: dict[str, list[Row]] = {}
        #: the constructors of the e-node rows recorded since the last restore (the
        #: engine runs the interval rules of the others only when one of them is here)
        self.ctors: set[str] = set()
        #: constructor -> how many of the e-node rows waiting to load are its (each
        #: makes at most one row of its table); and the constructors of the e-nodes
        #: waiting to be subsumed. A load runs these constructors' parts of the loading
        #: rule sets (``schema.load_part``) and no other constructor's
        self.pending_ctors: dict[str, int] = {}
        self._sub_ctors: set[str] = set()
        #: (loading rule set, constructors) -> the combined rule set declared for them
        #: in this e-graph (:meth:`_load_set`)
        self.combined: dict[tuple[str, frozenset[str]], str] = {}
        #: the classes a snapshot found holding a constant (their other operator
        #: e-nodes are subsumed: see Snapshot)
        self.const_classes: set[int] = set()
        #: the constructors the RSub rows recorded since the last restore name
        #: (:meth:`forget`): a reset deletes through their rules only
        self.sub_named: set[str] = set()
        #: the tables that held rows after the last step since the last restore (egglog's
        #: sizes, set by the engine's step; None: no step read them): a reset deletes
        #: from them only
        self.filled: frozenset[str] | None = None

    @property
    def egraph(self) -> bindings.EGraph:
        """The egglog e-graph the rows load into (made now by the ``load`` function it
        was given, on first use: a store loads its program only when a run needs
        egglog)."""
        if self._egraph is None:
            assert self._load is not None
            self._egraph = self._load()
        return self._egraph

    @property
    def loaded(self) -> bool:
        """Whether :attr:`egraph` is made."""
        return self._egraph is not None

    # ---- state save/restore (a run's start and end) -----------------------
    def state(self) -> tuple:
        return (self._next, dict(self._memo), dict(self.uop_handle), list(self._keep),
                dict(self.handle_uop))

    def restore(self, st: tuple) -> None:
        self._next, self._memo, self.uop_handle, self._keep, self.handle_uop = \
            st[0], dict(st[1]), dict(st[2]), list(st[3]), dict(st[4])
        self.node_cache.clear()
        self.reads = {}
        self.read_classes = None
        self._rows.clear()
        self._late.clear()
        self.ctors.clear()
        self._sub_ctors.clear()
        self.pending_ctors.clear()
        self.const_classes = set()
        self.sub_named.clear()
        self.filled = None
        self.seeder = None
        self.pending = 0

    def take_waiting(self) -> tuple[list[Row], list[Row], list[Row]]:
        """The rows waiting to load (:data:`Row`), taken as a flush takes them (the late
        bound rows stay: ``take_late``): the e-node and union rows, the fact rows and
        the subsumption rows, each list in the order recorded."""
        rows = self._rows
        out = rows.get(NODE_REL, []), rows.get(FACT_ROWS, []), rows.get(SUB_REL, [])
        rows.clear()
        self.pending = 0
        self.pending_ctors = {}
        self._sub_ctors = set()
        return out

    def take_late(self) -> list[Row]:
        """The late bound rows (:meth:`late_bound`), taken as a flush takes them."""
        rows = self._late.pop(NODE_REL, [])
        self._late.clear()
        return rows

    def lines(self, rel: str) -> list[str]:
        """The TSV lines of the rows waiting in ``rel`` (``NODE_REL``, ``FACT_ROWS``,
        ``SUB_REL``), as a load writes them."""
        return list(map(_sub_line if rel == SUB_REL else _line, self._rows.get(rel, ())))

    @property
    def memo(self) -> dict[tuple, int]:
        """The e-nodes recorded or registered so far: ``(ctor, *fields) -> handle`` (what
        :meth:`node` finds; the computed pass looks terms up here)."""
        return self._memo

    @property
    def inserted(self) -> list[UOp]:
        """The UOps inserted so far (:meth:`add_uop`), in insertion order."""
        return self._keep

    def register_classes(self, snap: Snapshot, classes: Iterable[int]) -> None:
        """Make every e-node of ``classes`` (in ``snap``) known to :meth:`node`: rebuilding
        one returns its class instead of recording a new row."""
        memo, nodes, of = self._memo, snap.nodes, snap.classes
        for c in classes:
            for i in of[c]:
                n = nodes[i]
                memo[(n.ctor, *n.fields)] = c

    @property
    def pending_nodes(self) -> int:
        """How many e-node and union rows wait for :meth:`flush` (each makes at most one
        e-node; the fact rows make none)."""
        return len(self._rows.get(NODE_REL, ()))

    @property
    def load_runs(self) -> int:
        """How many run reports loading the waiting rows gives (before ``extra``'s): a
        ``(run insert 1)``, and a ``(run subsume 1)`` when e-nodes wait to be subsumed."""
        return 0 if not self._rows else 2 if self._sub_ctors else 1

    @property
    def waiting(self) -> frozenset[str]:
        """The relations with rows waiting for :meth:`flush` (the late rows aside)."""
        return frozenset(self._rows)

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

    def fact(self, rel: str, fields: tuple[Any, ...]) -> None:
        """Record one row of a fact relation (``RLo``, ``RHi``, ``RDef``); e-nodes and
        unions go to :data:`NODE_REL` through :meth:`node` and :meth:`union`. A bound
        (``RLo``/``RHi``) outside i64 is not recorded: egglog's column is an i64, and no
        row means no bound known, which is sound."""
        tag = FACT_TAGS.get(rel)
        if tag is None:
            raise ValueError(f"unknown fact relation {rel!r}: one of {sorted(FACT_TAGS)}")
        if rel in _BOUND_RELS and not I64_MIN <= fields[1] <= I64_MAX:
            return
        rows = self._rows.get(FACT_ROWS)
        if rows is None:
            rows = self._rows[FACT_ROWS] = []
        k, *v = map(int, fields)
        rows.append((k, tag, v[0] if v else 0))
        self.pending += 1

    def _node_row(self, ctor: str, k: int, fields: tuple[Any, ...]) -> None:
        self.ctors.add(ctor)
        pending = self.pending_ctors
        pending[ctor] = pending.get(ctor, 0) + 1
        if bool in map(type, fields):  # a bool field is an i64, 0/1
            fields = tuple(int(f) if isinstance(f, bool) else f for f in fields)
        self._rows.setdefault(NODE_REL, []).append((k, ctor, fields))
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
        self.forget(ctor, fields)
        self._sub_ctors.add(ctor)

    def forget(self, ctor: str, fields: tuple[Any, ...]) -> None:
        """Record an RSub row naming the subsumed e-node ``(ctor fields...)`` (E fields
        are handles) for a run's reset to delete (:mod:`..reset`); unlike
        :meth:`subsume`, its load runs no subsumption."""
        self.sub_named.add(ctor)
        rows = self._rows.get(SUB_REL)
        if rows is None:
            rows = self._rows[SUB_REL] = []
        rows.append((ctor, tuple(fields)))
        self.pending += 1

    def drop_subsumptions(self) -> None:
        """Forget the recorded rows that would subsume e-nodes (:meth:`subsume`)."""
        self.pending -= len(self._rows.pop(SUB_REL, ()))
        self._sub_ctors.clear()

    def late_bound(self, k: int, lo: int | None, hi: int | None) -> int:
        """Record the bounds of class ``k`` (either may be None: not known) as rows
        loaded after the next step's native rules; how many rows. A bound outside i64
        is left out (not known), as in :meth:`fact`."""
        n = 0
        if lo is not None and not I64_MIN <= lo <= I64_MAX:
            lo = None
        if hi is not None and not I64_MIN <= hi <= I64_MAX:
            hi = None
        if lo is not None:
            self._late.setdefault(NODE_REL, []).append((k, LATE_TAGS["RLo"], lo))
            n += 1
        if hi is not None:
            self._late.setdefault(NODE_REL, []).append((k, LATE_TAGS["RHi"], hi))
            n += 1
        return n

    def union(self, a: int, b: int) -> None:
        if a != b:
            self._rows.setdefault(NODE_REL, []).append((a, _UNION_TAG, b))
            self.pending += 1

    def add_uop(self, root: UOp, order: list[UOp] | None = None) -> int:
        """Insert a UOp graph (every unique node once); the root's handle. ``order``:
        ``root.toposort()`` when the caller has it already."""
        memo, keep, handle_uop, encode = self.uop_handle, self._keep, self.handle_uop, \
            self._encode
        handle_of = memo.__getitem__
        for u in root.toposort() if order is None else order:
            if id(u) in memo:
                continue
            k = encode(u, tuple(map(handle_of, map(id, u.src))))  # (in C: no frame a node)
            memo[id(u)] = k
            keep.append(u)
            handle_uop.setdefault(k, u)
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
            if u.op is _INVALID or (may_inv and not may_inv.isdisjoint(map(id, u.src))):
                may_inv.add(id(u))
        handle = self.uop_handle
        defs: list[Row] = []
        los: list[Row] = []
        his: list[Row] = []
        tag_def, tag_lo, tag_hi = FACT_TAGS["RDef"], FACT_TAGS["RLo"], FACT_TAGS["RHi"]
        info = _DT_INFO.get
        for u in new:
            k = handle[id(u)]
            if id(u.op) in _DEF_OPS and id(u) not in may_inv:
                defs.append((k, tag_def, 0))
            dt = u.dtype
            if not (info(id(dt)) or dt_info(dt))[2]:  # (int_scalar, its memo read here)
                continue
            lo, hi = u.vmin, u.vmax
            if type(lo) is not int or type(hi) is not int:  # (an index bound is an int)
                if isinstance(lo, float) or isinstance(hi, float):
                    continue
                lo, hi = int(lo), int(hi)
            if I64_MIN <= lo <= hi <= I64_MAX:
                los.append((k, tag_lo, lo))
                his.append((k, tag_hi, hi))
        lines = defs + los + his
        if lines:
            self._rows.setdefault(FACT_ROWS, []).extend(lines)
            self.pending += len(lines)
        return h

    def _encode(self, u: UOp, kids: tuple[int, ...]) -> int:
        d = u.dtype
        dt = (_DT_INFO.get(id(d)) or dt_info(d))[1]  # (dt_name, its memo read here)
        ctor = uop_ctor(u)
        if ctor in CTOR_OP:  # (the usual constructor first: they exclude one another)
            return self.node(ctor, dt, *kids)
        if ctor == "Cst":
            return self.node("Cst", dt, int_const_value(u))
        name = OP_NAME[id(u.op)]
        if ctor == "Leaf":
            return self.node("Leaf", name, dt, self.args.key(u.arg))
        a = self.args.key(u.arg)
        if ctor == "GL":
            lst = self.node("Nil")
            for k in reversed(kids):
                lst = self.node("Cons", k, lst)
            return self.node("GL", name, dt, a, lst)
        return self.node(ctor, name, dt, a, *kids)

    def flush(self, extra: str = "", after: str = "", late: bool = True,
              late_run: bool = True) -> list[Any]:
        """Load the recorded rows, run the egglog commands ``extra``, load the late rows
        (:meth:`late_bound`; not with ``late=False``: they wait for the next flush), run
        ``after``; the outputs of the egglog commands (a ``(run insert 1)`` loads each
        group of rows: its report comes first, then ``extra``'s, then the late rows'
        when there are any, then ``after``'s). ``late_run=False``: the late rows are
        put in their relations only, for ``after`` to run :data:`LATE_RULESET`'s rules
        (no report of theirs)."""
        if not self._rows and not (late and self._late) and not extra and not after:
            return []
        self._flushes += 1
        cmds = self._inputs(self._rows, "")
        if extra:
            cmds.append(extra)
        if late:
            cmds += self._inputs(self._late, "late.", LATE_RULESET if late_run else None)
        if after:
            cmds.append(after)
        self.pending = 0
        return self.egraph.run_program(*self.egraph.parse_program("\n".join(cmds)))

    def _inputs(self, rows: dict[str, list[Row]], tag: str,
                ruleset: str | None = INSERT_RULESET) -> list[str]:
        """Write ``rows`` (rel -> lines) to files; the commands that load them (none
        when there are none) by a run of ``ruleset`` (of :data:`INSERT_RULESET`: with
        the parts of the constructors the rows name, :meth:`_load_set`; None: no run,
        the rows stay in their relations), and ``rows`` emptied."""
        if not rows:
            return []
        facts = rows.pop(FACT_ROWS, None)
        if facts:  # (after the e-nodes: their file is the insertion relation's)
            rows.setdefault(NODE_REL, []).extend(facts)
        cmds = []
        for rel, lines in sorted(rows.items()):
            path = os.path.join(self._dir, f"{tag}{rel}.{self._flushes % 2}.tsv")
            text = list(map(_sub_line if rel == SUB_REL else _line, lines))
            text.append("")  # the last line's newline
            write_file(path, "\n".join(text).encode())
            cmds.append(f'(input {rel} "{path}")')
        if ruleset == INSERT_RULESET:
            ruleset = self._load_set(INSERT_RULESET, set(self.pending_ctors), cmds)
            self.pending_ctors = {}
        if ruleset is not None:
            cmds.append(f"(run {ruleset} 1)")
        if SUB_REL in rows and self._sub_ctors:  # (else its rows only name, see forget)
            cmds.append(f"(run {self._load_set(SUB_RULESET, self._sub_ctors, cmds)} 1)")
            self._sub_ctors = set()
        rows.clear()
        return cmds

    def _load_set(self, base: str, ctors: set[str], cmds: list[str]) -> str:
        """The rule set that loads rows of the constructors ``ctors`` by ``base``'s
        rules: ``base`` combined with those constructors' parts
        (``schema.load_part``), declared (a command appended to ``cmds``) the first time
        this e-graph needs that combination. A constructor's rule matches only its own
        rows, so the load is the one all of ``base``'s rules make."""
        if self.loads is not None:
            ctors = ctors & self.loads  # (another's rows have no rule: they stay unloaded)
        if not ctors:
            return base
        key = (base, frozenset(ctors))
        name = self.combined.get(key)
        if name is None:
            name = self.combined[key] = f"{base}_c{len(self.combined)}"
            parts = " ".join(load_part(base, c) for c in sorted(ctors))
            cmds.append(f"(unstable-combined-ruleset {name} {base} {parts})")
        return name

    def close(self) -> None:
        """Remove the temporary files."""
        try:
            for name in os.listdir(self._dir):
                os.unlink(os.path.join(self._dir, name))
            os.rmdir(self._dir)
        except OSError:
            pass

