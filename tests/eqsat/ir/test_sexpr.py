"""The .uop text format: round trips, dtype inference, errors, deep graphs."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eqsat
from eqsat.ir.dtype import DType, dtypes
from eqsat.ir.ops import GroupOp, Ops
from eqsat.ir.sexpr import ParseError, parse, to_sexpr
from eqsat.ir.uop import RANGE_KINDS, UOp
from tests.strategies import fixed_width_exprs, int_exprs, padded_index_exprs


def roundtrip(g: UOp) -> None:
    text = to_sexpr(g)
    assert parse(text) is g, text
    compact = to_sexpr(g, compact=True)
    assert "\n" not in compact
    assert parse(compact) is g, compact
    assert to_sexpr(g) == text  # deterministic


# ---------------------------------------------------------------------------
# the spec's own examples
SPEC_LAYOUT = """\
; a comment runs to the end of the line
%a = (add (range 0 32) 5)          ; a binding: %NAME = EXPR
%b = (mul %a %a)                   ; later lines may use earlier names
(idiv %b 4)                        ; the last top-level EXPR is the root
"""

SPEC_TRANSPOSE = """\
%out = (buffer 0 f32 60)
%in  = (buffer 1 f32 60)
%r   = (range 0 60)
(sink (end (store (index %out %r) (load (index %in (add (mul (mod %r 10) 6) (idiv %r 10))))) %r))
"""


def test_spec_layout():
    g = parse(SPEC_LAYOUT)
    a = UOp.range(32, 0) + 5
    assert g is (a * a) // 4
    assert to_sexpr(g) == "%0 = (add (range 0 32) 5)\n(idiv (mul %0 %0) 4)"
    roundtrip(g)


def test_spec_transpose_kernel():
    g = parse(SPEC_TRANSPOSE)
    out, inp = UOp.buffer(0, dtypes.f32, 60), UOp.buffer(1, dtypes.f32, 60)
    r = UOp.range(60, 0)
    idx = UOp(Ops.INDEX, inp.dtype, (inp, r % 10 * 6 + r // 10))
    ld = UOp(Ops.LOAD, dtypes.f32, (idx,))
    st_ = UOp(Ops.STORE, dtypes.void, (UOp(Ops.INDEX, out.dtype, (out, r)), ld))
    want = UOp(Ops.SINK, dtypes.void, (UOp(Ops.END, dtypes.void, (st_, r)),))
    assert g is want
    assert idx.dtype is dtypes.f32.ptr_to() and ld.dtype is dtypes.f32
    roundtrip(g)


def test_bundled_examples_roundtrip(repo_root):
    files = sorted((repo_root / "eqsat" / "examples").glob("*.uop"))
    assert len(files) >= 3
    for f in files:
        roundtrip(parse(f.read_text()))


# ---------------------------------------------------------------------------
# the corpus: every expr and tinygrad field
def test_corpus_roundtrip(corpus_lines):
    n = 0
    for row in corpus_lines:
        for key in ("expr", "tinygrad"):
            g = parse(row[key])
            assert parse(to_sexpr(g)) is g, (row["id"], key)
            assert parse(to_sexpr(g, compact=True)) is g, (row["id"], key)
            n += 1
    assert n == 2 * len(corpus_lines) and n > 0


# ---------------------------------------------------------------------------
# dtype inference
X = UOp.var("x", 0, 3)


@pytest.mark.parametrize("text, dtype", [
    ("42", "index"), ("-7", "index"), ("true", "bool"), ("1.5", "f32"), ("-2e3", "f32"),
    ("inf", "f32"), ("-inf", "f32"), ("nan", "f32"), ("(const i32 7)", "i32"),
    ("(const f64 0.5)", "f64"), ("(vconst i32 1 2 3 4)", "i32x4"), ("(const f32x4 1)", "f32x4"),
    ("(add (cast i32 (var x 0 3)) 1)", "i32"), ("(add 1 (cast u8 (var x 0 3)))", "u8"),
    ("(mul (const f16 2) 3)", "f16"), ("(mul (const f64 2) 0.1)", "f64"),
    ("(add (vconst f32 1 2) 1)", "f32x2"), ("(lt (var x 0 3) 2)", "bool"),
    ("(lt (vconst i32 1 2) (vconst i32 3 4))", "boolx2"),
    ("(where (lt (var x 0 3) 2) (const i8 1) 0)", "i8"), ("(where true 1 (invalid))", "index"),
    ("(cast f32 (var x 0 3))", "f32"), ("(bitcast i32 1.5)", "i32"),
    ("(vectorize 1 2 (const i16 3))", "i16x3"), ("(cat (vconst u8 1 2) 3)", "u8x3"),
    ("(gep (vconst i32 1 2 3) 2 0)", "i32x2"), ("(gep (vconst i32 1 2 3) 1)", "i32"),
    ("(range 0 (const i32 8))", "i32"), ("(special gidx0 16)", "index"),
    ("(buffer 0 f16 8)", "f16*"), ("(index (buffer 0 f16 8) 3)", "f16*"),
    ("(load (index (buffer 0 f16 8) 3))", "f16"), ("(load (index (buffer 0 u8 8) 3) 7)", "u8"),
    ("(store (index (buffer 0 f32 8) 3) 1)", "void"),
    ("(reduce max (load (index (buffer 0 i32 8) (range 0 8))) (range 0 8))", "i32"),
    ("(after (const i32 1) (sink))", "i32"), ("(mulacc 1.0 2.0 3.0)", "f32"),
    ("(not true)", "bool"), ("(min 1 2)", "index"), ("(floor 1.5)", "f32"),
])
def test_inferred_dtype(text, dtype):
    g = parse(text)
    assert g.dtype is (dtypes.void if dtype == "void" else dtypes.parse(dtype))
    roundtrip(g)


def test_literal_values_and_ops():
    assert parse("(add (cast i32 (var x 0 3)) 1)").src[1] is UOp.const(dtypes.i32, 1)
    assert parse("(const u8 255)").arg == 255
    assert parse("(const i8 -128)").arg == -128
    assert parse("(const i64 -9223372036854775808)").arg == -(1 << 63)
    assert parse("123456789012345678901234567890").arg == 123456789012345678901234567890
    assert math.copysign(1.0, parse("-0.0").arg) == -1.0
    assert parse("0.1").arg == float.fromhex("0x1.99999ap-4")  # rounded to f32
    assert parse("(const f64 0.1)").arg == 0.1
    assert parse("(reduce min 1 (range 0 4))").arg is Ops.MIN
    assert parse("(var x 0 3)") is X and X.vmin == 0 and X.vmax == 3
    assert parse("(range 3 8)") is UOp.range(8, 3)
    assert parse("(range 3 8)") is not parse("(range 4 8)")
    assert parse("(range 3 8 loop)") is UOp.range(8, 3)  # the default kind, named
    assert parse("(range 3 8 upcast)") is UOp.range(8, 3, "upcast")
    assert parse("(range 3 8 upcast)").arg == (3, "upcast")
    assert parse("(range 3 8 upcast)") is not parse("(range 3 8 unroll)")
    assert parse("(buffer 2 f32 10)").arg == (2, 10)
    assert parse("(idiv -7 2)").op is Ops.IDIV
    assert parse("%a = 5 ; a leaf binding\n%a") is UOp.const(dtypes.index, 5)


@pytest.mark.parametrize("text", [
    "(add 1 2)", "(sub (var a -5 5) (range 1 7))",
    "(add (mul (range 0 4 upcast) 8) (mul (range 1 (var n 1 9) reduce) (range 2 3 unroll)))",
    "(end (store (index (buffer 0 f32 4) (range 3 4 global)) 1.0) (range 3 4 global))",
    "(where (ne (range 0 4) 3) (range 0 4) (invalid))",
    "(neg -0.0)", "(mul nan inf)", "(add -inf (const f32 1e-45))", "(const f16 65504)",
    "(const bf16 -0.0)", "(const f64 1e308)", "(vconst f64 nan -0.0 inf 5e-324)",
    "(vconst bool true false true)", "(const boolx2 true)", "(const indexx4 -3)",
    "(const u64 18446744073709551615)", "(sqrt (const f64 2))", "(cast bf16 (const f64 0.1))",
    "(xor (shl (const u32 1) 31) (shr (const u32 4294967295) 1))",
    "(pow 2.0 (recip (exp2 (log2 (sin (trunc 3.5))))))", "(fdiv 1.0 3.0)",
    "(and (lt 1 2) (or (gt 1 2) (ge 3 3)))", "(le (var x 0 3) (neg 1))",
    "(eq (ceil 1.5) (round 2.5))", "(max (var x 0 3) 2)",
])
def test_roundtrip_examples(text):
    roundtrip(parse(text))


# ---------------------------------------------------------------------------
# sharing and naming
def test_dag_sharing_binds_once():
    r = UOp.range(32, 0)
    a = r * 4 + 3
    g = (a // 8) * 8 + a % 8
    text = to_sexpr(g)
    assert text.count("(mul (range 0 32) 4)") == 1
    assert text.splitlines()[0] == "%0 = (add (mul (range 0 32) 4) 3)"
    assert text.count("(range 0 32)") == 1  # leaves inline, the shared sum bound
    roundtrip(g)


def test_leaves_stay_inline():
    x = UOp.var("x", 0, 9)
    g = x * x + x
    assert to_sexpr(g) == "(add (mul (var x 0 9) (var x 0 9)) (var x 0 9))"


def test_shared_range_end_is_bound():
    end = UOp.var("n", 1, 8) + 1
    r = UOp.range(end, 0)
    g = r * r
    assert to_sexpr(g) == "%0 = (add (var n 1 8) 1)\n(mul (range 0 %0) (range 0 %0))"
    roundtrip(g)


def test_names_are_deterministic():
    x, y = UOp.var("x", 0, 9), UOp.var("y", 0, 9)
    s, t = x + y, x * y
    g1 = (s + t) * (s - t)
    assert to_sexpr(g1) == ("%0 = (add (var x 0 9) (var y 0 9))\n"
                            "%1 = (mul (var x 0 9) (var y 0 9))\n"
                            "(mul (add %0 %1) (sub %0 %1))")
    assert to_sexpr(g1, compact=True) == ("%0 = (add (var x 0 9) (var y 0 9)) "
                                          "%1 = (mul (var x 0 9) (var y 0 9)) "
                                          "(mul (add %0 %1) (sub %0 %1))")


def test_repr_reads_back():
    g = parse(SPEC_LAYOUT)
    r = repr(g)
    assert r.startswith("eqsat.parse('") and "\\n" not in r
    assert eval(r, {"eqsat": eqsat}) is g


# ---------------------------------------------------------------------------
# ops outside the text format
@pytest.mark.parametrize("op", [Ops.MULHI, Ops.IF, Ops.ENDIF, Ops.DEFINE_LOCAL, Ops.NOOP,
                                Ops.BIND, Ops.UNROLL])
def test_unprintable_op_names_it(op):
    x = UOp.var("x", 0, 9)
    u = UOp(op, dtypes.index, (x, x))
    with pytest.raises(ValueError, match=op.name):
        to_sexpr(u + 1)


def test_unprintable_names():
    with pytest.raises(ValueError, match="name 'a b'"):
        to_sexpr(UOp.var("a b", 0, 1))
    with pytest.raises(TypeError):
        to_sexpr("(add 1 2)")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse(b"(add 1 2)")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# malformed input: (text, line, col, message fragment)
MALFORMED = [
    ("", 1, 1, "empty input: expected an expression"),
    ("  ; only a comment\n", 2, 1, "empty input"),
    ("(add 1 2", 1, 9, "expected ')' to close '(add' opened at 1:1"),
    ("(sink (add 1\n   (mul 2 3)", 2, 13, "to close '(add' opened at 1:7, got end of input"),
    ("(add 1 2))", 1, 10, "unexpected ')' after the root expression"),
    (")", 1, 1, "expected an expression, got ')'"),
    ("(foo 1 2)", 1, 2, "unknown op 'foo'"),
    ("()", 1, 2, "expected an op name after '(', got ')'"),
    ("((add 1 2))", 1, 2, "expected an op name after '('"),
    ("(add 1)", 1, 7, "add takes 2 operands, got 1"),
    ("(add 1 2 3)", 1, 10, "add takes 2 operands, got 3"),
    ("(where true 1)", 1, 14, "where takes 3 operands, got 2"),
    ("(invalid 3)", 1, 10, "invalid takes 0 operands, got 1"),
    ("(index (buffer 0 f32 4))", 1, 24, "index takes 2 or 3 operands, got 1"),
    ("(cast f33 1)", 1, 7, "unknown dtype 'f33'"),
    ("(buffer 0 f32x 4)", 1, 11, "unknown dtype 'f32x'"),
    ("(add %a 1)", 1, 6, "unbound name %a"),
    ("%b = (add %b 1)\n%b", 1, 11, "unbound name %b"),
    ("%a = 1\n%a = 2\n%a", 2, 1, "%a is already bound (at 1:1)"),
    ("(const i8 300)", 1, 11, "constant 300 does not fit i8 (-128..127)"),
    ("(const u8 -1)", 1, 11, "constant -1 does not fit u8"),
    ("(add (cast i8 (var x 0 3)) 300)", 1, 28, "constant 300 does not fit i8"),
    ("(const f16 1e6)", 1, 12, "does not fit f16"),
    ("1e39", 1, 1, "does not fit f32"),
    ("(add 1 2) (add 3 4)", 1, 11, "unexpected '(' after the root expression"),
    ("(add 1 2)\n%a = 3", 2, 1, "unexpected '%a' after the root expression"),
    ("%a = (add 1 2)", 1, 15, "expected a root expression after the last binding"),
    ("(var x 5 3)", 1, 8, "var x: bad bounds, lower bound 5 > upper bound 3"),
    ("(var 1x 0 3)", 1, 6, "var: expected a name"),
    ("(var x 0 1.5)", 1, 10, "var: expected an integer upper bound, got '1.5'"),
    ("(add 1 = 2)", 1, 8, "unexpected '=' inside an expression"),
    ("%a-b = 3\n%a-b", 1, 1, "bad binding name '%a-b'"),
    ("(%a 1)", 1, 2, "expected an op name after '(', got '%a'"),
    ("(add x 1)", 1, 6, "expected an expression, got 'x'"),
    ("(add add 1)", 1, 6, "an op is written in parentheses"),
    ("(add (var x 0 3) 1.5)", 1, 18, "add: operand 2 has dtype f32, expected index like operand 1"),
    ("(mul (const i32 1)\n     (const i64 2))", 2, 6, "operand 2 has dtype i64, expected i32"),
    ("(idiv 1.5 2.0)", 1, 7, "idiv needs integers, got dtype f32"),
    ("(fdiv 1 2)", 1, 7, "fdiv needs floats, got dtype index"),
    ("(sub true false)", 1, 6, "sub needs numbers, got dtype bool"),
    ("(where 1 2 3)", 1, 8, "where: the condition must be bool, got index"),
    ("(load 5)", 1, 7, "load: expected an address"),
    ("(index (buffer 0 f32 4) 1.5)", 1, 25, "index: the index must be an integer, got f32"),
    ("(index (buffer 0 f32 4) 1 2)", 1, 27, "index: the gate must be bool"),
    ("(store (index (buffer 0 f32 4) 0) true)", 1, 35, "store: operand 2 has dtype bool"),
    ("(gep (vconst i32 1 2) 2)", 1, 23, "gep: lane 2 out of range for i32x2"),
    ("(range x 5)", 1, 8, "range: expected an integer range ID, got 'x'"),
    ("(range 0 1.5)", 1, 10, "range: END must be a scalar integer, got f32"),
    ("(range 0 4 vector)", 1, 12, "range 0: unknown kind 'vector'"),
    ("(range 0 4 2)", 1, 12, "range: expected a name"),
    ("(range 0 4 loop 1)", 1, 17, "range"),
    ("(reduce foo 1 (range 0 3))", 1, 9, "reduce: expected add, mul, max or min"),
    ("(end (sink) 5)", 1, 13, "end: expected a (range ...), got const"),
    ("(const i32 1.5)", 1, 12, "expected an integer of dtype i32"),
    ("(const bool 1)", 1, 13, "expected true or false"),
    ("(const void 0)", 1, 8, "dtype void is not allowed"),
    ("(buffer 0 f32* 4)", 1, 11, "expected a value dtype, got pointer f32*"),
    ("(buffer -1 f32 4)", 1, 9, "buffer: slot must be >= 0"),
    ("(vconst f32x4 1 2)", 1, 9, "vconst: expected a scalar dtype, got f32x4"),
    ("(cast f32x4 1.0)", 1, 13, "cast: cannot change the vector width"),
    ("(bitcast i16 1.5)", 1, 14, "bitcast: f32 and i16 differ in size"),
    ("(vectorize (vconst i32 1 2) 3)", 1, 12, "vectorize: elements must be scalars"),
    ("(lt (buffer 0 f32 4) 1)", 1, 22, "pointers and void have no constants"),
    ("(gep (vconst i32 1 2) (add 1 2))", 1, 23, "gep: expected a lane number, got an expression"),
]


@pytest.mark.parametrize("text, line, col, msg", MALFORMED)
def test_malformed(text, line, col, msg):
    with pytest.raises(ParseError) as info:
        parse(text)
    e = info.value
    assert msg in e.msg, e.msg
    assert (e.line, e.col) == (line, col), str(e)
    assert str(e) == f"{line}:{col}: {e.msg}"


def test_parse_error_is_a_value_error_and_pickles():
    with pytest.raises(ValueError):
        parse("(add 1")
    e = ParseError("boom", 3, 4)
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.msg, e2.line, e2.col, str(e2)) == ("boom", 3, 4, "3:4: boom")


def test_ir_errors_become_parse_errors():
    # a huge exact bound that the IR cannot build must come back as a ParseError, not a crash
    text = "(mul " * 700 + "(var x 0 99999999999999999999)" + " 99999999999999999999)" * 700
    try:
        parse(text)
    except ParseError as e:
        assert e.line == 1
    # (if the IR builds it, fine: the point is that nothing but ParseError escapes)


# ---------------------------------------------------------------------------
# deep graphs
def test_deep_chain_5000():
    g = UOp.var("x", 0, 10)
    for i in range(5000):
        g = (g + i) if i % 2 else (g % 7)
    text = to_sexpr(g)
    assert text.count("(") == 5001
    assert parse(text) is g
    nested = "(neg " * 5000 + "1" + ")" * 5000
    h = parse(nested)
    assert to_sexpr(h) == nested


def test_deep_shared_dag():
    d = UOp.var("x", 0, 9)
    for _ in range(3000):
        d = (d + d) % 5
    text = to_sexpr(d)
    assert len(text.splitlines()) == 3000
    assert parse(text) is d


# ---------------------------------------------------------------------------
# property: random graphs of every kind round-trip
INDEX_LIKE = [dtypes.index, dtypes.i8, dtypes.i16, dtypes.i32, dtypes.i64, dtypes.u8,
              dtypes.u16, dtypes.u32, dtypes.u64]
FLOATS = [dtypes.f16, dtypes.bf16, dtypes.f32, dtypes.f64]
SCALARS = INDEX_LIKE + FLOATS + [dtypes.bool]
SPECIAL_FLOATS = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-45, 65504.0, 3.4e38, 0.1]


def _value(draw, dt: DType):
    s = dt.scalar()
    if s.is_bool:
        return draw(st.booleans())
    if s.is_float:
        return draw(st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(allow_nan=True)))
    # index constants stay moderate: exact bounds of products of huge ints grow without limit
    lo, hi = (-(10 ** 6), 10 ** 6) if s.is_index else (int(s.min), int(s.max))
    return draw(st.one_of(st.integers(-9, 9), st.integers(lo, hi)))


@st.composite
def graphs(draw, max_steps: int = 20) -> UOp:
    """A random well-typed graph with sharing: ALU of every dtype, vectors, kernels."""
    pool: list[UOp] = []
    n_vars = draw(st.integers(0, 2))
    for i in range(n_vars):
        lo = draw(st.integers(-20, 20))
        pool.append(UOp.var("xyz"[i], lo, lo + draw(st.integers(0, 40))))
    pool.append(UOp.range(draw(st.integers(1, 16)), draw(st.integers(0, 3)),
                          draw(st.sampled_from(RANGE_KINDS))))
    if draw(st.booleans()):
        pool.append(UOp.special(draw(st.sampled_from(["gidx0", "lidx1"])),
                                draw(st.integers(1, 64))))
    for _ in range(draw(st.integers(1, 4))):
        dt = draw(st.sampled_from(SCALARS))
        if draw(st.integers(0, 3)) == 0:
            n = draw(st.integers(2, 4))
            pool.append(UOp.vconst(dt, [_value(draw, dt) for _ in range(n)]))
        else:
            dt = dt.vec(draw(st.sampled_from([1, 1, 1, 2, 4])))
            pool.append(UOp.const(dt, _value(draw, dt)))

    def pick(pred=lambda u: True):
        cands = [u for u in pool if pred(u)]
        return draw(st.sampled_from(cands)) if cands else None

    def same(a: UOp) -> UOp:
        b = pick(lambda u: u.dtype is a.dtype)
        if b is None or draw(st.booleans()):
            b = UOp.const(a.dtype, _value(draw, a.dtype))
        return b

    for _ in range(draw(st.integers(2, max_steps))):
        kind = draw(st.sampled_from(["bin", "bin", "bin", "cmp", "un", "where", "cast",
                                     "vec", "gep", "cat", "mulacc", "kernel", "reduce"]))
        a = pick(lambda u: not u.dtype.ptr and not u.dtype.is_void)
        dt = a.dtype
        if kind == "bin":
            ops = [Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN]
            if dt.is_int or dt.is_float:
                ops += [Ops.SUB]
            if dt.is_float:
                ops += [Ops.POW]
            if dt.is_int:
                ops += [Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR]
            if dt.is_int or dt.is_bool:
                ops += [Ops.AND, Ops.OR, Ops.XOR]
            if dt.is_float:
                ops += [Ops.FDIV]
            pool.append(UOp(draw(st.sampled_from(ops)), dt, (a, same(a))))
        elif kind == "cmp":
            op = draw(st.sampled_from(sorted(GroupOp.Comparison, key=lambda o: o.value)))
            pool.append(UOp(op, dtypes.bool.vec(dt.count), (a, same(a))))
        elif kind == "un":
            ops = [Ops.NOT] if dt.is_bool else [Ops.NEG, Ops.TRUNC, Ops.FLOOR]
            if dt.is_float:
                ops += [Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN]
            pool.append(UOp(draw(st.sampled_from(ops)), dt, (a,)))
        elif kind == "where":
            c = pick(lambda u: u.dtype is dtypes.bool) or UOp.const(dtypes.bool, True)
            f = same(a) if draw(st.integers(0, 3)) or dt is not dtypes.index else UOp.invalid()
            pool.append(UOp(Ops.WHERE, dt, (c, a, f)))
        elif kind == "cast":
            to = draw(st.sampled_from(SCALARS)).vec(dt.count)
            pool.append(UOp(Ops.CAST, to, (a,)))
        elif kind == "vec" and dt.count == 1:
            n = draw(st.integers(1, 4))
            pool.append(UOp(Ops.VECTORIZE, dt.vec(n), tuple(same(a) for _ in range(n))))
        elif kind == "gep":
            lanes = tuple(draw(st.lists(st.integers(0, dt.count - 1), min_size=1, max_size=4)))
            pool.append(UOp(Ops.GEP, dt.scalar().vec(len(lanes)), (a,), lanes))
        elif kind == "cat":
            elem = dt.scalar()
            b = pick(lambda u, e=elem: not u.dtype.ptr and u.dtype.scalar() is e) or a
            pool.append(UOp(Ops.CAT, dt.scalar().vec(dt.count + b.dtype.count), (a, b)))
        elif kind == "mulacc" and (dt.is_int or dt.is_float):
            pool.append(UOp(Ops.MULACC, dt, (a, same(a), same(a))))
        elif kind == "kernel":
            r = pick(lambda u: u.op is Ops.RANGE)
            buf = UOp.buffer(draw(st.integers(0, 3)), dt, draw(st.integers(1, 64)))
            gate = pick(lambda u: u.dtype is dtypes.bool)
            src = (buf, r) if gate is None or draw(st.booleans()) else (buf, r, gate)
            idx = UOp(Ops.INDEX, buf.dtype, src)
            ld = UOp(Ops.LOAD, dt, (idx,) if draw(st.booleans()) else (idx, same(a)))
            pool.append(ld)
            store = UOp(Ops.STORE, dtypes.void, (idx, same(a)))
            end = UOp(Ops.END, dtypes.void, (store, r))
            pool.append(UOp(Ops.SINK, dtypes.void, (end, UOp(Ops.AFTER, dt, (ld, end)))))
        elif kind == "reduce":
            r = pick(lambda u: u.op is Ops.RANGE)
            op = draw(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN]))
            pool.append(UOp(Ops.REDUCE, dt, (a, r), op))
    root = draw(st.integers(0, 3))
    if root == 0:  # everything built: nodes used inside others and at the top are shared
        return UOp(Ops.SINK, dtypes.void, tuple(pool))
    if root == 1:
        return UOp(Ops.SINK, dtypes.void, tuple(draw(st.lists(st.sampled_from(pool),
                                                              min_size=0, max_size=4))))
    return pool[-1] if root == 2 else draw(st.sampled_from(pool))


@settings(max_examples=150)
@given(graphs())
def test_roundtrip_random_graphs(g):
    roundtrip(g)


@settings(max_examples=150)
@given(st.one_of(int_exprs(max_depth=5), padded_index_exprs(), fixed_width_exprs()))
def test_roundtrip_index_strategies(g):
    roundtrip(g)


# ---------------------------------------------------------------------------
# fuzz: any text either parses (and round-trips) or raises ParseError, nothing else
VOCAB = ["add", "mul", "idiv", "mod", "where", "lt", "not", "cast", "gep", "const", "vconst",
         "var", "range", "special", "buffer", "invalid", "index", "load", "store", "end",
         "reduce", "sink", "vectorize", "cat", "bitcast", "(", "(", "(", ")", ")", ")", "=",
         "%a", "%b", "0", "1", "-1", "7", "300", "1.5", "-0.0", "nan", "inf", "true", "x",
         "i8", "u8", "i32", "f16", "f32", "f32x4", "f32*", "index", "bool", "void",
         "99999999999999999999", "1e400", "; c\n", "\n"]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(VOCAB), min_size=0, max_size=16), st.booleans(), st.booleans())
def test_token_soup_only_parse_errors(toks, wrap, bind):
    if wrap:
        toks = ["(", *toks, ")"]
    if bind:
        toks = ["%a", "=", *toks]
    text = " ".join(toks)
    try:
        g = parse(text)
    except ParseError as e:
        assert e.line >= 1 and e.col >= 1 and e.msg
        return
    roundtrip(g)


def test_corpus_mutations_only_parse_errors(corpus_lines):
    import random

    rng = random.Random(1234)
    for row in corpus_lines[::7]:
        text = row["expr"]
        for _ in range(5):
            i = rng.randrange(len(text))
            mutated = text[:i] + rng.choice(["", "(", ")", " 1", "%q", " (add"]) + text[i + 1:]
            try:
                g = parse(mutated)
            except ParseError:
                continue
            assert parse(to_sexpr(g)) is g


def test_an_integer_too_long_to_read_is_a_parse_error_at_its_place():
    with pytest.raises(ParseError, match="1:18: an integer of 5000 digits"):
        parse("(add (var x 0 9) " + "9" * 5000 + ")")
