"""Data types of the UOp IR: scalars, vectors and pointers.

Every dtype is interned: ``DType.parse("f32x4") is DType.parse("f32x4")``.
``index`` is the unbounded mathematical integer of index arithmetic; the
fixed-width integers wrap two's-complement at their width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

__all__ = [
    "DType",
    "dtypes",
    "can_safe_cast",
    "least_upper_dtype",
    "DTypeError",
]


class DTypeError(ValueError):
    """A dtype name or combination that the IR does not accept."""


@dataclass(frozen=True, slots=True)
class DType:
    """A scalar (``count == 1``), a vector (``count > 1``) or a pointer (``ptr``).

    ``kind`` is one of ``index``, ``bool``, ``int``, ``uint``, ``float``, ``void``.
    """

    kind: str
    bits: int
    name: str
    count: int = 1
    ptr: bool = False

    # ---- construction -------------------------------------------------
    @staticmethod
    @cache
    def parse(text: str) -> DType:
        """Parse a dtype name of the text format (``i32``, ``f32x4``, ``f32*``)."""
        ptr = text.endswith("*")
        body = text[:-1] if ptr else text
        count = 1
        if "x" in body and body not in _SCALARS:
            base, _, n = body.rpartition("x")
            if not n.isdigit() or base not in _SCALARS or int(n) < 1:
                raise DTypeError(f"unknown dtype {text!r}")
            body, count = base, int(n)
        if body not in _SCALARS:
            raise DTypeError(f"unknown dtype {text!r}")
        dt = _SCALARS[body]
        if count > 1:
            dt = dt.vec(count)
        return dt.ptr_to() if ptr else dt

    def vec(self, count: int) -> DType:
        """The vector of ``count`` elements of this scalar dtype."""
        if count == 1:
            return self.scalar()
        if self.count != 1 or self.ptr:
            raise DTypeError(f"cannot make a vector of {self}")
        return _intern(DType(self.kind, self.bits, self.name, count, False))

    def scalar(self) -> DType:
        """The element dtype (for a pointer: the pointed-to element)."""
        return _SCALARS[self.name]

    def ptr_to(self) -> DType:
        """The pointer to elements of this dtype."""
        return _intern(DType(self.kind, self.bits, self.name, self.count, True))

    def base(self) -> DType:
        """For a pointer, the element dtype it points to; else itself."""
        if not self.ptr:
            return self
        return _intern(DType(self.kind, self.bits, self.name, self.count, False))

    # ---- predicates ---------------------------------------------------
    @property
    def is_int(self) -> bool:
        """True for index, signed and unsigned integers (not bool)."""
        return not self.ptr and self.kind in ("index", "int", "uint")

    @property
    def is_float(self) -> bool:
        return not self.ptr and self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return not self.ptr and self.kind == "bool"

    @property
    def is_index(self) -> bool:
        return not self.ptr and self.kind == "index"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def is_void(self) -> bool:
        return self.kind == "void"

    @property
    def is_fixed_int(self) -> bool:
        """A fixed-width integer that wraps (not index, not bool)."""
        return not self.ptr and self.kind in ("int", "uint")

    # ---- value ranges ---------------------------------------------------
    @property
    def min(self) -> int | float:
        """The lowest value of the scalar dtype (``-inf`` for index and floats)."""
        if self.kind == "int":
            return -(1 << (self.bits - 1))
        if self.kind == "uint":
            return 0
        if self.kind == "bool":
            return False
        return -math.inf

    @property
    def max(self) -> int | float:
        """The highest value of the scalar dtype (``inf`` for index and floats)."""
        if self.kind == "int":
            return (1 << (self.bits - 1)) - 1
        if self.kind == "uint":
            return (1 << self.bits) - 1
        if self.kind == "bool":
            return True
        return math.inf

    @property
    def itemsize(self) -> int:
        """Bytes of one element times the vector count (pointers: 8)."""
        if self.ptr:
            return 8
        return max(1, self.bits // 8) * self.count

    def __str__(self) -> str:
        s = self.name + (f"x{self.count}" if self.count > 1 else "")
        return s + ("*" if self.ptr else "")

    def __repr__(self) -> str:
        return f"dtypes.parse({str(self)!r})" if not self.is_void else "dtypes.void"


_INTERN: dict[DType, DType] = {}


def _intern(dt: DType) -> DType:
    return _INTERN.setdefault(dt, dt)


_SCALARS: dict[str, DType] = {
    d.name: _intern(d)
    for d in (
        DType("index", 64, "index"),
        DType("bool", 1, "bool"),
        DType("int", 8, "i8"),
        DType("int", 16, "i16"),
        DType("int", 32, "i32"),
        DType("int", 64, "i64"),
        DType("uint", 8, "u8"),
        DType("uint", 16, "u16"),
        DType("uint", 32, "u32"),
        DType("uint", 64, "u64"),
        DType("float", 16, "f16"),
        DType("float", 16, "bf16"),
        DType("float", 32, "f32"),
        DType("float", 64, "f64"),
        DType("void", 0, "void"),
    )
}


class dtypes:  # noqa: N801 - mirrors tinygrad's namespace
    """Named scalar dtypes: ``dtypes.index``, ``dtypes.i32``, ..."""

    index = _SCALARS["index"]
    bool = _SCALARS["bool"]
    i8 = _SCALARS["i8"]
    i16 = _SCALARS["i16"]
    i32 = _SCALARS["i32"]
    i64 = _SCALARS["i64"]
    u8 = _SCALARS["u8"]
    u16 = _SCALARS["u16"]
    u32 = _SCALARS["u32"]
    u64 = _SCALARS["u64"]
    f16 = _SCALARS["f16"]
    bf16 = _SCALARS["bf16"]
    f32 = _SCALARS["f32"]
    f64 = _SCALARS["f64"]
    void = _SCALARS["void"]
    parse = staticmethod(DType.parse)
    scalars = tuple(v for k, v in _SCALARS.items() if k != "void")


# ---- safe casts (docs/rules.md, seed 000 §6) ----------------------------
# can_safe_cast(src, dst): every value of src is preserved by dst.
_SAFE: dict[str, tuple[str, ...]] = {
    "f64": ("f32", "f16", "bf16", "i8", "i16", "i32", "u8", "u16", "u32"),
    "f32": ("f16", "bf16", "i8", "i16", "u8", "u16"),
    "u64": ("u32", "u16", "u8"),
    "u32": ("u16", "u8"),
    "u16": ("u8",),
    "i64": ("u32", "u16", "u8", "i32", "i16", "i8"),
    "i32": ("u16", "u8", "i16", "i8"),
    "i16": ("u8", "i8"),
    "index": ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"),
}


def can_safe_cast(src: DType, dst: DType) -> bool:
    """True when casting any value of ``src`` to ``dst`` loses nothing.

    ``CAST(CAST(x, a), b) -> x`` needs ``can_safe_cast(x.dtype, a)``: the
    intermediate ``a`` must hold every value of ``x``. ``bool`` goes anywhere;
    ``index`` holds every integer.
    """
    src, dst = src.scalar() if not src.ptr else src, dst.scalar() if not dst.ptr else dst
    if src == dst or src == dtypes.bool:
        return True
    return src.name in _SAFE.get(dst.name, ())


# ---- type promotion (docs/rules.md, seed 000 §6, seed 003 §5) ----------
_PROMO: dict[str, tuple[str, ...]] = {
    "bool": ("i8", "u8"),
    "i8": ("i16",),
    "i16": ("i32",),
    "i32": ("i64",),
    "i64": ("index",),
    "u8": ("i16", "u16"),
    "u16": ("i32", "u32"),
    "u32": ("i64", "u64"),
    "u64": ("index",),
    "index": ("f16", "bf16"),
    "f16": ("f32",),
    "bf16": ("f32",),
    "f32": ("f64",),
    "f64": (),
}
_PRIORITY = ["bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "index",
             "f16", "bf16", "f32", "f64"]


@cache
def _parents(name: str) -> frozenset[str]:
    out = {name}
    for p in _PROMO[name]:
        out |= _parents(p)
    return frozenset(out)


def least_upper_dtype(*ds: DType) -> DType:
    """The lowest dtype every one of ``ds`` promotes to (tinygrad's lattice).

    ``least_upper_dtype(i32, i64) == i64``; ``least_upper_dtype(u32, i32) == i64``.
    Vector counts must agree; the result has that count.
    """
    if not ds:
        raise DTypeError("least_upper_dtype needs at least one dtype")
    counts = {d.count for d in ds}
    if len(counts) != 1 or any(d.ptr or d.is_void for d in ds):
        raise DTypeError(f"no common dtype for {', '.join(map(str, ds))}")
    common = frozenset.intersection(*(_parents(d.name) for d in ds))
    best = min(common, key=_PRIORITY.index)
    return _SCALARS[best].vec(counts.pop())
