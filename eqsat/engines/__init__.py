"""The engines, above the rules: each reads the rule families of :mod:`rules`.

- :mod:`.baseline`: the ordered pattern matcher (first match wins, tinygrad/Morok style);
- :mod:`.egraph`: equality saturation in egglog, computed passes between egglog runs,
  and cost-based extraction.
"""
