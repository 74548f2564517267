"""The e-graph's analyses, as egglog rules: value intervals and the tripwire.

``lo``/``hi`` are lattice functions on e-classes: ``lo`` merges with ``max`` and
``hi`` with ``min``, so every rule that proves a bound tightens the class's
interval, and two e-nodes of one class pool what they know. Every rule is sound
under C semantics (``idiv`` truncates, ``mod`` takes the dividend's sign; ``floordiv``
and ``floormod`` floor) and
computes its bound in the rule's query, where an i64 overflow means "no match"
rather than an aborted run. A fixed-width integer result gets a bound only when
the exact interval fits the dtype (no wrap possible); ``index`` is unbounded
(bounds beyond i64 are simply unknown).

A rule whose result must fit ``dt``'s range exists twice: for ``index`` (no range to
fit, no ``dmin``/``dmax`` atoms) in the rule set ``analysis``, and as ``<name>_fixed`` for
the other integer dtypes in ``analysis_fixed``; the engine runs the second only
when an e-node of the run is one a fixed rule can match (``FIXED_ANALYSIS_DTYPES``).

Leaves get their bounds from the IR (``UOp.vmin``/``vmax``) at insertion, and so
does every inserted node (the IR's bounds are sound, the e-graph's rules may
tighten them). Bools are 0/1.

The tripwire: a never-Invalid (``Def``) e-class whose ``lo`` exceeds its ``hi``
can only come from an unsound rewrite (two different values unioned); the rule
panics, which stops the egglog run at once, and the engine raises
:class:`UnsoundError` naming the class and its e-nodes. (A class that is Invalid
everywhere has no value at all: an empty interval is true of it.)

``Def``: the relation of e-classes that are never Invalid (constants, leaves
other than ``(invalid)``, ALU ops of such operands). ``lo``/``hi`` bound a class
where it has a value; a rewrite that drops an operand (``x*0 -> 0``, folding a
class to its constant) must not drop an Invalid, so such rules require ``Def``.
The engine computes ``Def`` on each snapshot in Python
(:func:`eqsat.engines.egraph.encoding.defined_classes`, a least fixed point) and
loads it back for the native rules' guards.
"""

from __future__ import annotations

import re

from eqsat.ir.dtype import dtypes
from rules.lang import DTYPE_SETS

__all__ = ["analysis_program", "analysis_parts", "ANALYSIS_RULES", "ANALYSIS_FIXED_RULES",
           "UnsoundError",
           "CHECK_RULESET", "LATE_RULESET", "FACT_TAGS", "LATE_TAGS", "INT_DTYPES", "FIXED_DTYPES",
           "FIXED_ANALYSIS_DTYPES", "DTYPE_RELATIONS", "dtype_table", "I64_MIN", "I64_MAX"]

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

#: scalar dtypes the interval rules know: name -> (min, max) as i64
INT_DTYPES: dict[str, tuple[int, int]] = {"index": (I64_MIN, I64_MAX), "bool": (0, 1)}
for _d in (dtypes.i8, dtypes.i16, dtypes.i32, dtypes.i64, dtypes.u8, dtypes.u16, dtypes.u32):
    INT_DTYPES[str(_d)] = (int(_d.min), int(_d.max))


TRIPWIRE = "tripwire: an e-class has an empty interval (lo > hi)"

#: the rule set that loads the late bound rows (the insertion rows of :data:`LATE_TAGS`)
LATE_RULESET = "insert_late"

#: the fact relations whose rows load with the e-node rows, as rows of the insertion
#: relation (``RNode``) of these tags (one ``input`` a load, not one a relation: an
#: ``input`` command costs about as much as a run of rules): relation -> tag
FACT_TAGS: dict[str, str] = {"RLo": "#lo", "RHi": "#hi", "RDef": "#def"}
#: the tags of the late bound rows (loaded by :data:`LATE_RULESET`): relation -> tag
LATE_TAGS: dict[str, str] = {"RLo": "#late-lo", "RHi": "#late-hi"}

