"""JSON-lines input read line by line: what ``eqsat batch`` and ``eqsat compare`` read.

:func:`numbered_lines` takes a binary stream and yields its non-blank lines, each with
its number, as they are read (a large file is never held whole). A line ends at ``\\n``,
``\\r\\n`` or ``\\r`` only (not at the other characters ``str.splitlines`` takes, which a
JSON string may hold, so the numbers are an editor's); a UTF-8 byte-order mark at the
start is skipped, and a file that starts with a UTF-16 or UTF-32 one is an error. The
bytes of a line that are not UTF-8 stay in it as surrogate escapes (PEP 383), so that
one line can be reported (:func:`not_utf8`) and the others still read.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["numbered_lines", "not_utf8", "escaped", "EncodingError"]

#: byte-order marks of the encodings a file is taken to be in when it starts with one
#: (UTF-32's before UTF-16's, which begin them); no UTF-8 text starts so
_OTHER_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
               (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))

#: a byte that is not UTF-8, as :func:`numbered_lines` keeps it in a line's text
_ESCAPED = re.compile("[\udc80-\udcff]")


class EncodingError(ValueError):
    """A file in another encoding than UTF-8 (it starts with that encoding's
    byte-order mark); the message names the file and the encoding."""


def numbered_lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of ``stream`` (see the module docstring), each with its
    number, read as they are asked for. :class:`EncodingError` (naming ``name``) at the
    first line when the stream starts with a UTF-16 or UTF-32 byte-order mark."""
    n = 0
    first = True
    for chunk in stream:  # ends at b"\n" only: each chunk split at \r too below
        if first:
            first = False
            for bom, encoding in _OTHER_BOMS:
                if chunk.startswith(bom):
                    raise EncodingError(f"{name}: {encoding} text (it starts with the "
                                        f"byte-order mark {bom.hex(' ')})")
            chunk = chunk.removeprefix(codecs.BOM_UTF8)
        for raw in chunk.splitlines():  # b"\r\n" ends a chunk, so never split across two
            n += 1
            line = raw.decode("utf-8", "surrogateescape")
            if line.strip():
                yield n, line


def not_utf8(lineno: int, line: str) -> str | None:
    """What is wrong with a line of :func:`numbered_lines` holding bytes that are not
    UTF-8 (the first of them), or None when it has none."""
    if not _ESCAPED.search(line):
        return None
    raw = line.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return (f"not UTF-8 text: byte 0x{raw[e.start]:02x} at byte {e.start + 1} of line "
                f"{lineno} ({e.reason})")
    return None


def escaped(text: str) -> bool:
    """Whether ``text`` holds a byte that is not UTF-8 (as a surrogate escape)."""
    return _ESCAPED.search(text) is not None
