"""Machine-checked proofs of the rules (``eqsat rules --prove``), with z3.

:mod:`.semantics` gives the IR's ops as z3 terms; :mod:`.laws` derives the obligation of
a rule of the language from its definition; :mod:`.registry` finds every rule of an
engine and the obligation of each, and :func:`prove` checks them.
"""