#: the tripwire's rule set, of ``analysis_program("analysis")``: run after the analysis
CHECK_RULESET = "analysis_check"


class UnsoundError(RuntimeError):
    """An e-class got an empty interval (lo > hi): some rewrite was unsound."""


#: the fixed-width integer dtypes (``FixDt``): every scalar integer dtype but bool and index
FIXED_DTYPES: frozenset[str] = frozenset(n for n in INT_DTYPES if n not in ("bool", "index"))


#: the dtype relations of the e-graph's guards: ``IntDt`` (index and the fixed-width
#: integers), ``IdxDt`` (index), ``FixDt`` (fixed-width integers); :func:`dtype_table`
#: writes them for egglog, the replay reads them (``eqsat/engines/egraph/queries.py``)
DTYPE_RELATIONS: dict[str, frozenset[str]] = {
    "IntDt": frozenset(n for n in INT_DTYPES if n != "bool"),
    "IdxDt": frozenset(("index",)),
    "FixDt": FIXED_DTYPES,
}


def dtype_table() -> str:
    """egglog text: ``dmin``/``dmax`` of every scalar integer dtype, the relations of
    :data:`DTYPE_RELATIONS`, ``DtIn`` (the rule language's named dtype sets)."""
    out = ["(function dmin (String) i64 :no-merge)", "(function dmax (String) i64 :no-merge)"]
    for name, (lo, hi) in INT_DTYPES.items():
        out.append(f'(set (dmin "{name}") {lo})')
        out.append(f'(set (dmax "{name}") {hi})')
    for rel, members in DTYPE_RELATIONS.items():
        out.append(f"(relation {rel} (String))")
        out += [f'({rel} "{name}")' for name in INT_DTYPES if name in members]
    # the named dtype sets of the rule language's guards: (DtIn "float" "f32")
    out.append("(relation DtIn (String String))")
    for set_name, members in DTYPE_SETS.items():
        for name in sorted(members):
            out.append(f'(DtIn "{set_name}" "{name}")')
    return "\n".join(out)


_FIT = "(= m0 (dmin dt)) (= m1 (dmax dt))"
_AB = "(= la (lo a)) (= ha (hi a)) (= lb (lo b)) (= hb (hi b))"


def _set(lo: str, hi: str) -> str:
    return f"(set (lo e) {lo}) (set (hi e) {hi})"


#: where a rule checks that its result fits ``dt``'s range: :func:`_split` makes it two
#: rules, one for ``index`` (no range to fit: any i64 bound holds) and one (``*_fixed``)
#: for the other integer dtypes, which reads ``dt``'s range from ``dmin``/``dmax``
_FITS = re.compile(r"<fits (\S+) (\S+)>")


def _fitted(body: str, lo: str, hi: str) -> str:
    """A rule setting [lo, hi] when it fits dt's range (no wrap)."""
    return f"({body} <fits {lo} {hi}>) ({_set(lo, hi)})"


