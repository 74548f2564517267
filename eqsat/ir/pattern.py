"""The ordered pattern matcher and graph_rewrite (the baseline engine).

A :class:`Rule` is a named pattern with an explicit guard and a builder::

    Rule("add_zero", "x+0 -> x", UPat(Ops.ADD, src=[UPat.var("x"), UPat.cvar("c")]),
         build=lambda x: x, guard=lambda c: c.arg == 0)

``src=[...]`` (a list) matches a commutative op in both operand orders;
``src=(...)`` (a tuple) matches in order. A name bound twice must bind the same
(hash-consed) node. Guards and builders receive the bindings they name as
keyword arguments. A :class:`PatternMatcher` tries its rules in order; the
first whose guard holds and whose builder returns a node wins.
"""

from __future__ import annotations

import builtins
import functools
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import CodeType, FunctionType
from typing import Any, ClassVar, NamedTuple

from eqsat.ir.dtype import DType
from eqsat.ir.ops import Ops
from eqsat.ir.uop import UOp

__all__ = ["UPat", "Rule", "PatternMatcher", "graph_rewrite", "RewriteLimitError"]

_ANY = object()


class RewriteLimitError(RuntimeError):
    """graph_rewrite rewrote one node more than the safety limit allows."""


class RewriteStoppedError(RuntimeError):
    """graph_rewrite's ``stop`` check reported a hard limit (``reason``: ``"time"`` or
    ``"memory"``) before the rewrite reached its fixed point."""

    def __init__(self, reason: str):
        super().__init__(f"graph_rewrite stopped: {reason} limit")
        self.reason = reason


class UPat:
    """A pattern over UOps: op set, dtype set, sources, arg and a binding name."""

    __slots__ = ("ops", "dtypes", "src", "commutative", "arg", "name", "any_len", "pred", "_fn")

    def __init__(self, op: Ops | Iterable[Ops] | None = None,
                 dtype: DType | Iterable[DType] | None = None,
                 src: tuple[UPat, ...] | list[UPat] | UPat | None = None,
                 arg: Any = _ANY, name: str | None = None, any_len: bool = False,
                 pred: Callable[[UOp], bool] | None = None):
        self.ops = None if op is None else frozenset([op] if isinstance(op, Ops) else op)
        self.dtypes = None if dtype is None else frozenset(
            [dtype] if isinstance(dtype, DType) else dtype)
        self.commutative = isinstance(src, list)
        if isinstance(src, UPat):
            src = (src,)
            any_len = True  # a single UPat matches every source
        self.src = None if src is None else tuple(src)
        self.arg = arg
        self.name = name
        self.any_len = any_len
        self.pred = pred
        self._fn: Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]] | None = None

    # ---- shorthands ------------------------------------------------------
    @staticmethod
    def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat:
        """Any node."""
        return UPat(dtype=dtype, name=name)

    @staticmethod
    def cvar(name: str | None = None, dtype: DType | Iterable[DType] | None = None,
             vec: bool = True) -> UPat:
        """A constant (CONST, or VCONST when ``vec``)."""
        return UPat((Ops.CONST, Ops.VCONST) if vec else Ops.CONST, dtype=dtype, name=name)

    @staticmethod
    def const(value: Any, name: str | None = None, dtype: DType | None = None) -> UPat:
        """A scalar CONST equal to ``value`` (0 matches 0.0 and False too)."""
        return UPat(Ops.CONST, dtype=dtype, name=name,
                    pred=lambda u: u.arg == value and type(u.arg) is not bool
                    or (isinstance(value, bool) and u.arg is value))

    def __repr__(self) -> str:
        ops = "|".join(sorted(o.name for o in self.ops)) if self.ops else "*"
        return f"UPat({ops}{' ' + self.name if self.name else ''})"

    # ---- matching -----------------------------------------------------------
    def matcher(self) -> Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]]:
        """This pattern compiled to a function ``(u, env) -> [bindings]`` (cached).

        Same semantics as :meth:`match`, several times faster: one generated function
        (:func:`_generate`), or closures (:func:`_compile`) for a variadic pattern; no
        generators, checks specialized to the fields the pattern sets.
        """
        if self._fn is None:
            self._fn = _generate(self) or _compile(self)
        return self._fn

    def match(self, u: UOp, env: dict[str, UOp]) -> Iterator[dict[str, UOp]]:
        """Every binding extending ``env`` under which this pattern matches ``u``."""
        yield from self.matcher()(u, env)

    def _match_slow(self, u: UOp, env: dict[str, UOp]) -> Iterator[dict[str, UOp]]:
        """The reference (generator) matcher :func:`_compile` must agree with."""
        if self.ops is not None and u.op not in self.ops:
            return
        if self.dtypes is not None and u.dtype not in self.dtypes:
            return
        if self.arg is not _ANY and u.arg != self.arg:
            return
        if self.pred is not None and not self.pred(u):
            return
        if self.name is not None:
            bound = env.get(self.name)
            if bound is not None:
                if bound is not u:
                    return
            else:
                env = {**env, self.name: u}
        if self.src is None:
            yield env
            return
        if self.any_len and len(self.src) == 1:
            yield from _match_all(self.src[0], u.src, env)
            return
        if len(u.src) != len(self.src) and not (self.any_len and len(u.src) >= len(self.src)):
            return
        orders = [self.src]
        if self.commutative and len(self.src) == 2:
            orders.append(self.src[::-1])
        for pats in orders:
            yield from _match_seq(pats, u.src, env)


