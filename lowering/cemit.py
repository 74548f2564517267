"""C emission: one C function per kernel, from the linear instruction list.

Signature of a kernel: the buffers in SLOT order as ``restrict`` pointers to
the element C type (``const`` when never stored to), then the variables in
name order as ``int64_t`` (``var_<name>``)::

    void kernel(float* restrict data0, const float* restrict data1, int64_t var_n)

An *expression kernel* (a bare value root) returns the value instead, and
takes a ``bool* valid`` last when the value may be ``Invalid``.

Every value is a scalar (vectors were unrolled by the final rewrite). Values
used once, at the loop depth they are computed at, are inlined into their
user; the rest become ``const`` locals. With ``Target.vectorize`` the emitter
groups them again where the C compiler would not: four f32 loads of one loop
body from ``A+c .. A+c+3`` of a buffer the kernel never writes become one
16-byte load into a GCC vector (``eqsat_f32x4``; four gated loads too when
they share one gate and one alternative value: the vector is loaded when the
gate holds, else every lane is the alternative, as for a padded transpose's
rows), four stores in a row to consecutive addresses one 16-byte store of a
vector built by
``EQSAT_SHUFFLE`` (GCC's ``__builtin_shuffle``, clang's ``__builtin_shufflevector``;
a register-tile transpose: 4 loads, 8 shuffles, 4
stores), non-temporal (``movntps`` where aligned) into outputs of at least
``Target.stream_min_bytes``. With ``Target.aligned``, a kernel with a vector access
whose element offset is a multiple of 4 for every value of the loop indices
(:func:`lowering.align.is_multiple`) gets a second, ``static`` copy of its function,
``<name>_aligned``, in which those accesses are 16-byte aligned
(``__builtin_assume_aligned``); the function runs that copy when the buffers they
address start at multiples of 16 (``Signature.aligned``), its own unaligned code
otherwise, so a misaligned array gives the same result. Integer division by a non-constant
divisor goes through a small helper that gives 0 for a zero divisor and wraps
``MIN / -1`` (both undefined in the IR) instead of trapping. Unsupported ops
raise :class:`~lowering.narrow.LoweringError` naming the op.

An access whose address is computed from a loaded value (a gather or a scatter:
``data1[val0]``), or a gated access that ``lowering.narrow.check_bounds`` does not prove
inside where its gate holds, and whose bounds do not prove it inside its buffer is checked
where it runs (:func:`bounds_check`): the function then takes an ``int64_t* restrict
eqsat_oob`` last, and an index outside the buffer (where the gate, if any, holds) stores the
check's number (1-based, ``Signature.checks``) and the index there and returns at once,
before the access. Every other access is proven inside (``check_bounds`` refuses an
ungated one that is not) and costs nothing.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.sexpr import to_sexpr
from eqsat.ir.uop import UOp, range_id
from lowering.align import is_multiple
from lowering.narrow import LoweringError

__all__ = ["Signature", "render_c", "ctype", "c_literal", "bounds_check"]

_CTYPES = {
    "bool": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "f16": "_Float16", "f32": "float", "f64": "double", "void": "void",
}


def ctype(dt: DType) -> str:
    """The C type of a scalar dtype (``f32`` -> ``float``; pointers end in ``*``)."""
    if dt.count > 1 and not dt.ptr:
        raise LoweringError(f"no C scalar type for vector dtype {dt}")
    name = dt.name
    if name not in _CTYPES:
        raise LoweringError(f"dtype {dt} has no C type in this emitter (index must be narrowed "
                            "first; bf16 is not supported)")
    return _CTYPES[name] + ("*" if dt.ptr else "")


def c_literal(v: object, dt: DType) -> str:
    """A C literal of exactly the value ``v`` of scalar dtype ``dt``."""
    s = dt.scalar()
    if s.is_bool:
        return "1" if v else "0"
    if s.is_float:
        f = float(v)  # type: ignore[arg-type]
        suffix = "f" if s.name in ("f32", "f16") else ""
        if math.isnan(f):
            lit = f"__builtin_nan{suffix}(\"\")"
        elif math.isinf(f):
            lit = f"{'-' if f < 0 else ''}__builtin_inf{suffix}()"
        else:
            lit = repr(f) + suffix
        if s.name == "f16":
            return f"((_Float16){lit})"
        return f"({lit})" if lit.startswith("-") else lit
    i = int(v)  # type: ignore[call-overload]
    if s.name == "i64":
        return "(-9223372036854775807LL-1)" if i == -(1 << 63) else (
            f"({i}LL)" if i < 0 else f"{i}LL")
    if s.name == "u64":
        return f"{i}ULL"
    if s.name == "u32":
        return f"{i}U"
    if s.name == "i32":
        return "(-2147483647-1)" if i == -(1 << 31) else (f"({i})" if i < 0 else str(i))
    return f"(({ctype(s)}){i})"


@dataclass
class Signature:
    """What the emitted function takes and returns."""

    name: str
    buffers: list[tuple[int, DType, int]] = field(default_factory=list)  # (slot, elem, size)
    written: set[int] = field(default_factory=set)  # slots stored to
    variables: list[tuple[str, int, int]] = field(default_factory=list)  # (name, lo, hi)
    returns: DType | None = None  # expression kernels: the value's dtype
    has_valid: bool = False  # expression kernels: a bool* valid out-parameter
    # slots whose vector accesses the aligned copy makes aligned: the function runs that
    # copy when these buffers' addresses are multiples of 16 (Target.aligned)
    aligned: tuple[int, ...] = ()
    # the source's lines before the function (includes, helpers), joined by newlines:
    # kernels compiled into one library keep one copy of each (compile_kernels)
    preamble: list[str] = field(default_factory=list)
    # the run-time bounds checks, check k at [k - 1]: (access, slot, element dtype, size,
    # the index as text); any makes the function take ``int64_t* eqsat_oob`` last
    checks: list[tuple[str, int, DType, int, str]] = field(default_factory=list)

    @property
    def c_names(self) -> list[str]:
        return [f"data{s}" for s, _, _ in self.buffers] + [_var_cname(n) for n, _, _ in
                                                            self.variables]


def _var_cname(name: str) -> str:
    return "var_" + re.sub(r"\W", "_", name)


_BINARY = {
    Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.FDIV: "/", Ops.AND: "&", Ops.OR: "|",
    Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>", Ops.LT: "<", Ops.LE: "<=", Ops.GT: ">",
    Ops.GE: ">=", Ops.EQ: "==", Ops.NE: "!=",
}
_NARROW = ("i8", "i16", "u8", "u16", "f16")
_NO_RECAST = GroupOp.Comparison | {Ops.WHERE, Ops.CAST, Ops.BITCAST, Ops.MAX, Ops.MIN}
_BOOL_OPS = {Ops.ADD: "|", Ops.MUL: "&", Ops.MAX: "|", Ops.MIN: "&"}
_MATH = {Ops.SQRT: "sqrt", Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.SIN: "sin",
         Ops.TRUNC: "trunc", Ops.FLOOR: "floor", Ops.CEIL: "ceil", Ops.ROUND: "rint"}


def _math_fn(name: str, dt: DType) -> str:
    if dt.name == "f64":
        return name
    if dt.name in ("f32", "f16"):
        return name + "f"
    raise LoweringError(f"{name} on {dt}: only floats are supported")


def _div_helper(dt: DType, mod: bool) -> tuple[str, str]:
    t = ctype(dt)
    fn = f"eqsat_{'mod' if mod else 'idiv'}_{dt.name}"
    op = "%" if mod else "/"
    if dt.is_unsigned:
        body = f"return b == 0 ? 0 : ({t})(a {op} b);"
    else:
        u = "u" + t if not t.startswith("u") else t
        minus = "0" if mod else f"({t})(({u})0 - ({u})a)"
        body = f"return b == 0 ? 0 : b == -1 ? {minus} : ({t})(a {op} b);"
    return fn, f"static inline {t} {fn}({t} a, {t} b) {{ {body} }}"


def _minmax_helper(dt: DType, is_max: bool) -> tuple[str, str]:
    """A float max or min that propagates NaN (numpy's ``maximum``/``minimum``): ``a``
    where ``a`` is NaN or the larger (smaller), else ``b``. Written as two nested
    selects, the inner one a plain max (min), GCC and clang compile it without a branch
    (a ``maxss`` and a blend on x86) and vectorize a loop of them; ``(a != a || a > b)
    ? a : b`` compiles to branches in GCC 12."""
    t = ctype(dt)
    fn = f"eqsat_{'max' if is_max else 'min'}_{dt.name}"
    cmp = ">" if is_max else "<"
    return fn, (f"static inline {t} {fn}({t} a, {t} b) {{ return (a != a) ? a : "
                f"((a {cmp} b) ? a : b); }}")


def _positive_zero(u: UOp) -> bool:
    return u.op is Ops.CONST and u.arg == 0 and math.copysign(1.0, u.arg) > 0


def _zero_minus_helper(dt: DType) -> tuple[str, str]:
    """``0.0 - x`` as a function: GCC (12 at least) folds the expression ``0.0f - x``
    to ``-x`` when ``x`` cannot be -0.0 (``(float)i``), which is -0.0 at ``x`` = +0.0
    where ``0.0 - x`` is +0.0. The select is exact: ``-x`` but +0.0 for either zero."""
    t = ctype(dt)
    fn = f"eqsat_zero_minus_{dt.name}"
    return fn, f"static inline {t} {fn}({t} x) {{ return x == 0 ? ({t})0 : ({t})-x; }}"


def bounds_check(idx: UOp, unproven: frozenset[int] = frozenset()) -> tuple[bool, bool]:
    """Which bounds of the ``INDEX`` ``idx`` the C checks at run time: (below 0, at or past
    the end), on the sides its bounds ``[vmin, vmax]`` do not prove. Checked: an address
    into a global buffer computed from a value loaded from a global buffer (a gather),
    and any address into a buffer whose slot is in ``unproven`` (a gated access that
    ``lowering.narrow.check_bounds`` did not prove inside where its gate holds: the check
    is made under the gate). Every other address (of loop indices, variables and
    reductions of them) is proven on the input graph by ``check_bounds``."""
    buf = _global(idx.src[0]) if idx.op is Ops.INDEX and len(idx.src) >= 2 else None
    if buf is None or not isinstance(buf.arg, tuple):
        return False, False
    addr = idx.src[1]
    if buf.arg[0] not in unproven and not any(
            x.op is Ops.LOAD and x.src[0].op is Ops.INDEX and _global(x.src[0].src[0])
            is not None for x in addr.toposort()):
        return False, False  # an accumulator's value (of a REDUCE) is bounded like it
    lo, hi = addr.vmin, addr.vmax
    return bool(lo < 0), bool(hi >= buf.arg[1])


class _Emitter:
    def __init__(self, linear: list[UOp], name: str, target: object | None,
                 params: list[UOp] | tuple[UOp, ...] = (), aligned: bool = False,
                 unproven: frozenset[int] = frozenset()):
        self.linear = linear
        self.target = target
        # the aligned copy: vector accesses proven aligned (lowering.align) are aligned
        self.aligned = aligned
        # vector groups (Target.vectorize): load -> (group, lane); group -> its 4 loads
        self.vload: dict[UOp, tuple[int, int]] = {}
        self.vload_groups: list[tuple[UOp, ...]] = []
        self.vload_first: dict[UOp, int] = {}  # first-emitted member -> group
        self.vload_name: dict[int, str] = {}
        self.vstore: dict[UOp, tuple[UOp, ...]] = {}  # first store -> its 4 stores
        self.vskip: set[UOp] = set()  # stores emitted with their group's first
        self.streamed = False
        self.loops: list[UOp] = []  # open RANGEs, innermost last
        self.name = name
        self.expr: dict[UOp, str] = {}
        self.addr: dict[UOp, tuple[str, str, str | None]] = {}
        self.helpers: dict[str, str] = {}
        self.lines: list[str] = []
        self.depth = 1
        self.counter: dict[str, int] = defaultdict(int)
        self.range_names: set[str] = set()
        self.sig = Signature(name)
        self.params = [u for u in params if u.op in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR)]
        # the INDEXes checked at run time (bounds_check): their accesses stay scalar
        self.checked = {u: b for u in linear if u.op is Ops.INDEX
                        and any(b := bounds_check(u, unproven))}

    # ---- naming -------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        n = self.counter[prefix]
        self.counter[prefix] += 1
        return f"{prefix}{n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def ref(self, u: UOp) -> str:
        if u.op is Ops.CONST:
            return c_literal(u.arg, u.dtype)
        if u not in self.expr:
            raise LoweringError(f"internal: {u.op.name.lower()} used before it is computed")
        return self.expr[u]

    # ---- analysis --------------------------------------------------------------------
    def _inline_set(self) -> set[UOp]:
        uses: dict[UOp, list[int]] = defaultdict(list)
        depth_at: dict[int, int] = {}
        pos: dict[UOp, int] = {}
        depth = 0
        for i, u in enumerate(self.linear):
            if u.op in (Ops.END, Ops.ENDIF):
                depth -= 1
            depth_at[i] = depth
            if u.op in (Ops.RANGE, Ops.IF):
                depth += 1
            pos.setdefault(u, i)
            for s in u.src:
                uses[s].append(i)
        out = set()
        for u, i in pos.items():
            if u.op in GroupOp.ALU | {Ops.CAST} and len(uses[u]) == 1 and \
                    depth_at[uses[u][0]] == depth_at[i] and self.linear[uses[u][0]].op not in (
                        Ops.RANGE, Ops.IF):
                out.add(u)
        return out

    # ---- rendering ---------------------------------------------------------------------------
    def alu(self, u: UOp) -> str:
        """The C expression of an ALU/CAST node, exactly the IR's value.

        C computes on ``int``/``float`` at least: results of types narrower
        than ``int`` (i8/i16/u8/u16) and f16 are cast back, so they wrap (or
        round) at every op as the IR says, even when inlined into a bigger
        expression. Bool ``add``/``mul``/``max``/``min`` are ``|``/``&``.
        """
        val = self._alu(u)
        if u.dtype.name in _NARROW and u.op not in _NO_RECAST:
            return f"(({ctype(u.dtype)}){val})"
        return val

    def _alu(self, u: UOp) -> str:
        op, dt = u.op, u.dtype
        if dt.is_bool and op in _BOOL_OPS:
            a = [self.ref(s) for s in u.src]
            return f"({a[0]}{_BOOL_OPS[op]}{a[1]})"
        a = [self.ref(s) for s in u.src]
        sdt = u.src[0].dtype if u.src else dt
        if op in (Ops.IDIV, Ops.MOD):
            if sdt.is_float:
                raise LoweringError(f"{op.name.lower()} on {sdt}: integer division of floats")
            d = u.src[1]
            if d.op is Ops.CONST and d.arg not in (0, -1):
                return f"({a[0]}{'/' if op is Ops.IDIV else '%'}{a[1]})"
            fn, code = _div_helper(dt, op is Ops.MOD)
            self.helpers[fn] = code
            return f"{fn}({a[0]}, {a[1]})"
        if op is Ops.SUB and dt.is_float and _positive_zero(u.src[0]):
            fn, code = _zero_minus_helper(dt)
            self.helpers[fn] = code
            return f"{fn}({a[1]})"
        if op in _BINARY:
            if op in (Ops.SHL, Ops.SHR) and sdt.is_float:
                raise LoweringError(f"{op.name.lower()} on {sdt}: shifts need integers")
            return f"({a[0]}{_BINARY[op]}{a[1]})"
        if op is Ops.NEG:
            return f"(-{a[0]})"
        if op is Ops.NOT:
            return f"(!{a[0]})" if dt.is_bool else f"(~{a[0]})"
        if op is Ops.RECIP:
            return f"({c_literal(1.0, dt)}/{a[0]})"
        if op in _MATH:
            return f"{_math_fn(_MATH[op], dt)}({a[0]})"
        if op is Ops.POW:
            return f"{_math_fn('pow', dt)}({a[0]}, {a[1]})"
        if op in (Ops.MAX, Ops.MIN):
            cmp = ">" if op is Ops.MAX else "<"
            if dt.is_float:  # NaN propagates, like numpy's maximum/minimum
                fn, code = _minmax_helper(dt, op is Ops.MAX)
                self.helpers[fn] = code
                return f"{fn}({a[0]}, {a[1]})"
            return f"((({a[0]}){cmp}({a[1]}))?({a[0]}):({a[1]}))"
        if op is Ops.WHERE:
            return f"({a[0]}?{a[1]}:{a[2]})"
        if op is Ops.MULACC:  # fused (Target.fma): one rounding, C's fma; else two
            if u.arg == "fused" and dt.name in ("f32", "f64"):
                return f"{_math_fn('__builtin_fma', dt)}({a[0]}, {a[1]}, {a[2]})"
            return f"(({a[0]}*{a[1]})+{a[2]})"
        if op is Ops.MULHI:
            if dt.name not in ("i32", "i64", "u32", "u64"):
                raise LoweringError(f"mulhi on {dt}: only 32- and 64-bit integers")
            wide = {"i32": "int64_t", "u32": "uint64_t", "i64": "__int128",
                    "u64": "unsigned __int128"}[dt.name]
            return (f"(({ctype(dt)})((({wide}){a[0]}*({wide}){a[1]})>>"
                    f"{dt.bits}))")
        if op is Ops.CAST:
            return f"(({ctype(dt)}){a[0]})"
        if op is Ops.BITCAST:
            if sdt.itemsize != dt.itemsize:
                raise LoweringError(f"bitcast {sdt} -> {dt}: sizes differ")
            return f"((union {{{ctype(sdt)} s; {ctype(dt)} t;}}){{.s = {a[0]}}}).t"
        raise LoweringError(f"the C emitter does not support op {op.name} ({dt})")

    def emit_check(self, idx: UOp, access: str) -> None:
        """The run-time bounds check of the access through ``idx`` (:func:`bounds_check`),
        before it: an index outside the buffer (where the gate holds) is reported through
        ``eqsat_oob`` and the function returns."""
        if idx not in self.checked:
            return
        below, above = self.checked[idx]
        buf = _global(idx.src[0])
        assert buf is not None
        slot, size = buf.arg
        _, off, gate = self.addr[idx]
        outside = " || ".join(([f"{off} < 0"] if below else []) +
                              ([f"{off} >= {size}{'' if size <= 0x7FFFFFFF else 'LL'}"]
                               if above else []))
        cond = f"{gate} && ({outside})" if gate is not None else outside
        self.sig.checks.append((access, slot, buf.dtype.base(), size, _index_text(idx.src[1])))
        rt = _returns(self.linear)
        ret = f" {c_literal(0, rt)}" if rt is not None else ""
        self.emit(f"if ({cond}) {{ eqsat_oob[0] = {len(self.sig.checks)}; "
                  f"eqsat_oob[1] = (int64_t){off}; return{ret}; }}")

    def base_name(self, u: UOp) -> str:
        while u.op is Ops.AFTER:
            u = u.src[0]
        return self.ref(u)

    def lvalue(self, idx: UOp) -> tuple[str, str | None]:
        if idx.op is not Ops.INDEX:
            raise LoweringError(f"load/store through {idx.op.name.lower()}: expected an INDEX")
        buf, off, gate = self.addr[idx]
        return f"{buf}[{off}]", gate

    # ---- vector groups (Target.vectorize) -----------------------------------------------
    def _vector_groups(self, inline: set[UOp]) -> None:
        t = self.target
        if t is None or not getattr(t, "vectorize", False):
            return
        lin = self.linear
        written = {_global(u.src[0].src[0]) for u in lin
                   if u.op is Ops.STORE and u.src[0].op is Ops.INDEX}
        seg, cur, pos = {}, 0, {}
        for i, u in enumerate(lin):
            if u.op in (Ops.RANGE, Ops.END, Ops.IF, Ops.ENDIF):
                cur += 1
            seg[u] = cur
            pos.setdefault(u, i)
        # loads: 4 consecutive addresses of one read-only buffer in one loop body
        # (gated loads too, when the four share one gate and one alternative value: the
        # vector is loaded when the gate holds, else it is the alternative in every lane)
        cands: dict[tuple, dict[int, UOp]] = defaultdict(dict)
        for u in lin:
            ab = _access(u, gated=True) if u.op is Ops.LOAD and u.src[0] not in self.checked \
                else None
            if ab is not None and ab[2] not in written:
                gate = u.src[0].src[2] if len(u.src[0].src) > 2 else None
                alt = u.src[1] if len(u.src) > 1 else None
                if gate is None and alt is not None:
                    continue
                cands[(seg[u], ab[2], ab[0], gate, alt)].setdefault(ab[1], u)
        for run in cands.values():
            for c in sorted(run):
                members = [run.get(c + k) for k in range(4)]
                if all(m is not None and m not in self.vload for m in members):
                    g = len(self.vload_groups)
                    self.vload_groups.append(tuple(members))  # type: ignore[arg-type]
                    for k, m in enumerate(members):
                        self.vload[m] = (g, k)  # type: ignore[index]
                    self.vload_first[min(members, key=pos.__getitem__)] = g
        # stores: four in a row (nothing emitted between) to A+c .. A+c+3 of one buffer
        silent = {Ops.INDEX, Ops.CONST, Ops.NOOP, Ops.AFTER}
        first_of = {g: min(ms, key=pos.__getitem__) for g, ms in enumerate(self.vload_groups)}

        def ready(v: UOp, at: int) -> bool:
            """The value is computed before position ``at`` (it is emitted there)."""
            if v.op is Ops.CONST:
                return True
            if v in self.vload:
                return pos[first_of[self.vload[v][0]]] < at
            return pos.get(v, at) < at

        i = 0
        while i < len(lin):
            first = lin[i]
            base = _access(first) if first.op is Ops.STORE and len(first.src) == 2 and \
                first.src[0] not in self.checked else None
            if base is None or not ready(first.src[1], i):
                i += 1
                continue
            group, j = [first], i + 1
            while j < len(lin) and len(group) < 4:
                u = lin[j]
                if u.op in silent or u in inline or (u.op is Ops.LOAD and u in self.vload
                                                     and u not in self.vload_first):
                    j += 1
                    continue
                b = _access(u) if u.op is Ops.STORE and len(u.src) == 2 and \
                    u.src[0] not in self.checked else None
                if b is None or b[0] != base[0] or b[2] is not base[2] or \
                        b[1] != base[1] + len(group) or not ready(u.src[1], i):
                    break
                group.append(u)
                j += 1
            if len(group) == 4:
                self.vstore[first] = tuple(group)
                self.vskip.update(group[1:])
                i = j
            else:
                i += 1

    def _vec_helpers(self) -> None:
        self.helpers.setdefault("eqsat_f32x4", _VEC_TYPES)

    def emit_vload(self, g: int, at: UOp) -> None:
        """The vector load of group ``g``, at its first-emitted member ``at`` (whose
        address is rendered; lane 0 is a constant away from it)."""
        self._vec_helpers()
        members = self.vload_groups[g]
        c0 = _access(members[0], gated=True)[1]  # type: ignore[index]
        delta = c0 - _access(at, gated=True)[1]  # type: ignore[index]
        name = self.fresh("vec")
        self.vload_name[g] = name
        buf = self.base_name(at.src[0].src[0])
        a = at.src[0].src[1]
        here = self.addr[at.src[0]][1]
        off = here if delta == 0 else f"({here}+{c_literal(delta, a.dtype)})"
        gate = self.addr[at.src[0]][2]
        src = self._vector_address(members[0].src[0], f"&{buf}[{off}]")
        if gate is None:
            self.emit(f"eqsat_f32x4 {name}; __builtin_memcpy(&{name}, {src}, 16);")
        else:  # one gate for the four lanes: load them all, or the alternative in each
            alt = self.ref(at.src[1]) if len(at.src) > 1 else c_literal(0.0, at.dtype)
            self.emit(f"eqsat_f32x4 {name}; if ({gate}) __builtin_memcpy(&{name}, "
                      f"{src}, 16); else {name} = (eqsat_f32x4){{{alt}, {alt}, "
                      f"{alt}, {alt}}};")
        for k, m in enumerate(members):
            self.expr[m] = f"{name}[{k}]"
        ahead = getattr(self.target, "prefetch", 0)
        g_buf = _global(at.src[0].src[0])
        if g_buf is None or g_buf.arg[1] * 4 < PREFETCH_MIN_BYTES:
            ahead = 0  # a buffer the size of a core's L2 cache stays there once read
        step = _coefficient(a, self.loops[-1]) if self.loops and ahead else None
        if step is not None and abs(step) * 4 > 64:  # more than a line per iteration
            self.emit(f"__builtin_prefetch((const void*)((uintptr_t)&{buf}[{off}] + "
                      f"(uintptr_t){ahead * step * 4}LL), 0, 3);")

    def _lanes_vector(self, vals: list[UOp]) -> str:
        """A C vector expression of the four values, shuffles where they are lanes of
        loaded vectors."""
        if not all(v in self.vload and v.dtype.name == "f32" for v in vals):
            return f"((eqsat_f32x4){{{', '.join(self.ref(v) for v in vals)}}})"
        src = [(self.vload_name[self.vload[v][0]], self.vload[v][1]) for v in vals]
        names = list(dict.fromkeys(n for n, _ in src))
        if len(names) == 1:
            ks = [k for _, k in src]
            if ks == [0, 1, 2, 3]:
                return names[0]
            return _shuffle(names[0], names[0], ks)
        if len(names) == 2:
            ks = [k + 4 * names.index(n) for n, k in src]
            return _shuffle(names[0], names[1], ks)

        def pair(x: tuple[str, int], y: tuple[str, int]) -> tuple[str, int]:
            """A vector holding lanes x, y at positions (p, p+1), and p. Equal lanes
            of two vectors come from their interleave (``unpcklps``/``unpckhps``),
            which the C compiler computes once for all the stores that share it
            (a 4x4 transpose: 8 shuffles)."""
            (na, ka), (nb, kb) = x, y
            if na != nb and ka == kb:
                m = [0, 4, 1, 5] if ka < 2 else [2, 6, 3, 7]
                return _shuffle(na, nb, m), 2 * (ka % 2)
            if na == nb:
                return _shuffle(na, na, [ka, kb, ka, kb]), 0
            return _shuffle(na, nb, [ka, kb + 4, ka, kb + 4]), 0
        (x, px), (y, py) = pair(src[0], src[1]), pair(src[2], src[3])
        return _shuffle(x, y, [px, px + 1, py + 4, py + 5])

    def emit_vstore(self, group: tuple[UOp, ...]) -> None:
        self._vec_helpers()
        lv, _ = self.lvalue(group[0].src[0])
        vec = self._lanes_vector([u.src[1] for u in group])
        buf = _global(group[0].src[0].src[0])
        if buf is not None:
            self.sig.written.add(buf.arg[0])
        t = self.target
        if getattr(t, "streaming_stores", False) and buf is not None and \
                buf.arg[1] * 4 >= getattr(t, "stream_min_bytes", 0):
            self.helpers.setdefault("eqsat_stream_f32x4", _STREAM_HELPER)
            self.streamed = True
            self.emit(f"eqsat_stream_f32x4(&{lv}, {vec});")
        else:
            dst = self._vector_address(group[0].src[0], f"&{lv}")
            self.emit(f"{{ eqsat_f32x4 v_ = {vec}; __builtin_memcpy({dst}, &v_, 16); }}")

    def _vector_address(self, idx: UOp, addr: str) -> str:
        """``addr``, the C address of the 16-byte vector at lane 0's ``INDEX`` ``idx``,
        marked 16-byte aligned in the aligned copy where its element offset is a multiple
        of 4 for every value of the loop indices (its buffer's address is then checked)."""
        buf = _global(idx.src[0])
        if not self.aligned or buf is None or not is_multiple(idx.src[1], 4):
            return addr
        self.sig.aligned = tuple(sorted({*self.sig.aligned, buf.arg[0]}))
        return f"__builtin_assume_aligned({addr}, 16)"

    def render(self) -> None:
        inline = self._inline_set()
        self._vector_groups(inline)
        root = self.linear[-1] if self.linear else None
        for u in self.linear:
            op = u.op
            if op is Ops.DEFINE_GLOBAL:
                slot, size = u.arg
                self.expr[u] = f"data{slot}"
                self.sig.buffers.append((slot, u.dtype.base(), size))
            elif op is Ops.DEFINE_VAR:
                name, lo, hi = u.arg
                cname = _var_cname(name)
                if (name, lo, hi) not in self.sig.variables:
                    self.sig.variables.append((name, lo, hi))
                if u.dtype.name == "i64":
                    self.expr[u] = cname
                else:  # narrowed: a local of the narrow type
                    local = f"{cname}_{u.dtype.name}"
                    self.emit(f"const {ctype(u.dtype)} {local} = ({ctype(u.dtype)}){cname};")
                    self.expr[u] = local
            elif op is Ops.CONST:
                self.expr[u] = c_literal(u.arg, u.dtype)
            elif op is Ops.DEFINE_REG:
                name = self.fresh("acc")
                self.emit(f"{ctype(u.dtype.base())} {name}[1];")
                self.expr[u] = name
            elif op is Ops.AFTER:
                self.expr[u] = self.ref(u.src[0])
            elif op is Ops.INDEX:
                gate = self.ref(u.src[2]) if len(u.src) > 2 else None
                self.addr[u] = (self.base_name(u.src[0]), self.ref(u.src[1]), gate)
            elif op is Ops.LOAD and u in self.vload:
                if u in self.vload_first:
                    self.emit_vload(self.vload_first[u], u)
            elif op is Ops.LOAD:
                self.emit_check(u.src[0], "load from")
                lv, gate = self.lvalue(u.src[0])
                if gate is not None:
                    alt = self.ref(u.src[1]) if len(u.src) > 1 else c_literal(0, u.dtype)
                    val = f"({gate}?{lv}:{alt})"
                else:
                    val = lv
                name = self.fresh("val")
                self.emit(f"{ctype(u.dtype)} {name} = {val};")
                self.expr[u] = name
            elif op is Ops.STORE and u in self.vskip:
                pass
            elif op is Ops.STORE and u in self.vstore:
                self.emit_vstore(self.vstore[u])
            elif op is Ops.STORE:
                self.emit_check(u.src[0], "store to")
                lv, gate = self.lvalue(u.src[0])
                base = u.src[0].src[0]
                while base.op is Ops.AFTER:
                    base = base.src[0]
                if base.op is Ops.DEFINE_GLOBAL:
                    self.sig.written.add(base.arg[0])
                stmt = f"{lv} = {self.ref(u.src[1])};"
                self.emit(f"if ({gate}) {stmt}" if gate is not None else stmt)
            elif op is Ops.RANGE:
                name = f"ridx{range_id(u)}"
                while name in self.range_names:
                    name = f"ridx{range_id(u)}_{self.fresh('r')}"
                self.range_names.add(name)
                t = ctype(u.dtype)
                self.emit(f"for ({t} {name} = 0; {name} < {self.ref(u.src[0])}; {name}++) {{")
                self.depth += 1
                self.loops.append(u)
                self.expr[u] = name
            elif op in (Ops.END, Ops.ENDIF):
                self.depth -= 1
                self.emit("}")
                if op is Ops.END and self.loops:
                    self.loops.pop()
            elif op is Ops.IF:
                self.emit(f"if ({self.ref(u.src[0])}) {{")
                self.depth += 1
            elif op is Ops.SINK:
                if u is root and u.arg == "return":
                    self.sig.returns = u.src[0].dtype
                    if len(u.src) > 1:
                        self.sig.has_valid = True
                        self.emit(f"*valid = {self.ref(u.src[1])};")
                    self.emit(f"return {self.ref(u.src[0])};")
            elif op is Ops.NOOP:
                pass
            elif op in GroupOp.ALU or op in (Ops.CAST, Ops.BITCAST):
                val = self.alu(u)
                if u in inline:
                    self.expr[u] = val
                else:
                    name = self.fresh("alu" if op not in (Ops.CAST, Ops.BITCAST) else "cast")
                    self.emit(f"{ctype(u.dtype)} {name} = {val};")
                    self.expr[u] = name
            else:
                raise LoweringError(f"the C emitter does not support op {op.name} ({u.dtype})")

    def signature(self) -> list[str]:
        """Complete the signature (the parameters the program no longer reads too);
        the function's C parameters."""
        sig = self.sig
        for u in self.params:  # the caller's parameters that the program no longer reads
            if u.op is Ops.DEFINE_GLOBAL and u.arg[0] not in {b[0] for b in sig.buffers}:
                sig.buffers.append((u.arg[0], u.dtype.base(), u.arg[1]))
            elif u.op is Ops.DEFINE_VAR and tuple(u.arg) not in sig.variables:
                sig.variables.append(tuple(u.arg))
        sig.buffers.sort(key=lambda b: b[0])
        sig.variables.sort(key=lambda v: v[0])
        slots = [b[0] for b in sig.buffers]
        if len(set(slots)) != len(slots):
            raise LoweringError(f"buffer slots {slots} are not distinct")
        cnames = [_var_cname(n) for n, _, _ in sig.variables]
        if len(set(cnames)) != len(cnames):
            raise LoweringError(f"variables {[n for n, _, _ in sig.variables]} collide once made "
                                "C identifiers (or one name has two bounds)")
        params = []
        for slot, elem, _ in sig.buffers:
            const = "" if slot in sig.written else "const "
            params.append(f"{const}{ctype(elem)}* restrict data{slot}")
        params += [f"int64_t {c}" for c in cnames]
        if sig.has_valid:
            params.append("bool* restrict valid")
        if sig.checks:
            params.append("int64_t* restrict eqsat_oob")
        return params

    def function(self, params: list[str], name: str, first: Sequence[str] = (),
                 static: bool = False) -> list[str]:
        """The C function ``name`` of the emitted lines, ``first`` its first lines."""
        ret = ctype(self.sig.returns) if self.sig.returns is not None else "void"
        proto = f"{'static ' if static else ''}{ret} {name}({', '.join(params) or 'void'}) {{"
        tail = [_STREAM_FENCE] if self.streamed else []
        return [proto, *first, *self.lines, *tail, "}"]

    def assemble(self, aligned: _Emitter | None = None) -> str:
        """The source: the includes, the helpers, then the function; with the ``aligned``
        copy (its emitter, run on the same program), that copy as a static function,
        which the function runs when the buffers of ``aligned.sig.aligned`` are 16-byte
        aligned."""
        params = self.signature()
        sig = self.sig
        first: list[str] = []
        funcs: list[str] = []
        if aligned is not None and aligned.sig.aligned:
            self.helpers.update(aligned.helpers)
            sig.aligned = aligned.sig.aligned
            name = f"{self.name}_aligned"
            names = [f"data{s}" for s in sig.aligned]
            hint = [f"  {n} = __builtin_assume_aligned({n}, 16);" for n in names]
            funcs = aligned.function(params, name, hint, static=True) + [""]
            check = " | ".join(f"(uintptr_t){n}" for n in names)
            args = ", ".join([*sig.c_names, *(["valid"] if sig.has_valid else []),
                              *(["eqsat_oob"] if sig.checks else [])])
            call = f"{name}({args})"
            first = [f"  if ((({check}) & 15) == 0) {{ "
                     + (f"return {call}; }}" if sig.returns is not None else
                        f"{call}; return; }}")]
        head = ["#include <stdint.h>", "#include <stdbool.h>", "#include <math.h>", ""]
        head += list(self.helpers.values()) + ([""] if self.helpers else [])
        sig.preamble = head
        return "\n".join(head + funcs + self.function(params, self.name, first) + [""])


#: the smallest buffer whose strided vector loads are prefetched (``Target.prefetch``)
PREFETCH_MIN_BYTES = 1 << 20

_VEC_TYPES = """typedef float eqsat_f32x4 __attribute__((vector_size(16)));
typedef int32_t eqsat_i32x4 __attribute__((vector_size(16)));
#if defined(__clang__)
#define EQSAT_SHUFFLE(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define EQSAT_SHUFFLE(a, b, i, j, k, l) __builtin_shuffle(a, b, (eqsat_i32x4){i, j, k, l})
#endif"""


def _shuffle(a: str, b: str, lanes: list[int]) -> str:
    """Lanes of the 8 of vectors ``a`` then ``b`` (GCC's ``__builtin_shuffle``, clang's
    ``__builtin_shufflevector``: the ``EQSAT_SHUFFLE`` macro)."""
    return f"EQSAT_SHUFFLE({a}, {b}, {', '.join(map(str, lanes))})"
_STREAM_HELPER = """static inline void eqsat_stream_f32x4(float* p, eqsat_f32x4 v) {
#if defined(__SSE__)
  if (((uintptr_t)p & 15) == 0) {
#if defined(__clang__)
    __builtin_nontemporal_store(v, (eqsat_f32x4*)p);
#else
    __builtin_ia32_movntps(p, v);
#endif
    return;
  }
#endif
  __builtin_memcpy(p, &v, 16);
}"""
_STREAM_FENCE = """#if defined(__SSE__)
  __builtin_ia32_sfence();
#endif"""


def _coefficient(u: UOp, r: UOp) -> int | None:
    """How much the integer ``u`` grows when the loop index ``r`` grows by one, if
    ``u`` is affine in ``r`` (sums, differences, products with and shifts by
    constants, integer casts); None otherwise."""
    memo: dict[UOp, int | None] = {}
    for x in u.toposort():
        src = [memo[s] for s in x.src]
        if x is r:
            c: int | None = 1
        elif all(v == 0 for v in src) and x.op is not Ops.RANGE or x.op in (
                Ops.CONST, Ops.DEFINE_VAR, Ops.RANGE):
            c = 0
        elif x.op is Ops.ADD:
            c = None if None in src else src[0] + src[1]  # type: ignore[operator]
        elif x.op is Ops.SUB:
            c = None if None in src else src[0] - src[1]  # type: ignore[operator]
        elif x.op is Ops.NEG:
            c = None if src[0] is None else -src[0]
        elif x.op is Ops.MUL and x.src[1].op is Ops.CONST and src[0] is not None:
            c = src[0] * int(x.src[1].arg)
        elif x.op is Ops.MUL and x.src[0].op is Ops.CONST and src[1] is not None:
            c = src[1] * int(x.src[0].arg)
        elif x.op is Ops.SHL and x.src[1].op is Ops.CONST and src[0] is not None:
            c = src[0] << int(x.src[1].arg)
        elif x.op is Ops.CAST and x.dtype.is_int and src[0] is not None:
            c = src[0]
        else:
            c = None
        memo[x] = c
    return memo[u]


def _returns(linear: list[UOp]) -> DType | None:
    """The dtype an expression kernel's function returns (its root ``SINK "return"``)."""
    root = linear[-1] if linear else None
    if root is not None and root.op is Ops.SINK and root.arg == "return":
        return root.src[0].dtype
    return None


def _index_text(addr: UOp, limit: int = 160) -> str:
    """The address ``addr`` in the text format, for an error message (cut at ``limit``)."""
    try:
        text = to_sexpr(addr, compact=True)
    except (TypeError, ValueError):
        text = f"{addr.op.name.lower()} ({addr.dtype})"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _global(buf: UOp) -> UOp | None:
    while buf.op is Ops.AFTER:
        buf = buf.src[0]
    return buf if buf.op is Ops.DEFINE_GLOBAL else None


def _linear(u: UOp) -> tuple[frozenset[tuple[UOp, int]], int]:
    """``u`` as ``sum(coef * atom) + c``: the set of the atoms with their coefficients
    (a set: equal for equal sums whatever order or creation number their nodes have),
    and the constant (through ``+ - *`` by constants, negation, shifts by constants;
    anything else is an atom). Narrowed index arithmetic never wraps, so two
    addresses with the same atoms differ by the difference of their constants."""
    memo: dict[UOp, tuple[dict[UOp, int], int]] = {}
    for x in u.toposort():
        src = [memo.get(s) for s in x.src]
        if x.op is Ops.CONST and x.dtype.is_int:
            memo[x] = ({}, int(x.arg))
            continue
        scale: int | None = None
        if x.op in (Ops.ADD, Ops.SUB):
            (ta, ca), (tb, cb) = src  # type: ignore[misc]
            sign = 1 if x.op is Ops.ADD else -1
            terms = dict(ta)
            for t, k in tb.items():
                terms[t] = terms.get(t, 0) + sign * k
            memo[x] = (terms, ca + sign * cb)
            continue
        if x.op is Ops.MUL and x.src[1].op is Ops.CONST:
            scale, inner = int(x.src[1].arg), src[0]
        elif x.op is Ops.MUL and x.src[0].op is Ops.CONST:
            scale, inner = int(x.src[0].arg), src[1]
        elif x.op is Ops.SHL and x.src[1].op is Ops.CONST and 0 <= x.src[1].arg < 63:
            scale, inner = 1 << int(x.src[1].arg), src[0]
        elif x.op is Ops.NEG:
            scale, inner = -1, src[0]
        if scale is not None and inner is not None:
            memo[x] = ({t: k * scale for t, k in inner[0].items()}, inner[1] * scale)
        else:
            memo[x] = ({x: 1}, 0)
    terms, c = memo[u]
    return frozenset((t, k) for t, k in terms.items() if k), c


def _access(u: UOp, gated: bool = False) -> tuple[frozenset, int, UOp] | None:
    """``(key, c, buf)`` for an f32 LOAD/STORE through an ungated ``INDEX(buf, A)``
    of a global buffer, ``A = sum(atoms) + c`` (:func:`_linear`; ``key`` the atoms:
    equal keys, addresses ``c`` apart); else None. ``gated``: a gated
    ``INDEX(buf, A, gate)`` too (the caller checks the gate)."""
    if u.op not in (Ops.LOAD, Ops.STORE) or u.src[0].op is not Ops.INDEX or \
            len(u.src[0].src) != 2 + (gated and len(u.src[0].src) == 3):
        return None
    val = u if u.op is Ops.LOAD else u.src[1]
    if val.dtype.name != "f32":
        return None
    buf = _global(u.src[0].src[0])
    addr = u.src[0].src[1]
    if buf is None:
        return None
    key, c = _linear(addr)
    return key, c, buf


def render_c(linear: list[UOp], name: str = "kernel", target: object | None = None,
             params: list[UOp] | tuple[UOp, ...] = (),
             unproven: frozenset[int] = frozenset()) -> tuple[str, Signature]:
    """The C source of one function for ``linear`` and its :class:`Signature`.

    ``params``: DEFINE_GLOBAL / DEFINE_VAR nodes that are parameters of the function
    even when ``linear`` does not use them (the buffers and variables of the graph
    before optimization: a kernel's calling convention does not change because the
    optimizer proved a buffer is never read, e.g. a pad fully shrunk away). ``unproven``:
    the slots whose accesses are checked at run time (:func:`bounds_check`)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise LoweringError(f"kernel name {name!r} is not a C identifier")
    em = _Emitter(linear, name, target, params, unproven=unproven)
    em.render()
    aligned = None
    if getattr(target, "aligned", False) and (em.vload_groups or em.vstore):
        aligned = _Emitter(linear, name, target, params, aligned=True, unproven=unproven)
        aligned.render()
    return em.assemble(aligned), em.sig


_ = dtypes