def _split(rules: list[tuple[str, str, str]]
           ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """The rules with a ``<fits lo hi>`` check (``-``: no lower one) split in two: the
    ``index`` rule keeps the name, the other dtypes' rule is ``<name>_fixed``. The two
    ``dmin``/``dmax`` atoms cost every seminaive round, and the fixed-width rules run
    only when the e-graph may hold such a node (:data:`FIXED_ANALYSIS_DTYPES`)."""
    base, fixed = [], []
    for name, identity, body in rules:
        m = _FITS.search(body)
        if m is None:
            base.append((name, identity, body))
            continue
        lo, hi = m.groups()
        check = f'(!= dt "index") {_FIT}' + (f" (>= {lo} m0)" if lo != "-" else "") + \
            f" (<= {hi} m1)"
        # (index is an IntDt: that guard adds nothing to the index rule)
        base.append((name, f"{identity} (index)",
                     body.replace(m.group(0), '(= dt "index")').replace("(IntDt dt) ", "")))
        fixed.append((f"{name}_fixed", f"{identity} (other integer dtypes: when it fits dt's "
                      "range)", body.replace(m.group(0), check)))
    return base, fixed


def _floor_q(x: str, y: str, out: str) -> str:
    """egglog atoms binding ``out`` to ``floordiv(x, y)`` (``y != 0``; egglog's ``/`` and
    ``%`` truncate): ``(x - fm) / y`` with the floor remainder ``fm = ((x % y) + y) % y``."""
    return (f"(= {out}_r (% {x} {y})) (= {out}_s (+ {out}_r {y})) (= {out}_m (% {out}_s {y})) "
            f"(= {out} (/ (- {x} {out}_m) {y}))")


# (name, identity, egglog rule body "(query) (actions)")
ANALYSIS_RULES: list[tuple[str, str, str]] = [
    ("iv_const", "lo = hi = c for a constant c",
     "((= e (Cst dt v))) ((set (lo e) v) (set (hi e) v))"),
    ("iv_range", "range/special over 0 .. end-1: [0, hi(end)-1]",
     "((= e (G1 op dt a n)) (= op \"RANGE\") (= h (hi n)) (= h1 (- h 1)) (>= h1 0)) "
     "((set (lo e) 0) (set (hi e) h1))"),
    ("iv_special", "special over 0 .. end-1: [0, hi(end)-1]",
     "((= e (G1 op dt a n)) (= op \"SPECIAL\") (= h (hi n)) (= h1 (- h 1)) (>= h1 0)) "
     "((set (lo e) 0) (set (hi e) h1))"),
    ("iv_add", "a+b in [la+lb, ha+hb]",
     _fitted(f"(= e (Add dt a b)) {_AB} (= l (+ la lb)) (= h (+ ha hb))", "l", "h")),
    ("iv_sub", "a-b in [la-hb, ha-lb]",
     _fitted(f"(= e (Sub dt a b)) {_AB} (= l (- la hb)) (= h (- ha lb))", "l", "h")),
    ("iv_neg", "-a in [-ha, -la]",
     _fitted("(= e (Neg dt a)) (IntDt dt) (= la (lo a)) (= ha (hi a)) (= l (- 0 ha)) "
             "(= h (- 0 la))", "l", "h")),
    ("iv_mul", "a*b between the four corner products",
     _fitted(f"(= e (Mul dt a b)) {_AB} (= p1 (* la lb)) (= p2 (* la hb)) (= p3 (* ha lb)) "
             "(= p4 (* ha hb)) (= l (min (min p1 p2) (min p3 p4))) "
             "(= h (max (max p1 p2) (max p3 p4)))", "l", "h")),
    ("iv_mulacc", "a*b+c between the corner products plus c's bounds",
     _fitted("(= e (Mulacc dt a b c)) (= la (lo a)) (= ha (hi a)) (= lb (lo b)) (= hb (hi b)) "
             "(= lc (lo c)) (= hc (hi c)) (= p1 (* la lb)) (= p2 (* la hb)) (= p3 (* ha lb)) "
             "(= p4 (* ha hb)) (= l (+ (min (min p1 p2) (min p3 p4)) lc)) "
             "(= h (+ (max (max p1 p2) (max p3 p4)) hc))", "l", "h")),
    # one rule for both signs of the divisor (a rule per sign searched every Idiv twice)
    ("iv_idiv_nonzero", "a//b, b > 0 or b < 0: between the corner quotients (truncation "
     "is monotone in a, and in b on either side of 0)",
     _fitted(f"(= e (Idiv dt a b)) {_AB} (= true (or (bool-> lb 0) (bool-< hb 0))) "
             "(= p1 (/ la lb)) (= p2 (/ la hb)) (= p3 (/ ha lb)) (= p4 (/ ha hb)) "
             "(= l (min (min p1 p2) (min p3 p4))) (= h (max (max p1 p2) (max p3 p4)))",
             "l", "h")),
    ("iv_idiv_any", "a//b in [-M, M], M = max|a| (|a//b| <= |a|)",
     _fitted("(= e (Idiv dt a b)) (= la (lo a)) (= ha (hi a)) (= aa (abs la)) (= ab (abs ha)) "
             "(= h (max aa ab)) (= l (- 0 h))", "l", "h")),
    ("iv_mod_lo_pos", "a%b >= 0 when a >= 0 (C: the dividend's sign)",
     "((= e (Mod dt a b)) (= la (lo a)) (>= la 0)) ((set (lo e) 0))"),
    ("iv_mod_hi_neg", "a%b <= 0 when a <= 0",
     "((= e (Mod dt a b)) (= ha (hi a)) (<= ha 0)) ((set (hi e) 0))"),
    # both sides in one rule (one rule per side read the divisor's bounds twice): where
    # la >= 0 its lo is iv_mod_lo_pos's 0, where ha <= 0 its hi is iv_mod_hi_neg's 0
    ("iv_mod_range", "a%b in [min(0, max(la, 1-M)), max(0, min(ha, M-1))], M = max|b|",
     f"((= e (Mod dt a b)) {_AB} (= m (max (abs lb) (abs hb))) (> m 0) "
     "(= l (min 0 (max la (- 1 m)))) (= h (max 0 (min ha (- m 1))))) "
     f"({_set('l', 'h')})"),
    ("iv_mod_bucket", "a%c in [la%c, ha%c] when a stays in one bucket of one sign",
     "((= e (Mod dt a b)) (= la (lo a)) (= ha (hi a)) (= c (lo b)) (= c (hi b)) (!= c 0) "
     "(= ac (abs c)) (= q (/ la ac)) (= q (/ ha ac)) (= sl (* la ha)) (>= sl 0) "
     "(= l (% la ac)) (= h (% ha ac))) ((set (lo e) l) (set (hi e) h))"),
    # floor division: the quotient rounded toward -inf, the remainder with the divisor's
    # sign; egglog's / and % truncate, so floor(x/y) is (x - fm)/y with fm = ((x%y)+y)%y
    ("iv_floordiv_nonzero", "floordiv(a,b), b > 0 or b < 0: between the corner floor "
     "quotients (monotone in a, and in b on either side of 0)",
     _fitted(f"(= e (Floordiv dt a b)) {_AB} (= true (or (bool-> lb 0) (bool-< hb 0))) "
             f"{_floor_q('la', 'lb', 'p1')} {_floor_q('la', 'hb', 'p2')} "
             f"{_floor_q('ha', 'lb', 'p3')} {_floor_q('ha', 'hb', 'p4')} "
             "(= l (min (min p1 p2) (min p3 p4))) (= h (max (max p1 p2) (max p3 p4)))",
             "l", "h")),
    ("iv_floordiv_any", "floordiv(a,b) in [-M, M], M = max|a| (-|a| is an integer <= a/b)",
     _fitted("(= e (Floordiv dt a b)) (= la (lo a)) (= ha (hi a)) (= aa (abs la)) "
             "(= ab (abs ha)) (= h (max aa ab)) (= l (- 0 h))", "l", "h")),
    ("iv_floormod_pos", "floormod(a,b) in [0, hb-1] when b > 0 (the divisor's sign)",
     "((= e (Floormod dt a b)) (= lb (lo b)) (= hb (hi b)) (> lb 0) (= h (- hb 1))) "
     f"({_set('0', 'h')})"),
    ("iv_floormod_pos_small", "floormod(a,b) <= a when a >= 0 and b > 0",
     "((= e (Floormod dt a b)) (= la (lo a)) (= ha (hi a)) (>= la 0) (> (lo b) 0)) "
     "((set (hi e) ha))"),
    ("iv_floormod_neg", "floormod(a,b) in [lb+1, 0] when b < 0",
     "((= e (Floormod dt a b)) (= lb (lo b)) (= hb (hi b)) (< hb 0) (= l (+ lb 1))) "
     f"({_set('l', '0')})"),
    ("iv_floormod_neg_small", "floormod(a,b) >= a when a <= 0 and b < 0",
     "((= e (Floormod dt a b)) (= la (lo a)) (= ha (hi a)) (<= ha 0) (< (hi b) 0)) "
     "((set (lo e) la))"),
    ("iv_floormod_bucket", "floormod(a,c) in [floormod(la,c), floormod(ha,c)] when a "
     "stays in one bucket",
     "((= e (Floormod dt a b)) (= la (lo a)) (= ha (hi a)) (= c (lo b)) (= c (hi b)) "
     f"(!= c 0) {_floor_q('la', 'c', 'q')} {_floor_q('ha', 'c', 'q2')} (= q q2) "
     "(= l (- la (* q c))) (= h (- ha (* q c)))) ((set (lo e) l) (set (hi e) h))"),
    ("iv_max", "max(a,b) in [max(la,lb), max(ha,hb)]",
     f"((= e (Max dt a b)) {_AB} (= l (max la lb)) (= h (max ha hb))) ({_set('l', 'h')})"),
    ("iv_min", "min(a,b) in [min(la,lb), min(ha,hb)]",
     f"((= e (Min dt a b)) {_AB} (= l (min la lb)) (= h (min ha hb))) ({_set('l', 'h')})"),
    ("iv_not_bool", "!a in [1-ha, 1-la] (bool)",
     "((= e (Not dt a)) (= dt \"bool\") (= la (lo a)) (= ha (hi a)) (= l (- 1 ha)) "
     "(= h (- 1 la))) ((set (lo e) l) (set (hi e) h))"),
    ("iv_not_int", "~a in [-ha-1, -la-1] (integers)",
     _fitted("(= e (Not dt a)) (IntDt dt) (= la (lo a)) (= ha (hi a)) (= l (- -1 ha)) "
             "(= h (- -1 la))", "l", "h")),
    ("iv_and_bool", "a&b in [min(la,lb), min(ha,hb)] (bool)",
     f"((= e (And dt a b)) (= dt \"bool\") {_AB} (= l (min la lb)) (= h (min ha hb))) "
     f"({_set('l', 'h')})"),
    ("iv_or_bool", "a|b in [max(la,lb), max(ha,hb)] (bool)",
     f"((= e (Or dt a b)) (= dt \"bool\") {_AB} (= l (max la lb)) (= h (max ha hb))) "
     f"({_set('l', 'h')})"),
    ("iv_xor_bool", "a^b in [0, 1] (bool)",
     "((= e (Xor dt a b)) (= dt \"bool\")) ((set (lo e) 0) (set (hi e) 1))"),
    ("iv_and_nonneg", "a&b in [0, min(ha,hb)] when a, b >= 0 (integers)",
     f"((= e (And dt a b)) (IntDt dt) {_AB} (>= la 0) (>= lb 0) (= h (min ha hb))) "
     "((set (lo e) 0) (set (hi e) h))"),
    ("iv_and_nonneg1", "a&b in [0, ha] when a >= 0 (integers)",
     "((= e (And dt a b)) (IntDt dt) (= la (lo a)) (= ha (hi a)) (>= la 0)) "
     "((set (lo e) 0) (set (hi e) ha))"),
    ("iv_or_nonneg", "a|b in [max(la,lb), 2^k-1] when a, b >= 0, k = bits of max(ha,hb)",
     f"((= e (Or dt a b)) (IntDt dt) {_AB} (>= la 0) (>= lb 0) (= m (max ha hb)) (> m 0) "
     "(= k (+ (log2 m) 1)) (< k 63) (= h (- (<< 1 k) 1)) (= l (max la lb)) "
     f"<fits - h>) ({_set('l', 'h')})"),
    ("iv_xor_nonneg", "a^b in [0, 2^k-1] when a, b >= 0, k = bits of max(ha,hb)",
     f"((= e (Xor dt a b)) (IntDt dt) {_AB} (>= la 0) (>= lb 0) (= m (max ha hb)) (> m 0) "
     "(= k (+ (log2 m) 1)) (< k 63) (= h (- (<< 1 k) 1)) <fits - h>) "
     "((set (lo e) 0) (set (hi e) h))"),
    ("iv_shl_const", "a<<s in [la*2^s, ha*2^s] for a constant 0 <= s < 63",
     _fitted("(= e (Shl dt a b)) (IntDt dt) (= la (lo a)) (= ha (hi a)) (= s (lo b)) "
             "(= s (hi b)) (>= s 0) (< s 63) (= p (<< 1 s)) (= l (* la p)) (= h (* ha p))",
             "l", "h")),
    ("iv_shr_const", "a>>s in [la>>s, ha>>s] for a constant 0 <= s < 63",
     "((= e (Shr dt a b)) (IntDt dt) (= la (lo a)) (= ha (hi a)) (= s (lo b)) (= s (hi b)) "
     "(>= s 0) (< s 63) (= l (>> la s)) (= h (>> ha s))) ((set (lo e) l) (set (hi e) h))"),
    ("iv_cast_int", "cast(a) in [la, ha] when that fits the target (no wrap)",
     _fitted("(= e (Cast dt a)) (IntDt dt) (= la (lo a)) (= ha (hi a))", "la", "ha")),
    ("iv_cast_bool_true", "cast(a, bool) is true when 0 is outside [la, ha]",
     "((= e (Cast dt a)) (= dt \"bool\") (= la (lo a)) (= ha (hi a)) (= p (* la ha)) (> p 0))"
     " ((set (lo e) 1) (set (hi e) 1))"),
    ("iv_cast_bool_false", "cast(a, bool) is false when a is always 0",
     "((= e (Cast dt a)) (= dt \"bool\") (= (lo a) 0) (= (hi a) 0))"
     " ((set (lo e) 0) (set (hi e) 0))"),
    ("iv_cast_bool", "cast(a, bool) in [0, 1]",
     "((= e (Cast dt a)) (= dt \"bool\")) ((set (lo e) 0) (set (hi e) 1))"),
    ("iv_where", "where(c,t,f) in [min(lt,lf), max(ht,hf)]",
     "((= e (Where dt c t f)) (= lt (lo t)) (= ht (hi t)) (= lf (lo f)) (= hf (hi f)) "
     "(= l (min lt lf)) (= h (max ht hf))) ((set (lo e) l) (set (hi e) h))"),
    ("iv_where_true", "where(c,t,f) in [lt, ht] when c is always true",
     "((= e (Where dt c t f)) (= (lo c) 1) (= lt (lo t)) (= ht (hi t))) "
     "((set (lo e) lt) (set (hi e) ht))"),
    ("iv_where_false", "where(c,t,f) in [lf, hf] when c is always false",
     "((= e (Where dt c t f)) (= (hi c) 0) (= lf (lo f)) (= hf (hi f))) "
     "((set (lo e) lf) (set (hi e) hf))"),
]

# comparisons: (ctor, always-true condition, always-false condition)
_CMP = {
    "Lt": ("(< ha lb)", "(>= la hb)"),
    "Le": ("(<= ha lb)", "(> la hb)"),
    "Gt": ("(> la hb)", "(<= ha lb)"),
    "Ge": ("(>= la hb)", "(< ha lb)"),
    "Eq": ("(= la ha) (= lb hb) (= la lb)", None),
    "Ne": (None, "(= la ha) (= lb hb) (= la lb)"),
}
_BOUND_OF = {"la": "(= la (lo a))", "ha": "(= ha (hi a))", "lb": "(= lb (lo b))",
             "hb": "(= hb (hi b))"}


def _reads(cond: str) -> str:
    """The bound atoms ``cond`` reads, and only those: an atom it does not read would
    cost a join in every round and a clone on every push, and keep the rule from
    firing when that bound is unknown."""
    return " ".join(atom for v, atom in _BOUND_OF.items() if re.search(rf"\b{v}\b", cond))


for _c, (_t, _f) in _CMP.items():
    ANALYSIS_RULES.append((f"iv_{_c.lower()}", f"{_c.lower()}(a,b) in [0, 1]",
                           f"((= e ({_c} dt a b))) ((set (lo e) 0) (set (hi e) 1))"))
    if _t:
        ANALYSIS_RULES.append((f"iv_{_c.lower()}_true", f"{_c.lower()}(a,b) is true by bounds",
                               f"((= e ({_c} dt a b)) {_reads(_t)} {_t}) "
                               "((set (lo e) 1) (set (hi e) 1))"))
    if _f:
        ANALYSIS_RULES.append((f"iv_{_c.lower()}_false", f"{_c.lower()}(a,b) is false by bounds",
                               f"((= e ({_c} dt a b)) {_reads(_f)} {_f}) "
                               "((set (lo e) 0) (set (hi e) 0))"))
for _c in ("Eq", "Ne"):
    _v = "0" if _c == "Eq" else "1"
    for _x, _y in (("ha", "lb"), ("hb", "la")):
        ANALYSIS_RULES.append((f"iv_{_c.lower()}_apart_{_x}",
                               f"{_c.lower()}(a,b) is {'false' if _c == 'Eq' else 'true'} "
                               "when the ranges are disjoint",
                               f"((= e ({_c} dt a b)) {_reads(_x + ' ' + _y)} (< {_x} {_y})) "
                               f"((set (lo e) {_v}) (set (hi e) {_v}))"))


ANALYSIS_RULES, ANALYSIS_FIXED_RULES = _split(ANALYSIS_RULES)


_RULE_CTOR = re.compile(r"\(\(= e \((\w+) ")


def rule_ctor(body: str) -> str:
    """The constructor an interval rule's body is about (its first atom ``(= e (C ...))``)."""
    m = _RULE_CTOR.match(body)
    if m is None:
        raise ValueError(f"interval rule without a first atom (= e (Ctor ...)): {body[:60]}")
    return m.group(1)


#: the index interval rules' constructors
ANALYSIS_CTORS: frozenset[str] = frozenset(rule_ctor(b) for _n, _i, b in ANALYSIS_RULES)


def _fixed_dtypes() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for _name, _identity, body in ANALYSIS_FIXED_RULES:
        ctor = rule_ctor(body)
        dts = FIXED_DTYPES if "(IntDt dt)" in body else FIXED_DTYPES | {"bool"}
        out[ctor] = out.get(ctor, frozenset()) | dts
    return out


#: constructor -> the dtypes its ``*_fixed`` interval rules match (not ``index``; bool
#: where no ``IntDt`` guard excludes it). A run whose e-graph gets no such e-node skips
#: those rules (rewrites keep their operands' dtypes: only an inserted node brings one)
FIXED_ANALYSIS_DTYPES: dict[str, frozenset[str]] = _fixed_dtypes()


def analysis_parts(ruleset: str = "analysis", fixed: bool = True,
                   ext: frozenset[str] | set[str] = frozenset(),
                   only: frozenset[str] | None = None
                   ) -> dict[str, list[tuple[str, str, list[str]]]]:
    """The rule sets :func:`analysis_program` puts the interval rules in, one per
    constructor and kind: kind (``"core"``, ``"ext"``, ``"fixed"``) -> ``(rule set,
    constructor, its rules' names)``, in the rules' order. An interval rule matches
    only e-nodes of its constructor (:func:`rule_ctor`): a round need not run those
    of a constructor the e-graph has no e-node of."""
    out: dict[str, list[tuple[str, str, list[str]]]] = {"core": [], "ext": [], "fixed": []}
    index: dict[tuple[str, str], list[str]] = {}
    for kind, rules in (("index", ANALYSIS_RULES),
                        ("fixed", ANALYSIS_FIXED_RULES if fixed else [])):
        for name, _identity, body in rules:
            ctor = rule_ctor(body)
            if only is not None and ctor not in only:
                continue
            k = kind if kind == "fixed" else "ext" if ctor in ext else "core"
            names = index.get((k, ctor))
            if names is None:
                names = index[k, ctor] = []
                out[k].append((f"{ruleset}_{k}_{ctor}", ctor, names))
            names.append(name)
    return out


def analysis_program(ruleset: str = "analysis", fixed: bool = True,
                     ext: frozenset[str] | set[str] = frozenset(),
                     only: frozenset[str] | None = None) -> str:
    """egglog text declaring ``lo``/``hi``, the tripwire and every analysis rule (the
    fixed-width ones, ``<ruleset>_fixed``, only with ``fixed``: without, that rule set
    is declared empty).

    The index rules of the constructors in ``ext`` go to ``<ruleset>_ext``, the others to
    ``<ruleset>_core``; ``<ruleset>`` runs both (a step runs the per-constructor rule
    sets of :func:`analysis_parts` instead). A run whose e-graph
    holds none of ``ext``'s constructors runs the core only: every round of a rule set
    builds and searches all its rules, matching or not. ``only``: the interval rules
    of these constructors alone (None: every one), for an e-graph that never holds
    the others."""
    out = [dtype_table(),
           "(function lo (E) i64 :merge (max old new))",
           "(function hi (E) i64 :merge (min old new))",
           "(relation Def (E))",
           # the late bounds (Inserter.late_bound) load by these two rules alone (every
           # run of a rule set builds all its rules anew, and the insert rule set has
           # one per constructor)
           f"(ruleset {LATE_RULESET})",
           *[f'(rule ((RNode k "{tags[rel]}" s1 s2 v e1 e2 e3 e4)) '
             f'((set ({fn} (H k)) v) (delete (RNode k "{tags[rel]}" s1 s2 v e1 e2 e3 e4))) '
             f':ruleset {rs} :name "{name}-{fn}")'
             for rs, name, tags in (("insert", "insert", FACT_TAGS),
                                    (LATE_RULESET, "insert-late", LATE_TAGS))
             for rel, fn in (("RLo", "lo"), ("RHi", "hi"))],
           # only never-Invalid classes: a class that is Invalid everywhere has no value,
           # and any interval of it (an empty one too) is vacuously true. Its own rule set,
           # run once after the analysis's rounds (``<ruleset>_check``): an interval only
           # narrows, so an empty one is still empty then, and a rule of the analysis
           # would be joined in every round
           f"(ruleset {ruleset}_check)",
           f'(rule ((= l (lo e)) (= h (hi e)) (> l h) (Def e)) ((panic "{TRIPWIRE}")) '
           f':ruleset {ruleset}_check :name "tripwire")']
    row = f'RNode k "{FACT_TAGS["RDef"]}" s1 s2 v e1 e2 e3 e4'
    out.append(f'(rule (({row})) ((Def (H k)) (delete ({row}))) :ruleset insert '
               ':name "insert-def")')
    parts = analysis_parts(ruleset, fixed, ext, only)
    bodies = {name: body for name, _i, body in ANALYSIS_RULES + ANALYSIS_FIXED_RULES}
    # each constructor's rules in a rule set of their own (a step runs those of the
    # constructors the e-graph holds); ``<ruleset>_core``, ``_ext`` and ``_fixed`` combine
    # them (with an empty one: a combination may have no part)
    out.append(f"(ruleset {ruleset}_none)")
    for kind in ("core", "ext", "fixed"):
        for leaf, _ctor, names in parts[kind]:
            out.append(f"(ruleset {leaf})")
            out += [f'(rule {bodies[n]} :ruleset {leaf} :name "{n}")' for n in names]
        leaves = " ".join(leaf for leaf, _c, _n in parts[kind])
        out.append(f"(unstable-combined-ruleset {ruleset}_{kind} {ruleset}_none {leaves})")
    out.append(f"(unstable-combined-ruleset {ruleset} {ruleset}_core {ruleset}_ext)")
    return "\n".join(out)