def _match_seq(pats: tuple[UPat, ...], srcs: tuple[UOp, ...],
               env: dict[str, UOp]) -> Iterator[dict[str, UOp]]:
    if not pats:
        yield env
        return
    for e in pats[0]._match_slow(srcs[0], env):
        yield from _match_seq(pats[1:], srcs[1:], e)


def _match_all(pat: UPat, srcs: tuple[UOp, ...], env: dict[str, UOp]) -> Iterator[dict[str, UOp]]:
    if not srcs:
        yield env
        return
    for e in pat._match_slow(srcs[0], env):
        yield from _match_all(pat, srcs[1:], e)


_Env = dict[str, UOp]
_MatchFn = Callable[[UOp, _Env], list[_Env]]


def _seq(fns: tuple[_MatchFn, ...], srcs: tuple[UOp, ...], env: _Env) -> list[_Env]:
    envs = [env]
    for fn, s in zip(fns, srcs, strict=False):
        if len(envs) == 1:
            envs = fn(s, envs[0])
        else:
            nxt: list[_Env] = []
            for e in envs:
                nxt.extend(fn(s, e))
            envs = nxt
        if not envs:
            return envs
    return envs


def _compile(p: UPat) -> _MatchFn:
    """Compile ``p`` into a list-returning matcher (see :meth:`UPat.matcher`)."""
    ops, dts, arg, pred, name = p.ops, p.dtypes, p.arg, p.pred, p.name
    has_arg = arg is not _ANY
    # op membership by the enum's int value: hashing an Enum member runs Python code
    op_vals = None if ops is None else frozenset(o._value_ for o in ops)
    plain = dts is None and not has_arg and pred is None

    if plain and name is None:
        def head(u: UOp, env: _Env) -> _Env | None:
            """The node-local checks and the binding of ``name``; None = no match."""
            if op_vals is not None and u.op._value_ not in op_vals:
                return None
            return env
    else:
        def head(u: UOp, env: _Env) -> _Env | None:
            """The node-local checks and the binding of ``name``; None = no match."""
            if op_vals is not None and u.op._value_ not in op_vals:
                return None
            if dts is not None and u.dtype not in dts:
                return None
            if has_arg and u.arg != arg:
                return None
            if pred is not None and not pred(u):
                return None
            if name is not None:
                bound = env.get(name)
                if bound is not None:
                    return env if bound is u else None
                env = {**env, name: u}
            return env

    if p.src is None:
        if ops is None and dts is None and not has_arg and pred is None:
            if name is None:
                return lambda u, env: [env]

            def bind(u: UOp, env: _Env) -> list[_Env]:
                bound = env.get(name)
                if bound is not None:
                    return [env] if bound is u else []
                return [{**env, name: u}]
            return bind

        def leaf(u: UOp, env: _Env) -> list[_Env]:
            e = head(u, env)
            return [] if e is None else [e]
        return leaf

    fns = tuple(c.matcher() for c in p.src)
    n = len(fns)
    if p.any_len and n == 1:
        one = fns[0]

        def every(u: UOp, env: _Env) -> list[_Env]:
            e = head(u, env)
            if e is None:
                return []
            return _seq((one,) * len(u.src), u.src, e)
        return every
    any_len = p.any_len
    if p.commutative and n == 2:
        f0, f1 = fns

        def comm(u: UOp, env: _Env) -> list[_Env]:
            e = head(u, env)
            if e is None:
                return []
            src = u.src
            if len(src) != 2 and not (any_len and len(src) >= 2):
                return []
            a, b = src[0], src[1]
            out = []
            for e1 in f0(a, e):
                out.extend(f1(b, e1))
            for e1 in f0(b, e):
                out.extend(f1(a, e1))
            return out
        return comm

    def ordered(u: UOp, env: _Env) -> list[_Env]:
        e = head(u, env)
        if e is None:
            return []
        src = u.src
        if len(src) != n and not (any_len and len(src) >= n):
            return []
        return _seq(fns, src, e)
    return ordered


