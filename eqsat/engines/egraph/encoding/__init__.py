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
hundreds of rows: every constructor shares the one relation); a load runs the
insertion rules of the constructors its rows name only. The facts are rows of
the same relation too (``analyses.FACT_TAGS``): ``"#lo"``/``"#hi"`` set interval
facts, ``"#def"`` marks never-Invalid classes (the bounds a computed pass seeds load
after a step's native rules, as rows of tags of their own: ``analyses.LATE_TAGS``).

A :class:`Snapshot` reads the whole e-graph back (``EGraph.freeze()``): every
e-node with its class (named by the smallest handle in it), dtype, arg and
children, and the ``lo``/``hi`` analysis. Classes that egglog's own rewrites
created get fresh handles there (deterministically, bottom-up). A row equal to
the last snapshot's row at the same place keeps that snapshot's result (its Node)
unless a class it names changed its handle: most of the e-graph is unchanged from
one iteration to the next, and converting a row costs several times comparing it.

The package, one module per concern: :mod:`.schema` (constructors, declarations, the
arg table), :mod:`.inserter` (:class:`Inserter`), :mod:`.snapshot` (:class:`Snapshot`,
:class:`Node`, :func:`decode_node`).
"""

from eqsat.engines.egraph.encoding.inserter import Inserter, write_file
from eqsat.engines.egraph.encoding.schema import (
    ALU_CTOR,
    CTOR_OP,
    CTORS,
    CTXVAR,
    I64_MAX,
    I64_MIN,
    NODE_REL,
    SUB_REL,
    SUBSUMABLE,
    ArgTable,
    declarations,
    dt_name,
    dtype_of,
    fits_i64,
    load_part,
    subsumed_deletions,
    uop_ctor,
)
from eqsat.engines.egraph.encoding.snapshot import (
    E_POS,
    Node,
    Snapshot,
    align_rows,
    decode_node,
    defined_classes,
)

__all__ = [
    "CTXVAR", "CTORS", "ALU_CTOR", "CTOR_OP", "NODE_REL", "Node",
    "ArgTable", "Inserter", "Snapshot", "declarations", "I64_MIN", "I64_MAX", "dtype_of",
    "fits_i64", "uop_ctor", "dt_name", "E_POS", "write_file", "align_rows",
    "defined_classes", "decode_node", "subsumed_deletions", "SUBSUMABLE", "SUB_REL",
    "load_part"]
