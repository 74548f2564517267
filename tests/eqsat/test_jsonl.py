"""``eqsat.jsonl``: the line reader of ``eqsat batch`` and ``eqsat compare``, read line by
line, against the whole-file reading it replaces."""

from __future__ import annotations

import codecs
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat.jsonl import EncodingError, not_utf8, numbered_lines


def _whole(data: bytes) -> list[tuple[int, str]]:
    """The lines of ``data`` read whole: split at \\n, \\r\\n and \\r, BOM skipped."""
    lines = data.removeprefix(codecs.BOM_UTF8).splitlines()
    return [(n, s) for n, raw in enumerate(lines, 1)
            if (s := raw.decode("utf-8", "surrogateescape")).strip()]


PIECES = [b"\n", b"\r", b"\r\n", b" ", b"\t", b"a", b"{}", b"\xff", b"\xc3", b"\xc3\xa9",
          b"\xe2\x80\xa8", b"\x85", b"\x0b", b"\x0c", b"\x1c", codecs.BOM_UTF8]


@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_read_line_by_line_as_read_whole(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    if any(data.startswith(b) for b in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return
    assert list(numbered_lines(io.BytesIO(data), "f")) == _whole(data)


@pytest.mark.parametrize("data, lines", [
    (b"", []),
    (codecs.BOM_UTF8, []),
    (codecs.BOM_UTF8 + b"a\r\rb\r\nc", [(1, "a"), (3, "b"), (4, "c")]),
    (b"a\xc2\x85b\n\xe2\x80\xa8x\n", [(1, "a\x85b"), (2, "\u2028x")]),  # NEL, U+2028: no end
    (b" \n\xffx\n", [(2, "\udcffx")]),
    (b"x" + codecs.BOM_UTF8, [(1, "x\ufeff")]),  # a BOM starts the file only
])
def test_numbered_lines(data: bytes, lines: list[tuple[int, str]]) -> None:
    assert list(numbered_lines(io.BytesIO(data), "f")) == lines


@pytest.mark.parametrize("bom, name", [
    (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
    (codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
])
def test_another_encoding_is_named(bom: bytes, name: str) -> None:
    with pytest.raises(EncodingError, match=f"^f.jsonl: {name} text \\(it starts with the "
                                            f"byte-order mark {bom.hex(' ')}\\)$"):
        next(numbered_lines(io.BytesIO(bom + "{}\n".encode("utf-16")), "f.jsonl"))


class _Endless(io.RawIOBase):
    """A stream of lines with no end: a reader that reads it whole never returns."""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        line = b'{"id": 1, "expr": "1"}\n'
        n = min(len(b), len(line))
        b[:n] = line[:n]
        return n


def test_lines_are_read_as_they_are_asked_for() -> None:
    lines = numbered_lines(io.BufferedReader(_Endless()), "f")
    assert [next(lines) for _ in range(3)] == [(n, '{"id": 1, "expr": "1"}') for n in (1, 2, 3)]


@pytest.mark.parametrize("line, error", [
    ("plain é", None),
    ("a\udcffb", "not UTF-8 text: byte 0xff at byte 2 of line 7 (invalid start byte)"),
    ("\udced\udca0\udc80", "not UTF-8 text: byte 0xed at byte 1 of line 7 (invalid "
                           "continuation byte)"),
])
def test_not_utf8(line: str, error: str | None) -> None:
    assert not_utf8(7, line) == error