class _UnsupportedError(Exception):
    """A pattern :func:`_generate` does not write as one function."""


_ONCE = (None,)
#: the most dtypes of a pattern's set :func:`_generate` tests by identity
_DTYPES_BY_IDENTITY = 3
#: the globals of every function :func:`_generate` makes (the pattern's values are its
#: parameters' defaults: local reads)
_GEN_GLOBALS: dict[str, Any] = {"__builtins__": builtins}


def _generate(p: UPat, rule: Rule | None = None) -> Callable[..., Any] | None:
    """``p``'s matcher (as :func:`_compile` makes it) written as one Python function,
    None for a pattern with a variadic source (``src=UPat``). The pattern's nodes become
    nested checks: a commutative source pair a loop over its two orders, a failed check
    a ``continue`` to the innermost choice, each full match one binding dict, built in
    the order the names are first bound. The same bindings, in the same order, as the
    closures of :func:`_compile`, without a call per pattern node.

    With ``rule`` (whose pattern is ``p``): its :meth:`Rule.apply` instead, ``(u) ->
    rewrite or None``: at each match, in the same order, the guard and the build called
    with the bindings (by position where :func:`_kwargs_caller` passes them so), the
    first rewrite returned. That function does not test the op of ``u`` itself: its
    callers have (:meth:`PatternMatcher.candidates` keeps a rule for the ops of its
    pattern; :meth:`Rule.apply` tests them first)."""
    consts: dict[str, Any] = {"K0": _ONCE}
    lines = ["", "    out = []" if rule is None else "", "    for _ in K0:"]
    names: list[str] = []  # first-bound order
    count = [0]

    def const(v: Any) -> str:
        k = f"K{len(consts)}"
        consts[k] = v
        return k

    def fresh() -> str:
        count[0] += 1
        return f"n{count[0]}"

    def node(q: UPat, var: str, ind: int) -> int:
        pad = " " * ind
        if q.ops is not None and (rule is None or q is not p):
            lines.append(f"{pad}if {var}.op._value_ not in "
                         f"{const(frozenset(o._value_ for o in q.ops))}: continue")
        if q.dtypes is not None:
            # each dtype by identity first (dtypes are interned): the set's hash (a
            # Python-level dataclass hash) only for a dtype that is none of them
            same = "".join(f"{var}.dtype is not {const(d)} and "
                           for d in sorted(q.dtypes, key=str)[:_DTYPES_BY_IDENTITY])
            lines.append(f"{pad}if {same}{var}.dtype not in {const(q.dtypes)}: continue")
        if q.arg is not _ANY:
            lines.append(f"{pad}if {var}.arg != {const(q.arg)}: continue")
        if q.pred is not None:
            lines.append(f"{pad}if not {const(q.pred)}({var}): continue")
        if q.name is not None:
            v = f"v_{names.index(q.name) if q.name in names else len(names)}"
            if q.name in names:
                lines.append(f"{pad}if {var} is not {v}: continue")
            elif rule is not None:  # (nothing bound before the match)
                names.append(q.name)
                lines.append(f"{pad}{v} = {var}")
            else:
                names.append(q.name)
                lines.append(f"{pad}{v} = env.get({const(q.name)})")
                lines.append(f"{pad}if {v} is None: {v} = {var}")
                lines.append(f"{pad}elif {v} is not {var}: continue")
        if q.src is None:
            return ind
        n = len(q.src)
        if q.any_len and n == 1:
            raise _UnsupportedError
        s = fresh()
        lines.append(f"{pad}{s} = {var}.src")
        lines.append(f"{pad}if len({s}) {'<' if q.any_len else '!='} {n}: continue")
        if q.commutative and n == 2:
            a, b = fresh(), fresh()
            lines.append(f"{pad}for {a}, {b} in (({s}[0], {s}[1]), ({s}[1], {s}[0])):")
            ind = node(q.src[0], a, ind + 4)
            return node(q.src[1], b, ind)
        for i, c in enumerate(q.src):
            k = fresh()
            lines.append(f"{' ' * ind}{k} = {s}[{i}]")
            ind = node(c, k, ind)
        return ind

    try:
        ind = node(p, "u", 8)
    except _UnsupportedError:
        return None
    pad = " " * ind

    def binds() -> str:
        return ", ".join(f"{const(n)}: v_{i}" for i, n in enumerate(names))
    if rule is None:
        lines.append(f"{pad}out.append({{**env, {binds()}}})" if names else
                     f"{pad}out.append(env)")
        lines.append("    return out")
    else:
        def call(fn: Callable[..., Any], caller: Callable[..., Any]) -> str:
            params = _positional(fn, names)
            if params is None and _keywords_only(fn):  # (``**b``: every binding, no lambda)
                return f"{const(fn)}(**{{{binds()}}})"
            if params is None:  # (as _kwargs_caller calls it, with the bindings' dict)
                return f"{const(caller)}({{{binds()}}})"
            return f"{const(fn)}({', '.join(f'v_{names.index(q)}' for q in params)})"
        if rule.guard is not None:
            lines.append(f"{pad}if not {call(rule.guard, rule._call_guard)}: continue")
        lines.append(f"{pad}o = {call(rule.build, rule._call_build)}")
        lines.append(f"{pad}if o is not None and o is not u: return o")
        lines.append("    return None")
    # the text names the pattern's values only as K<i> (its shape): patterns of one
    # shape share the compiled code, each function with its own values
    args = ", ".join(f"{k}=None" for k in consts)
    lines[0] = f"def match(u, env, {args}):" if rule is None else f"def apply(u, {args}):"
    text = "\n".join(x for x in lines if x)
    code = _SHAPES.get(text)
    if code is None:
        scope: dict[str, Any] = {}
        exec(text, _GEN_GLOBALS, scope)  # noqa: S102 (the text is made above, from the pattern)
        code = _SHAPES[text] = next(iter(scope.values())).__code__
    return FunctionType(code, _GEN_GLOBALS, code.co_name, tuple(consts.values()))


