"""The IR layer, at the bottom: everything above it (rules, extraction, the engines,
the API) reads graphs through these modules, and none of them imports anything above.

- :mod:`.dtype`, :mod:`.ops`, :mod:`.uop`: dtypes, op codes, the hash-consed UOp;
- :mod:`.semantics`: what every op computes, on values and on intervals (C division
  and remainder, wraparound, floats), for the interpreter, the bounds, the rules'
  constant folding and the e-graph's bound seeding;
- :mod:`.bounds`: interval analysis of UOps (vmin/vmax);
- :mod:`.sexpr`: the ``.uop`` text format (parse and print);
- :mod:`.egglog_text`: reading egglog text (commands, s-expressions);
- :mod:`.interp`, :mod:`.equiv`, :mod:`.kernel_equiv`: the reference interpreter and
  equivalence checking (of expressions, of kernels);
- :mod:`.linear`: linear forms over opaque atoms (what the div/mod rules compute on);
- :mod:`.pattern`: the pattern language (``UPat``, ``Rule``) and the ordered matcher
  (``PatternMatcher``, ``graph_rewrite``) that the rules are written in and that the
  baseline engine and the lowering run.
"""
