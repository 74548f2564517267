"""Reading egglog text: top-level commands, s-expressions as trees and back."""

from __future__ import annotations

import pytest

from eqsat.ir.egglog_text import commands, read, show, tokens

# egglog text, its top-level commands
SPLITS: list[tuple[str, list[str]]] = [
    ("", []),
    ("(a)", ["(a)"]),
    ("(a (b c))\n(d)", ["(a (b c))", "(d)"]),
    ('(a "x)" (b))', ['(a "x)" (b))']),                      # a paren inside a string
    ('(e "q\\"(")', ['(e "q\\"(")']),                         # an escaped quote
    ('(e "a\\\\") (f)', ['(e "a\\\\")', "(f)"]),                # an escaped backslash
    ("(a) ; (not a command)\n(b)", ["(a)", "(b)"]),           # a comment
    ('(rule ((= l (lo e))) ((panic "empty (lo > hi)")))',
     ['(rule ((= l (lo e))) ((panic "empty (lo > hi)")))']),
]

BAD: list[tuple[str, str]] = [
    ("(a", "unclosed '(' at line 1"),
    ("(a)\n(b))", "unbalanced ')' at line 2"),
    ('(a "x)', "unterminated string at line 1"),
    ('(a "x\\")', "unterminated string at line 1"),                 # the quote is escaped
    ('(a)\n\n(b "x', "unterminated string at line 3"),
]


def _escaped(msg: str) -> str:
    return msg.replace("(", r"\(").replace(")", r"\)")


@pytest.mark.parametrize("text, want", SPLITS)
def test_commands(text: str, want: list[str]) -> None:
    assert commands(text) == want


@pytest.mark.parametrize("text, msg", BAD)
def test_commands_reject_unbalanced_text(text: str, msg: str) -> None:
    with pytest.raises(ValueError, match=_escaped(msg)):
        commands(text)


@pytest.mark.parametrize("text, tree", [
    ("x", "x"),
    ('"a b"', '"a b"'),
    ("(Add dt a (Cst dt 0))", ["Add", "dt", "a", ["Cst", "dt", "0"]]),
    ('(= dt "index") (ignored)', ["=", "dt", '"index"']),   # the first expression only
    ("( (a) ; a comment\n b )", [["a"], "b"]),
    ('(panic "x (y")', ["panic", '"x (y"']),
])
def test_read_and_show(text: str, tree: object) -> None:
    assert read(text) == tree
    assert read(show(read(text))) == tree


@pytest.mark.parametrize("text, msg", [
    ("", "no s-expression"), ("  ; only a comment", "no s-expression"),
    ("(a (b)", "unclosed '('"), (")", "unbalanced ')' at line 1"),
    ("\n; (a)\n)", "unbalanced ')' at line 3"),
    ('(a "x', "unterminated string at line 1"),
    ('; "\n(a (b "x\\"))', "unterminated string at line 2"),
])
def test_read_rejects_text_without_one_expression(text: str, msg: str) -> None:
    with pytest.raises(ValueError, match=_escaped(msg)):
        read(text)


def test_tokens_name_kinds_and_offsets() -> None:
    assert list(tokens('(a "s" ;c\n)')) == [("(", "(", 0), ("atom", "a", 1), ("str", '"s"', 3),
                                            (")", ")", 10)]