class _Param(NamedTuple):
    """A parameter as :func:`_parameters` reads it (``inspect.Parameter``'s fields)."""

    name: str
    kind: inspect._ParameterKind
    default: Any


_P = inspect.Parameter
_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


@functools.lru_cache(maxsize=8)
def _parameters(fn: Callable[..., Any]) -> Mapping[str, _Param | inspect.Parameter]:
    """``fn``'s parameters. A rule's guard and build are each read four or five times as
    the rule is made (its checks, its callers, its generated ``apply``): the last few
    functions' kept, so that each is read once. A plain function's (no ``__wrapped__``
    nor ``__signature__``) are read from its code as ``inspect.signature`` reads them,
    without its general machinery (the rules' modules make about 600 of them)."""
    if type(fn) is not FunctionType or hasattr(fn, "__wrapped__") or \
            hasattr(fn, "__signature__"):
        return inspect.signature(fn).parameters
    co = fn.__code__
    names, npos, nkw = co.co_varnames, co.co_argcount, co.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    first_default = npos - len(defaults)
    out: list[_Param] = [
        _Param(n, _P.POSITIONAL_ONLY if i < co.co_posonlyargcount else _P.POSITIONAL_OR_KEYWORD,
               defaults[i - first_default] if i >= first_default else _P.empty)
        for i, n in enumerate(names[:npos])]
    rest = npos + nkw
    if co.co_flags & _CO_VARARGS:
        out.append(_Param(names[rest], _P.VAR_POSITIONAL, _P.empty))
        rest += 1
    out += [_Param(n, _P.KEYWORD_ONLY, kwdefaults.get(n, _P.empty))
            for n in names[npos:npos + nkw]]
    if co.co_flags & _CO_VARKEYWORDS:
        out.append(_Param(names[rest], _P.VAR_KEYWORD, _P.empty))
    return {p.name: p for p in out}


