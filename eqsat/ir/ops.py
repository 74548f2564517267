"""The operations of the UOp IR and their groupings."""

from __future__ import annotations

from enum import Enum, auto

__all__ = ["Ops", "GroupOp"]


class Ops(Enum):
    """Every op of the text format (docs/format.md) and of the rules (docs/rules.md)."""

    # leaves
    CONST = auto()
    VCONST = auto()
    DEFINE_VAR = auto()
    RANGE = auto()
    SPECIAL = auto()
    DEFINE_GLOBAL = auto()
    DEFINE_LOCAL = auto()
    DEFINE_REG = auto()
    INVALID = auto()
    NOOP = auto()
    # unary
    NEG = auto()
    RECIP = auto()
    SQRT = auto()
    EXP2 = auto()
    LOG2 = auto()
    SIN = auto()
    TRUNC = auto()
    FLOOR = auto()
    CEIL = auto()
    ROUND = auto()
    NOT = auto()
    # binary
    ADD = auto()
    SUB = auto()
    MUL = auto()
    IDIV = auto()
    MOD = auto()
    FLOORDIV = auto()  # quotient rounded toward -inf (tinygrad's //)
    FLOORMOD = auto()  # remainder with the divisor's sign (tinygrad's %)
    FDIV = auto()
    MAX = auto()
    MIN = auto()
    POW = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    SHL = auto()
    SHR = auto()
    MULHI = auto()  # high half of a widening multiply (lowering only)
    LT = auto()
    LE = auto()
    GT = auto()
    GE = auto()
    EQ = auto()
    NE = auto()
    # ternary
    WHERE = auto()
    MULACC = auto()
    # conversion
    CAST = auto()
    BITCAST = auto()
    # vectors
    VECTORIZE = auto()
    GEP = auto()
    CAT = auto()
    PTRCAT = auto()
    UNROLL = auto()
    WMMA = auto()
    # memory
    INDEX = auto()
    LOAD = auto()
    STORE = auto()
    # structure
    END = auto()
    REDUCE = auto()
    AFTER = auto()
    SINK = auto()
    BIND = auto()
    IF = auto()
    ENDIF = auto()

    def __repr__(self) -> str:
        return f"Ops.{self.name}"


class GroupOp:
    """Sets of ops that rules and analyses treat alike."""

    Unary = frozenset({Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN,
                       Ops.TRUNC, Ops.FLOOR, Ops.CEIL, Ops.ROUND, Ops.NOT})
    Comparison = frozenset({Ops.LT, Ops.LE, Ops.GT, Ops.GE, Ops.EQ, Ops.NE})
    Binary = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.FLOORDIV,
                        Ops.FLOORMOD, Ops.FDIV, Ops.MAX, Ops.MIN, Ops.POW, Ops.AND, Ops.OR,
                        Ops.XOR, Ops.SHL, Ops.SHR, Ops.MULHI}) | Comparison
    #: the integer divisions: undefined for a divisor of 0 (C's truncating idiv/mod and
    #: the floor forms)
    IntDiv = frozenset({Ops.IDIV, Ops.MOD, Ops.FLOORDIV, Ops.FLOORMOD})
    Ternary = frozenset({Ops.WHERE, Ops.MULACC})
    ALU = Unary | Binary | Ternary
    Commutative = frozenset({Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN, Ops.EQ, Ops.NE, Ops.AND,
                             Ops.OR, Ops.XOR})
    Associative = frozenset({Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.MAX, Ops.MIN})
    Leaf = frozenset({Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.DEFINE_GLOBAL,
                      Ops.DEFINE_LOCAL, Ops.DEFINE_REG, Ops.INVALID, Ops.NOOP})
    Idempotent = frozenset({Ops.AND, Ops.OR, Ops.MAX, Ops.MIN})
    Void = frozenset({Ops.STORE, Ops.END, Ops.SINK, Ops.NOOP, Ops.IF, Ops.ENDIF})
