"""What the passes of one run share.

:class:`PassResult` is what one pass did, :class:`PassState` the memory carried from
one pass to the next (the rules themselves are :class:`rules.computed.PyRule`);
:class:`RulesMemo` what is read once per rule list.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eqsat.engines.egraph.computed.terms import Term
from eqsat.engines.egraph.encoding import Node
from eqsat.ir.linear import Lin

if TYPE_CHECKING:
    from eqsat.engines.egraph.computed.context import Context

_T = TypeVar("_T")


@dataclass
class PassResult:
    """What one computed pass did: unions per rule, and whether anything was new."""

    matches: dict[str, int] = field(default_factory=dict)
    unions: int = 0
    skipped: int = 0
    skipped_cap: int = 0
    times: dict[str, float] = field(default_factory=dict)
    #: the pass ended past its deadline (a rule family may have stopped early for time)
    late: bool = False


class PassState:
    """Memory shared by the passes of one run: what was already applied, and what a
    pass may take over from the last one instead of recomputing it (the prices of
    e-nodes whose children did not change, the linear forms of classes whose best
    term reads the same, the terms of linear forms), each exactly what a fresh
    computation gives."""

    def __init__(self) -> None:
        self.done: set[tuple] = set()
        self.contexts: list[Context] = []
        self.unions: dict[int, int] = {}
        self.nodes: list[Node] = []  # the last pass's e-nodes
        #: the same as a set, once a later pass made it (a run of one pass needs none)
        self.node_set: set[Node] | None = None
        #: the last pass's facts: (lo, hi, defined, the classes), its snapshot's own (a
        #: snapshot is not changed once read)
        self.facts: tuple[dict, dict, set, dict] = ({}, {}, set(), {})
        #: class -> the last pass's e-nodes it is a child of, once a pass asked for it
        #: (:meth:`children_index`; kept up to date by ``passes.changed_classes`` then)
        self.kid_index: dict[int, set[Node]] | None = None
        self.prices: dict[Any, float] = {}
        self.node_prices: dict[Node, float] = {}  # the last pass's, by e-node
        self.lins: dict[int, tuple[Node | None, Lin]] = {}  # LinForms.kept() of the last pass
        self.lin_terms: dict[tuple, Term] = {}  # EClassCtx.lin's terms (pure: shared)
        self.term_keys: dict[Term, tuple] = {}  # EClassCtx.sum's sort keys (pure: shared)
        self.ctx_out: dict[int, set[int]] = {}
        #: class -> the ops of its e-nodes, as the e-matching read them; a pass drops
        #: the classes that changed since (their e-nodes may differ)
        self.class_ops: dict[int, frozenset[int]] = {}
        self.recorded: set[tuple[int, int]] = set()  # (class, handle) unions recorded
        #: class -> a version, bumped when the class gains a Mod/Idiv/Mul e-node (what the
        #: whole-sum rules read inside their atoms' classes): their memo keys hold the
        #: versions, so a sum runs its rules again when an atom's class gained such a node
        self.versions: dict[int, int] = {}
        #: changed classes the computed rules have not visited yet:
        #: no root's near-best term passed through them (passes.NEAR_FACTOR)
        self.deferred: set[int] = set()

    def __repr__(self) -> str:
        return f"<PassState {len(self.done)} applied, {len(self.contexts)} contexts>"

    def children_index(self) -> dict[int, set[Node]]:
        """``kid_index``, made from the last pass's e-nodes the first time it is asked
        for."""
        index = self.kid_index
        if index is None:
            index = self.kid_index = {}
            index_children(index, self.nodes)
        return index


def index_children(index: dict[int, set[Node]], nodes: Iterable[Node]) -> None:
    """Add ``nodes`` to a children index (class -> the e-nodes it is a child of)."""
    for n in nodes:
        for k in n.kids:
            e = index.get(k)
            if e is None:
                index[k] = {n}
            else:
                e.add(n)


class RulesMemo(Generic[_T]):
    """``memo(rules)``: ``build(rules)``, computed once per rule list and shared by every
    run of the process (a pass's rule list is its program's, the same object each
    pass). A list is known by its identity and its rules: an entry holds a copy of
    the list it was built from and answers a list only when the two hold equal rules
    (``==``, in C, each pair by identity first). At most ``size`` lists, the oldest
    dropped first. ``build`` must be a pure function of the rules (what it returns may
    fill memos of its own, shared as well)."""

    __slots__ = ("build", "size", "table", "lock")

    def __init__(self, build: Callable[[list[Any]], _T], size: int = 16):
        self.build = build
        self.size = size
        self.table: dict[int, tuple[list, _T]] = {}
        self.lock = threading.Lock()  # (a miss changes the table; threads' runs share it)

    def __repr__(self) -> str:
        return f"<RulesMemo of {self.build.__name__}: {len(self.table)} rule lists>"

    def __call__(self, rules: list[Any]) -> _T:
        hit = self.table.get(id(rules))
        if hit is not None and hit[0] == rules:
            return hit[1]
        kept = list(rules)
        out = self.build(kept)
        with self.lock:
            table = self.table
            table.pop(id(rules), None)
            while len(table) >= self.size:
                del table[next(iter(table))]
            table[id(rules)] = (kept, out)
        return out