def _positional(fn: Callable[..., Any], names: list[str]) -> tuple[str, ...] | None:
    """``fn``'s parameters when :func:`_kwargs_caller` passes a match binding ``names``
    to it by position (every parameter positional-or-keyword and bound), else None."""
    params = _parameters(fn)
    if all(q.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and q.name in names
           for q in params.values()):
        return tuple(params)
    return None


def _keywords_only(fn: Callable[..., Any]) -> bool:
    """``fn`` takes only ``**kw``: :func:`_kwargs_caller` passes it every binding."""
    params = list(_parameters(fn).values())
    return len(params) == 1 and params[0].kind is inspect.Parameter.VAR_KEYWORD


#: the code of each pattern shape :func:`_generate` wrote (a shape's text -> its code;
#: a function of the shape alone, kept for the patterns of the same shape)
_SHAPES: dict[str, CodeType] = {}


def _child_ops_check(p: UPat) -> Callable[[tuple[UOp, ...]], bool] | None:
    """A test of a node's sources that fails only where ``p`` cannot match them: the
    number of sources and the op (by value) of each source the pattern names ops for,
    in the pattern's order or, commutative, in either; None when it names none. It
    checks what :func:`_compile`'s matcher checks first, without building a binding
    (tinygrad's early reject, place by place)."""
    if p.src is None or (p.any_len and len(p.src) == 1):
        return None
    sets = tuple(None if c.ops is None else frozenset(o._value_ for o in c.ops)
                 for c in p.src)
    n, any_len = len(sets), p.any_len
    named = [(i, s) for i, s in enumerate(sets) if s is not None]
    if not named:
        return None
    if p.commutative and n == 2:
        s0, s1 = sets
        if s0 is None or s1 is None:
            one = s0 if s0 is not None else s1

            def either(src: tuple[UOp, ...]) -> bool:
                if len(src) != 2 and not (any_len and len(src) >= 2):
                    return False
                return src[0].op._value_ in one or src[1].op._value_ in one
            return either

        def both(src: tuple[UOp, ...]) -> bool:
            if len(src) != 2 and not (any_len and len(src) >= 2):
                return False
            a, b = src[0].op._value_, src[1].op._value_
            return (a in s0 and b in s1) or (b in s0 and a in s1)
        return both

    def ordered(src: tuple[UOp, ...]) -> bool:
        if len(src) != n and not (any_len and len(src) >= n):
            return False
        for i, s in named:
            if src[i].op._value_ not in s:
                return False
        return True
    return ordered


def _pattern_names(p: UPat) -> set[str]:
    out = {p.name} if p.name is not None else set()
    for c in p.src or ():
        out |= _pattern_names(c)
    return out


def _check_params(rule: str, what: str, fn: Callable[..., Any], names: set[str]) -> None:
    """Every parameter ``fn`` needs must be a name the pattern binds."""
    for p in _parameters(fn).values():
        if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            continue
        if p.default is inspect.Parameter.empty and p.name not in names:
            raise ValueError(f"rule {rule!r}: {what} parameter {p.name!r} is not bound by the "
                             f"pattern (it binds {', '.join(sorted(names)) or 'nothing'})")


def _kwargs_caller(fn: Callable[..., Any]) -> Callable[[dict[str, UOp]], Any]:
    """Call ``fn`` with only the bindings it names (``**kw`` takes them all). When
    every parameter can be passed by position, a match that binds them all (most do:
    only a variadic pattern's child binds nothing on a node without sources) passes
    them so, without building a keyword dict."""
    params = _parameters(fn)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return lambda b: fn(**b)
    names = tuple(params)
    if not all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params.values()):
        return lambda b: fn(**{n: b[n] for n in names if n in b})

    def call(b: dict[str, UOp]) -> Any:
        try:
            args = [b[n] for n in names]
        except KeyError:  # (a name left unbound: its parameter's default)
            return fn(**{n: b[n] for n in names if n in b})
        return fn(*args)
    return call


