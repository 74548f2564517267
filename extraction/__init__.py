"""Cost models and extractors for the e-graph optimizer.

Cost models (:mod:`extraction.cost`): :class:`CostModel` protocol,
:class:`CpuCost` (default, approximate x86-64 cycles), :class:`ReferenceCost`
(the corpus metric), :func:`get_cost_model`, :func:`reference_cost`,
:func:`divmod_count`.

Extraction (:mod:`extraction.egraph_view`, :mod:`extraction.extract`): an
:class:`EGraphView` of e-classes and e-nodes (from egglog's serialized JSON with
a decoder, from UOps with unions, or hand-built), :func:`extract_tree` (tree
cost, egglog's notion) and :func:`extract_dag` (DAG cost: shared subterms paid
once), both returning an :class:`Extraction` whose ``build``/``to_uops``
rebuild the chosen terms.
"""

from extraction.cost import (
    COST_MODELS,
    CostModel,
    CpuCost,
    ReferenceCost,
    cost_by_op,
    divmod_count,
    get_cost_model,
    reference_cost,
    uop_child_consts,
)
from extraction.egraph_view import ClassId, Decoded, EGraphView, ENode, SerializedNode
from extraction.extract import (
    Extraction,
    ExtractionError,
    TreeChoice,
    build_terms,
    dag_cost,
    extract_dag,
    extract_tree,
    extract_tree_each,
    sharing_impossible,
    tree_cost,
    uop_builder,
)

__all__ = [
    "COST_MODELS", "ClassId", "CostModel", "CpuCost", "Decoded", "EGraphView", "ENode",
    "Extraction", "ExtractionError", "ReferenceCost", "SerializedNode", "TreeChoice", "build_terms",
    "cost_by_op", "dag_cost", "divmod_count", "extract_dag", "extract_tree", "extract_tree_each",
    "get_cost_model",
    "reference_cost", "sharing_impossible", "tree_cost", "uop_builder", "uop_child_consts",
]
