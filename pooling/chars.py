"""Which characters an id or a text may hold: the one definition every reader applies.

An **id** (``doc_id``, ``query_id``, a run's or a label file's ids) may hold only visible
characters. Refused anywhere in an id:

- whitespace (``str.isspace``: spaces, tabs, newlines, U+00A0, U+2028...), because TREC run and
  qrels files separate their fields by whitespace;
- every character of the Unicode categories **Cc** (control characters, NUL among them),
  **Cf** (format characters: zero-width space U+200B, zero-width joiners U+200C/U+200D,
  byte-order mark U+FEFF, soft hyphen U+00AD, bidirectional marks), **Zl** and **Zp** (line and
  paragraph separators), **Zs** (space separators) and **Cs** (lone surrogates).

The one exception: a key column of a JSONL/CSV/TSV label file (``goldpool agree --key``) may
hold a plain space (U+0020) between visible characters, since such a key may be any text and is
never written to a TREC file.

Such a character cannot be seen, so two ids that look the same would be different keys, and a
qrels line written for one would never match the other.

A **text** (a chunk's text or title, a query's text) may hold any character except NUL
(U+0000), which SQLite's C interface and most tools take for the end of the string. Other
invisible characters inside a text are kept as they are (a soft hyphen or a zero-width joiner
in an emoji is ordinary text); a required text made only of invisible characters and
whitespace is empty.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from pooling import PoolingError, shown

#: Unicode categories of characters that cannot be seen (see the module docstring).
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs", "Cs"})

__all__ = ["INVISIBLE_CATEGORIES", "check_id", "check_text", "describe", "is_invisible", "is_blank"]


def is_invisible(ch: str) -> bool:
    """Whether ``ch`` is whitespace or of an invisible category.

    >>> [is_invisible(c) for c in ("a", "\\u200b", "\\x00", " ", "\\u00e9")]
    [False, True, True, True, False]
    """
    return ch.isspace() or unicodedata.category(ch) in INVISIBLE_CATEGORIES


def is_blank(text: str) -> bool:
    """Whether ``text`` has no visible character (empty, whitespace, zero-width...).

    >>> is_blank(" \\u200b\\n"), is_blank("a\\u200b")
    (True, False)
    """
    return all(is_invisible(ch) for ch in text)


_CONTROL_NAMES = {0: "NUL", 9: "TAB", 10: "LINE FEED", 13: "CARRIAGE RETURN"}


def describe(ch: str) -> str:
    """``U+200B ZERO WIDTH SPACE``: a character by code point and name.

    >>> describe("\\x00"), describe("\\u200b")
    ('U+0000 NUL', 'U+200B ZERO WIDTH SPACE')
    """
    code = ord(ch)
    name = _CONTROL_NAMES.get(code) or unicodedata.name(ch, "") or f"{unicodedata.category(ch)} character"
    return f"U+{code:04X} {name}"


def _where(value: str, index: int) -> str:
    if len(value) == 1:
        return "is only"
    if index == 0:
        return "starts with"
    if index == len(value) - 1:
        return "ends with"
    return f"holds, at character {index + 1},"


def check_id(value: str, path: str | Path | None, line: int | None, field: str, *, inner_spaces: bool = False) -> str:
    """Return ``value`` if it is a valid id (see the module docstring), else refuse it.

    ``inner_spaces`` lets plain spaces (U+0020) stand between visible characters: the key
    columns of a JSONL/CSV label file may be any text (a question, a title), which is never
    written to a TREC file.

    Raises:
        PoolingError: whitespace or an invisible character in the id; file, line, field named.
    """
    for index, ch in enumerate(value):
        if ch == " " and inner_spaces and 0 < index < len(value) - 1:
            continue
        if ch.isspace():
            raise PoolingError(
                f"{shown(value)} contains whitespace ({describe(ch)}); TREC run and qrels files cannot hold it",
                path=path, line=line, field=field,
            )
        if is_invisible(ch):
            raise PoolingError(
                f"{shown(value)} {_where(value, index)} {describe(ch)}, an invisible character; "
                "ids may hold only visible characters",
                path=path, line=line, field=field,
            )
    return value


def check_text(value: str, path: str | Path | None, line: int | None, field: str) -> str:
    """Return ``value`` unless it holds a NUL character.

    Raises:
        PoolingError: a NUL (U+0000) in the text; file, line, field and position named.
    """
    index = value.find("\x00")
    if index >= 0:
        raise PoolingError(
            f"holds U+0000 NUL at character {index + 1}; remove it (NUL is not allowed in text)",
            path=path, line=line, field=field,
        )
    return value