@dataclass(eq=False)
class Rule:
    """A named, commented, guarded rewrite of the ordered matcher.

    ``identity`` is the one-line infix identity (``(x//c1)//c2 -> x//(c1*c2)``);
    ``guard`` (optional) must hold for the rewrite to apply; ``build`` returns
    the replacement, or None when the match is not a rewrite after all
    (reserved for procedural rules such as ``fold_divmod_general``).
    """

    name: str
    identity: str
    pattern: UPat
    build: Callable[..., UOp | None]
    guard: Callable[..., bool] | None = None
    group: str = ""
    #: rules of one family the matcher may try as one: given a run of them (two or
    #: more, back to back in a candidate list, each with this same ``joint``), the
    #: run's function ``(u) -> (rewrite, the rule of the run that made it) or None``,
    #: the first rewrite of the run in its order as each rule's :meth:`apply` would
    #: give it (a family whose rules share their checks makes them once)
    joint: Callable[[tuple[Rule, ...]], Callable[[UOp], tuple[UOp, Rule] | None]] | None = None
    _call_build: Callable[[dict[str, UOp]], Any] = field(init=False, repr=False)
    _call_guard: Callable[[dict[str, UOp]], Any] | None = field(init=False, repr=False)
    #: the closures' matcher, made only for a variadic pattern (``_apply`` is None)
    _match: Callable[[UOp, dict[str, UOp]], list[dict[str, UOp]]] | None = field(
        init=False, repr=False, default=None)
    _srcs_ok: Callable[[tuple[UOp, ...]], bool] | None = field(init=False, repr=False)
    #: the ops (by value) of the pattern's root, which ``_apply`` does not test (None:
    #: any op)
    _root_ops: frozenset[int] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = _pattern_names(self.pattern)
        _check_params(self.name, "build", self.build, names)
        if self.guard is not None:
            _check_params(self.name, "guard", self.guard, names)
        self._call_build = _kwargs_caller(self.build)
        self._call_guard = _kwargs_caller(self.guard) if self.guard is not None else None
        self._srcs_ok = _child_ops_check(self.pattern)
        ops = self.pattern.ops
        self._root_ops = None if ops is None else frozenset(o._value_ for o in ops)

    #: the generated :meth:`apply` (:func:`_generate`), written into the rule at its
    #: first read (a matcher reads it when a node first makes the rule a candidate: a
    #: process's first expressions try a part of the rules); None for a variadic
    #: pattern. (On the class, not a field: ``_WrittenWhenRead``.)
    _apply: ClassVar[Any]

    def _write_apply(self) -> Callable[[UOp], UOp | None] | None:
        fn = _generate(self.pattern, self)  # (a pure function of the rule: any first read)
        if fn is None:  # (a variadic pattern: its bindings from the closures)
            self._match = self.pattern.matcher()
        vars(self)["_apply"] = fn
        return fn

    def apply(self, u: UOp) -> UOp | None:
        """The rewrite of ``u`` by this rule, or None."""
        if self._apply is not None:
            ops = self._root_ops
            if ops is not None and u.op._value_ not in ops:
                return None
            return self._apply(u)
        assert self._match is not None
        for b in self._match(u, {}):
            if self._call_guard is not None and not self._call_guard(b):
                continue
            out = self._call_build(b)
            if out is not None and out is not u:
                return out
        return None

    def __repr__(self) -> str:
        return f"Rule({self.name!r}, {self.identity!r}, group={self.group!r})"


class _WrittenWhenRead:
    """``Rule._apply``: a non-data descriptor, so that once the rule holds its own
    ``_apply`` a read finds it as any attribute (no hook on the rule's reads)."""

    def __get__(self, rule: Rule | None, owner: type | None = None) -> Any:
        return self if rule is None else rule._write_apply()


Rule._apply = _WrittenWhenRead()  # type: ignore[assignment]


def write_matchers(rules: Iterable[Any]) -> None:
    """Write now the compiled matcher of each :class:`Rule` of ``rules`` (others are
    skipped): what a matcher otherwise writes when it first reads one."""
    for r in rules:
        if isinstance(r, Rule):
            r._apply  # noqa: B018 (written when read)


