"""Reading egglog text: its s-expressions and its top-level commands.

egglog's syntax is s-expressions of atoms and ``"..."`` strings (a backslash escapes
the next character), with ``;`` comments to the end of the line. It is not the
``.uop`` format (:mod:`eqsat.ir.sexpr`). The native rules (:mod:`rules.native`) read
their patterns with :func:`read`, and the e-graph engine splits the program it loads
into commands with :func:`commands`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["Tree", "tokens", "commands", "read", "show"]

#: an s-expression: an atom or string (its text, a string with its quotes), or a list
Tree = str | list["Tree"]

_TOKEN = re.compile(r'(?P<ws>\s+)|(?P<comment>;[^\n]*)|(?P<open>\()|(?P<close>\))'
                    r'|(?P<str>"(?:[^"\\]|\\[\s\S])*")|(?P<quote>")|(?P<atom>[^\s();"]+)')


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """``(kind, token, offset)`` of every token of ``text``: kind ``"("``, ``")"``,
    ``"str"`` or ``"atom"`` (white space and comments skipped). An unterminated
    string raises ValueError naming its line."""
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "atom" or kind == "str":
            yield kind, m.group(), m.start()
        elif kind == "open":
            yield "(", "(", m.start()
        elif kind == "close":
            yield ")", ")", m.start()
        elif kind == "quote":
            raise ValueError(f"egglog text: unterminated string at line {_line(text, m.start())}")


#: what delimits a top-level command: a parenthesis, a string (whole, or an unterminated
#: quote), a comment; an atom holds none of these, so :func:`commands` skips atoms
_STRUCTURE = re.compile(r'[()]|"(?:[^"\\]|\\[\s\S])*"|;[^\n]*|"')


def commands(text: str) -> list[str]:
    """The top-level s-expressions of ``text``, each as its own text. Unbalanced text
    raises ValueError naming the line."""
    out: list[str] = []
    depth, start = 0, 0
    for m in _STRUCTURE.finditer(text):
        tok = m.group()
        if tok == "(":
            if depth == 0:
                start = m.start()
            depth += 1
        elif tok == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"egglog text: unbalanced ')' at line {_line(text, m.start())}")
            if depth == 0:
                out.append(text[start:m.end()])
        elif tok == '"':
            raise ValueError(f"egglog text: unterminated string at line {_line(text, m.start())}")
    if depth:
        raise ValueError(f"egglog text: unclosed '(' at line {_line(text, start)}")
    return out


#: the tokens :func:`read` reads, as strings: a parenthesis, a string, a comment, a
#: quote that opens no string (unterminated), an atom
_READ = re.compile(r'[()]|"(?:[^"\\]|\\[\s\S])*"|;[^\n]*|"|[^\s();"]+')


def read(text: str) -> Tree:
    """The first s-expression of ``text`` as nested lists of atoms (strings keep their
    quotes). Text without one, or with an unclosed one, raises ValueError."""
    stack: list[list[Tree]] = []
    for tok in _READ.findall(text):  # (the tokens as strings: no match objects)
        c = tok[0]
        if c == "(":
            stack.append([])
        elif c == ")":
            if not stack:
                break
            done = stack.pop()
            if not stack:
                return done
            stack[-1].append(done)
        elif c == ";":
            continue
        elif tok == '"':
            break
        elif not stack:
            return tok
        else:
            stack[-1].append(tok)
    else:
        raise ValueError("egglog text: no s-expression" if not stack else
                         "egglog text: unclosed '('")
    raise _misread(text)


def _misread(text: str) -> ValueError:
    """The error of the first token :func:`read` cannot read (an unbalanced ``)`` or an
    unterminated string), naming its line."""
    depth = 0
    for m in _READ.finditer(text):
        tok = m.group()
        if tok == '"':
            return ValueError(f"egglog text: unterminated string at line {_line(text, m.start())}")
        if tok == "(":
            depth += 1
        elif tok == ")":
            if depth == 0:
                return ValueError(f"egglog text: unbalanced ')' at line {_line(text, m.start())}")
            depth -= 1
    return ValueError("egglog text: unreadable")  # (not reached: read found one)


def show(t: Tree) -> str:
    """The text of an s-expression (one space between elements)."""
    return t if isinstance(t, str) else "(" + " ".join([show(x) for x in t]) + ")"
