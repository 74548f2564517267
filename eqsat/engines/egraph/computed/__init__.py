"""Rewrites with computed right-hand sides, applied between egglog runs.

egglog's own rules are weak at whole-sum arithmetic (no gcd, no usable filter
over a multiset), so the div/mod family, sum canonicalization and sum
recombination read the e-graph (a :class:`~eqsat.engines.egraph.encoding.Snapshot`),
compute each right-hand side in Python and union it into the e-class it
rewrites. Every applicable rule's result is kept (no order, no first match);
the interval analysis in the e-graph guards them and the extractor chooses.

- :class:`EClassCtx` is the div/mod core's ``Ctx`` over the e-graph: atoms are
  e-classes (handles), bounds come from the egglog ``lo``/``hi`` analysis,
  ``mod_parts``/``idiv_parts``/``mul_parts`` list every such e-node of a class,
  and the builders make *pending terms* (tuples), inserted only when a rule
  returns them.
- :class:`LinForms` reads an index e-class as a linear form
  ``sum(coef*atom) + const`` through the cheapest term of each class (a
  bottom-up tree extraction priced by the run's cost model), so every class has
  one well-founded form (no cycles through unions such as ``x == x + 0``).
- :func:`python_pass` applies the selected computed rules to a snapshot, only to
  the classes that changed since the last pass (or whose cheapest term did):
  known constants (``fold``), canonical sums and conjunctions, linear
  comparisons, the basis search over division identities
  (:class:`_BasisSearch`), the one-step lifting of Invalid guards
  (:func:`lift_pass`), guarded copies for ``where(c, x, Invalid)``
  (:func:`context_pass`), the rules written in Python matched against the e-nodes
  (:func:`ematch_pass`) and every div/mod core rule.

Safety of the unions: a rule never drops an atom that may be Invalid (``Def``),
never unions a class with a term whose cheapest form contains the class (a
cycle that only feeds rules new constants), and no class takes more than
``MAX_UNIONS_PER_CLASS`` computed unions in one run.

The package, one module per concern (each imports only the ones above it):

- :mod:`.pricing`: :class:`Weights`, :func:`node_weight`, :func:`best_nodes`;
- :mod:`.terms`: pending terms (:data:`Term`, :func:`emit`);
- :mod:`.linear`: :class:`LinForms`, :class:`EClassCtx`, :func:`conjuncts`;
- :mod:`.state`: :class:`PassResult`, :class:`PassState`, :class:`RulesMemo` (what is
  read once per rule list);
- :mod:`.context`: guarded subterms (:class:`Context`, :func:`context_pass`);
- :mod:`.compare`: comparisons of linear forms (:func:`cmp_rewrites`, :func:`cmp_pass`);
- :mod:`.lift`: the basis search (:class:`_BasisSearch`) and :func:`lift_pass`;
- :mod:`.ematch`: the rules written in Python, e-matched (:func:`ematch_pass`; declared
  by :func:`rules.computed.ematched`);
- :mod:`.divmod`: the div/mod core's rules (:class:`rules.computed.PyRule` objects) applied;
- :mod:`.seed`: the bounds of the e-nodes a pass records (:class:`BoundSeeder`), sent
  with them so the analysis needs fewer rounds;
- :mod:`.passes`: :func:`python_pass`, the pass that runs them all.
"""

from eqsat.engines.egraph.computed.compare import cmp_pass, cmp_rewrites
from eqsat.engines.egraph.computed.context import (
    CONTEXT_ALTERNATIVES,
    Context,
    best_closure,
    best_term_reaches,
    clause_bounds,
    context_pass,
    expr_bounds,
)
from eqsat.engines.egraph.computed.divmod import divmod_rewrites, divmod_rules_by_op
from eqsat.engines.egraph.computed.ematch import admits, ematch_pass, source_places
from eqsat.engines.egraph.computed.lift import first_by_cost, lift_pass
from eqsat.engines.egraph.computed.linear import EClassCtx, LinForms, conjuncts
from eqsat.engines.egraph.computed.passes import MAX_UNIONS_PER_CLASS, fold_pass, python_pass
from eqsat.engines.egraph.computed.pricing import NODE_WEIGHT, Weights, best_nodes, node_weight
from eqsat.engines.egraph.computed.state import PassResult, PassState, RulesMemo
from eqsat.engines.egraph.computed.terms import Term, emit

__all__ = ["Term", "emit", "EClassCtx", "LinForms", "best_nodes", "python_pass",
           "PassResult", "NODE_WEIGHT",
           # also re-exported (imported from here by other modules)
           "PassState", "Weights", "node_weight", "conjuncts", "fold_pass", "Context",
           "clause_bounds", "expr_bounds", "context_pass", "cmp_rewrites", "cmp_pass",
           "lift_pass", "ematch_pass", "divmod_rules_by_op", "divmod_rewrites",
           "MAX_UNIONS_PER_CLASS", "CONTEXT_ALTERNATIVES",
           # the fast paths' building blocks, tested against their plain versions
           "best_closure", "best_term_reaches", "first_by_cost", "source_places", "admits",
           "RulesMemo"]