class PatternMatcher:
    """Rules tried in order, the first that returns a result wins."""

    def __init__(self, rules: Iterable[Rule], name: str = "matcher"):
        self.rules: list[Rule] = list(rules)
        self.name = name
        self.matches: dict[str, int] = defaultdict(int)
        by_op: dict[Ops | None, list[tuple[int, Rule]]] = defaultdict(list)
        for i, r in enumerate(self.rules):
            for op in (r.pattern.ops or [None]):
                by_op[op].append((i, r))
        any_op = by_op.pop(None, [])
        self._by_op: dict[Ops, list[Rule]] = {}
        for op in Ops:
            merged = sorted(by_op.get(op, []) + any_op, key=lambda t: t[0])
            self._by_op[op] = [r for _, r in merged]
        #: (op, each source's op) by value -> the rules of ``_by_op`` whose source check
        #: admits such sources (:meth:`candidates`), as :meth:`_entries`
        self._cands: dict[tuple[int, ...], list[_Entry]] = {}
        #: a run of rules of one ``joint`` -> its function (:meth:`_entries`)
        self._joints: dict[tuple[Rule, ...], Callable[[UOp], Any]] = {}

    def prepare(self) -> None:
        """Write now every rule's compiled matcher (``Rule._apply``, otherwise written
        when first read): a warm-up that leaves no writing to a run."""
        write_matchers(self.rules)

    def __add__(self, other: PatternMatcher) -> PatternMatcher:
        return PatternMatcher(self.rules + other.rules, f"{self.name}+{other.name}")

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"PatternMatcher({self.name!r}, {len(self.rules)} rules)"

    def candidates(self, u: UOp) -> list[Rule]:
        """The rules that may rewrite ``u``, in order: those of its op whose pattern's
        source ops (``Rule._srcs_ok``) admit ``u``'s sources. That check reads only the
        number of sources and their ops, so the list is kept per op and source ops (a
        node of more than :data:`_CANDS_MAX_SRC` sources is checked each time)."""
        return [x for _, r in self._candidates(u) for x in (r if type(r) is tuple else (r,))]

    def _candidates(self, u: UOp) -> list[_Entry]:
        """:meth:`candidates` as :meth:`_entries` (each rule's :meth:`Rule.apply`: its
        generated function itself where it has one, no call through the method, and no
        test of the node's op, one of the rule's pattern's by the list's making)."""
        src = u.src
        n = len(src)
        if n > _CANDS_MAX_SRC:
            return self._entries([r for r in self._by_op[u.op]
                                  if r._srcs_ok is None or r._srcs_ok(src)])
        # the key: the op and the sources' ops, by value (no list made for the usual arities)
        if n == 2:
            key: tuple[int, ...] = (u.op._value_, src[0].op._value_, src[1].op._value_)
        elif n == 1:
            key = (u.op._value_, src[0].op._value_)
        elif not n:
            key = (u.op._value_,)
        else:
            key = (u.op._value_, *[s.op._value_ for s in src])
        rules = self._cands.get(key)
        if rules is None:
            rules = self._cands[key] = self._entries(
                [r for r in self._by_op[u.op] if r._srcs_ok is None or r._srcs_ok(src)])
        return rules

    def _entries(self, rules: list[Rule]) -> list[_Entry]:
        """``rules`` as the matcher tries them: ``(apply, rule)`` each, but a run of two
        or more back to back with one ``joint`` as one entry ``(the joint's function of
        the run, the run)``, the function made once per run."""
        out: list[_Entry] = []
        i, n = 0, len(rules)
        while i < n:
            r, j = rules[i], i + 1
            if r.joint is not None:
                while j < n and rules[j].joint is r.joint:
                    j += 1
            if j - i == 1:
                out.append((r._apply or r.apply, r))
            else:
                run = tuple(rules[i:j])
                fn = self._joints.get(run)
                if fn is None:
                    fn = self._joints[run] = r.joint(run)  # type: ignore[misc]
                out.append((fn, run))
            i = j
        return out

    def rewrite(self, u: UOp) -> tuple[UOp, Rule] | None:
        """The first rule's rewrite of ``u`` (not of its children), or None."""
        for apply, r in self._candidates(u):
            out = apply(u)
            if out is not None:
                if type(r) is tuple:  # (a joint run: its rewrite and the rule that made it)
                    out, r = out
                self.matches[r.name] += 1
                return out, r
        return None


