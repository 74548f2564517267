"""What the passes of one run share.

:class:`PassResult` is what one pass did, :class:`PassState` the memory carried from
one pass to the next (the rules themselves are :class:`rules.computed.PyRule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eqsat.engines.egraph.computed.terms import Term
from eqsat.engines.egraph.encoding import Node
from eqsat.ir.linear import Lin

if TYPE_CHECKING:
    from eqsat.engines.egraph.computed.context import Context


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
        self.node_set: set[Node] = set()  # the last pass's e-nodes
        #: the last pass's facts: (lo, hi, defined, the classes)
        self.facts: tuple[dict, dict, set, set] = ({}, {}, set(), set())
        self.kid_index: dict[int, set[Node]] = {}  # class -> the e-nodes it is a child of
        self.prices: dict[Any, float] = {}
        self.node_prices: dict[Node, float] = {}  # the last pass's, by e-node
        self.lins: dict[int, tuple[Node | None, Lin]] = {}  # LinForms.kept() of the last pass
        self.lin_terms: dict[tuple, Term] = {}  # EClassCtx.lin's terms (pure: shared)
        self.term_keys: dict[Term, tuple] = {}  # EClassCtx.sum's sort keys (pure: shared)
        self.ctx_out: dict[int, set[int]] = {}
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
