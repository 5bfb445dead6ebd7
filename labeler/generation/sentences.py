"""An offline sentence splitter: an answer's sentences as its claims, when no better
decomposition is at hand.

Rules, in order:

- a line break that ends a line of text ends a sentence (a list item, a heading, a paragraph);
  a list marker at the start of a line (``-``, ``*``, ``•``, ``1.``, ``2)``, ``a)``) is dropped;
- ``.``, ``!``, ``?`` or ``…`` (and any closing quotes or brackets after it) followed by
  whitespace ends a sentence when the next word starts with a capital, a digit, a quote or an
  opening bracket;
- except after a known abbreviation (``Dr.``, ``e.g.``, ``U.S.``, ``No.``, ``vs.``...), an
  initial (a single capital letter: ``J. K. Rowling``) or any letters joined by periods
  (``U.S.A.``);
- a decimal point (``3.14``), a version (``v1.2.3``) or a domain (``example.com``) never ends
  a sentence, since no whitespace follows the period.

No model, no download: the same text always gives the same sentences (:data:`SPLITTER` names
the rules' version, stored with every claim it makes).
"""

from __future__ import annotations

import re

from pooling.chars import is_blank

#: The version of these rules, stored with each claim they make.
SPLITTER = "sentences-v1"

#: Abbreviations (lower case, without their final period) after which a period does not end a
#: sentence even before a capital.
ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "v", "e.g", "i.e", "cf", "al",
    "approx", "ca", "no", "nos", "fig", "figs", "eq", "eqs", "vol", "p", "pp", "ch", "sec", "dept", "inc", "ltd",
    "co", "corp", "gen", "gov", "rep", "sen", "rev", "lt", "col", "sgt", "capt", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "u.n", "e.u", "a.m", "p.m", "ph.d",
    "b.sc", "m.sc", "est", "resp", "min", "max",
})

_LIST_MARKER = re.compile(r"^\s*(?:[-*•·‣]|\d{1,3}[.)]|[a-z]\))\s+")
# A candidate end: terminal punctuation, closing quotes/brackets, then whitespace, then the
# first character of the next sentence.
_END = re.compile(r"([.!?…]+)([\"'”’)\]]*)(\s+)(?=[\"'“‘(\[]?[A-Z0-9À-ÖØ-Þ])")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order; none for a blank text.

    >>> split_sentences("Dr. Smith paid $3.50 for it. It rained!  Then e.g. snow fell.")
    ['Dr. Smith paid $3.50 for it.', 'It rained!', 'Then e.g. snow fell.']
    """
    sentences: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line, count=1).strip()
        if not is_blank(line):
            sentences.extend(p for p in _split_line(line) if not is_blank(p))
    return sentences


def _split_line(line: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for match in _END.finditer(line):
        if match.group(1) == "." and _abbreviated(line[start:match.start(1)]):
            continue
        end = match.end(2)
        piece = line[start:end].strip()
        if piece:
            parts.append(piece)
        start = match.end(3)
    rest = line[start:].strip()
    if rest:
        parts.append(rest)
    return parts


def _abbreviated(before: str) -> bool:
    """Whether the word ending ``before`` (just ahead of a period) is an abbreviation or an initial."""
    match = _WORD_BEFORE.search(before)
    if match is None:
        return False
    word = match.group(1)
    if match.start() > 0 and not (before[match.start() - 1].isspace() or before[match.start() - 1] in "\"'“‘(["):
        return False  # the end of a longer token: "37 °C.", "H2O."
    if len(word) == 1 and word.isupper():
        return True  # an initial: "J. K. Rowling"
    lowered = word.lower().rstrip(".")
    if lowered in ABBREVIATIONS:
        return True
    # Dotted abbreviations not listed ("U.S.A", "e.g"): single letters joined by periods.
    return bool(re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word))