#: a candidate entry: a rule's apply and the rule, or a joint run's function and the run
_Entry = tuple[Callable[[UOp], Any], "Rule | tuple[Rule, ...]"]

#: the most sources a node may have for :meth:`PatternMatcher.candidates` to keep its
#: rule list (a key per op and source ops; a kernel's SINK has one source per store)
_CANDS_MAX_SRC = 4

#: graph_rewrite calls its ``stop`` check once every this many nodes it matches
STOP_CHECK_EVERY = 32


def graph_rewrite(root: UOp, pm: PatternMatcher, limit: int = 1000,
                  replace: dict[UOp, UOp] | None = None,
                  stop: Callable[[], str | None] | None = None) -> UOp:
    """Rewrite bottom-up to a fixed point: children first, then the parent re-matched.

    Raises :class:`RewriteLimitError` naming the rules involved when one node is
    rewritten more than ``limit`` times (a cycle between rules). ``replace``: a dict
    filled with every node's rewrite (each node of ``root``'s graph, and the
    intermediate forms, mapped to its fixed point). ``stop``: a hard limit's check,
    called before the first match and then every :data:`STOP_CHECK_EVERY` matches; when
    it returns a reason (``"time"``, ``"memory"``) the rewrite raises
    :class:`RewriteStoppedError` (the overshoot is at most that many rule applications).
    """
    if replace is None:
        replace = {}
    if stop is not None and (why := stop()):
        raise RewriteStoppedError(why)
    matched = 0
    chain: dict[UOp, int] = {}
    history: dict[UOp, tuple[str, ...]] = {}
    waitlist: dict[UOp, list[tuple[UOp, int, UOp]]] = {}
    stack: list[tuple[UOp, int, UOp]] = [(root, 0, root)]
    on_stack = {root}
    rewrite = pm.rewrite
    get = replace.get
    while stack:
        n, stage, new_n = stack.pop()
        if n in replace:
            continue
        if stage == 0:
            at = len(stack)
            for x in reversed(new_n.src):
                if x not in on_stack:
                    stack.append((x, 0, x))
                    on_stack.add(x)
            if len(stack) != at:  # (its stage 1 goes under the sources pushed)
                stack.insert(at, (n, 1, new_n))
                continue
            stage = 1  # (no source pushed: stage 1 would be popped next; taken now)
        if stage == 1:
            # the sources' rewrites, read in C (nodes compare by identity); the first
            # source not rewritten yet holds this entry until it is
            src = new_n.src
            tmp = tuple(map(get, src))
            if None in tmp:
                waitlist.setdefault(src[tmp.index(None)], []).append((n, 1, new_n))
            else:
                if tmp == src:
                    matched += 1
                    if stop is not None and matched % STOP_CHECK_EVERY == 0 and \
                            (why := stop()):
                        raise RewriteStoppedError(why)
                    hit = rewrite(new_n)
                    if hit is None:
                        replace[n] = new_n
                        if (w := waitlist.pop(n, None)) is not None:
                            stack.extend(w)
                        continue
                    nxt, rule = hit
                    count = chain.get(new_n, 0) + 1
                    names = (history.get(new_n, ()) + (rule.name,))[-12:]
                    if count > limit:
                        raise RewriteLimitError(
                            f"graph_rewrite: one node rewritten more than {limit} times; "
                            f"rules involved: {', '.join(dict.fromkeys(names))}")
                else:
                    nxt = UOp(new_n.op, new_n.dtype, tmp, new_n.arg)
                    count, names = chain.get(new_n, 0), history.get(new_n, ())
                if chain.get(nxt, -1) < count:
                    chain[nxt], history[nxt] = count, names
                stack.append((n, 2, nxt))
                stack.append((nxt, 0, nxt))
        else:
            r = replace.get(new_n)
            if r is None:
                waitlist.setdefault(new_n, []).append((n, 2, new_n))
            else:
                replace[n] = r
                if (w := waitlist.pop(n, None)) is not None:
                    stack.extend(w)
    return replace[root]
