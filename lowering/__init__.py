"""Lowering UOp graphs to C: index dtype narrowing, late decompositions, the final
rewrite, control flow and linearization, IF/ENDIF, C emission, compile and run.

Main entry points::

    from lowering import compile_kernel, lower, Target
    k = compile_kernel(graph)              # optimize (e-graph), lower, cc, load
    k(out, inp, n=10)                      # numpy arrays in SLOT order, variables by name
    print(k.c_source, k.linear_text)
    lower(graph, emit="linear")            # text, for ``eqsat lower FILE --emit c|linear``

Stages (each usable alone): :func:`narrow_index`, :func:`decompose`,
:func:`expand`, :func:`final_rewrite`, :func:`add_control_flow`, :func:`linearize`,
:func:`add_if_endif`, :func:`render_c`; :func:`lower_graph` runs them all.
"""

from __future__ import annotations

from lowering.cemit import Signature, render_c
from lowering.compile import (
    CompileError,
    Kernel,
    Lowered,
    OutOfBoundsError,
    compile_c,
    compile_kernel,
    compile_kernels,
    default_cache_dir,
    lower,
    lower_graph,
)
from lowering.decompose import DECOMPOSITIONS, Target, decompose
from lowering.expand import expand
from lowering.fastdiv import DivPlan, build_idiv, build_mod, magic, plan_idiv
from lowering.final import final_rewrite, live_ranges, prepare
from lowering.linearize import PRIORITY, add_control_flow, add_if_endif, format_linear, linearize
from lowering.narrow import LoweringError, narrow_index, select_dtype

__all__ = [
    "CompileError", "DECOMPOSITIONS", "DivPlan", "Kernel", "Lowered", "LoweringError",
    "OutOfBoundsError", "PRIORITY", "Signature", "Target", "add_control_flow", "add_if_endif",
    "build_idiv",
    "build_mod", "compile_c", "compile_kernel", "compile_kernels", "decompose", "default_cache_dir",
    "expand",
    "final_rewrite", "format_linear", "linearize", "live_ranges", "lower", "lower_graph", "magic",
    "narrow_index", "plan_idiv", "prepare", "render_c", "select_dtype",
]
