"""Untrusted corpus and query text turned into safe HTML, with the query's terms marked.

Matching runs on the raw text and every piece is escaped separately, so a term can never
match inside an entity that escaping produced (``amp`` in ``&amp;``) and no character of
the input reaches the page as markup: the only tags in the output are the ones written here.
"""

from __future__ import annotations

import html
import re


# Words too common to be worth marking; the query's other words carry its meaning.
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by can do does for from has have how i if in into is it its
    of on or that the their there these this to was were what when where which who whom why
    will with you your""".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str, min_length: int = 2) -> list[str]:
    """The distinct words of ``query`` worth marking, lowercased, longest first.

    >>> query_terms("What is the boiling point of water?")
    ['boiling', 'point', 'water']
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if len(word) >= min_length and word not in STOPWORDS:
            seen.setdefault(word, None)
    return sorted(seen, key=lambda w: (-len(w), w))


def highlight(text: str, query: str) -> str:
    """``text`` as escaped HTML, each whole-word occurrence of a query term in ``<mark>``.

    >>> highlight("Water <b>boils</b> at 100 C", "when does water boil")
    '<mark>Water</mark> &lt;b&gt;boils&lt;/b&gt; at 100 C'
    """
    terms = query_terms(query)
    if not query:
        return html.escape(text)
    if not terms:
        return html.escape(text)
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(re.escape(t) for t in terms) + r")(?!\w)", re.IGNORECASE
    )
    pieces: list[str] = []
    end = 0
    for match in pattern.finditer(text):
        pieces.append(html.escape(text[end : match.start()]))
        pieces.append(f"<mark>{html.escape(match.group(0))}</mark>")
        end = match.end()
    pieces.append(html.escape(text[end:]))
    return "".join(pieces)


def query_html(query: str) -> str:
    """The query line of a page, escaped."""
    return f"<strong>Query:</strong> {html.escape(query)}"


def chunk_html(title: str, text: str, query: str) -> str:
    """A chunk's title (bold, if any) and its text with the query's terms marked, all escaped.

    >>> chunk_html("<T>", "water boils", "boils?")
    '<strong>&lt;T&gt;</strong>\\nwater <mark>boils</mark>'
    """
    heading = f"<strong>{html.escape(title)}</strong>\n" if title else ""
    return heading + highlight(text, query)


_CODE_LINE = re.compile(
    r"""^\s*(?:def |class |import |from \S+ import |return\b|#include|public |private |function\b|var |let |const |"""
    r"""SELECT |CREATE |for\s*\(|if\s*\(|while\s*\(|\$ |>>> )|[;{}]\s*$|^\s*[}\])]"""
)


def preformatted(text: str) -> bool:
    r"""Whether ``text`` has code or aligned columns, which need a monospace font and kept lines.

    Signs: a code fence or a tab; two or more lines that are indented by four spaces, that
    align columns with runs of spaces or ``|``, or that read like code.

    >>> preformatted("Water boils at 100 C.  At altitude it boils lower.")
    False
    >>> preformatted("def f(x):\n    return x + 1\n")
    True
    >>> preformatted("name    size\nalpha   10\nbeta    200")
    True
    """
    if "```" in text or "\t" in text:
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    indented = sum(1 for line in lines if line.startswith("    "))
    aligned = sum(1 for line in lines if re.search(r"\S {3,}\S", line) or line.count("|") >= 2)
    code = sum(1 for line in lines if _CODE_LINE.search(line))
    return indented >= 2 or aligned >= 2 or code >= 2


def chunk_body_html(text: str, query: str, marks: bool) -> str:
    """A chunk's text as escaped HTML, the query's words marked when ``marks`` is on.

    >>> chunk_body_html("<b>water</b>", "water", marks=False)
    '&lt;b&gt;water&lt;/b&gt;'
    """
    return highlight(text, query) if marks else html.escape(text)


_IMAGE = re.compile(r"(?<!\\)((?:\\\\)*)!\[")


def safe_markdown(text: str) -> str:
    r"""Markdown with every image turned into a plain link, so showing it fetches nothing.

    An image (``![alt](url)``, ``![alt][ref]``) loads its address as soon as it is shown; a
    link is opened only when clicked. Raw HTML (``<img src=...>``) is never rendered by
    Streamlit's Markdown without ``unsafe_allow_html``, which goldpool never passes. An
    exclamation mark already escaped stays as it is.

    >>> safe_markdown("see ![chart](http://x/c.png)")
    'see \\![chart](http://x/c.png)'
    >>> safe_markdown(r"not an image: \![x](u)")
    'not an image: \\![x](u)'
    """
    return _IMAGE.sub(lambda m: m.group(1) + "\\![", text)


def claim_span(response: str, claim: str) -> tuple[int, int] | None:
    """Where ``claim`` stands in ``response``: ``(start, end)`` of its first occurrence, else
    of the first stretch that differs from it only in white space and letter case, else None.

    A claim a judge or a file wrote may re-space or re-case the sentence it came from; a claim
    it rephrased is not found, and the page shows it apart instead of marking a wrong span.

    >>> claim_span("Paris is big. It is old.", "It is old.")
    (14, 24)
    >>> claim_span("Paris is big.\\n  It IS   old.", "it is old.")
    (16, 28)
    >>> claim_span("Paris is big.", "Paris is old.") is None
    True
    """
    words = claim.split()
    if not words:
        return None
    at = response.find(claim)
    if at >= 0:
        return at, at + len(claim)
    loose = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)
    found = loose.search(response)
    return None if found is None else found.span()


def claim_html(response: str, claim: str) -> tuple[str, tuple[int, int] | None]:
    """``response`` as escaped HTML with ``claim`` in ``<mark class="gp-claim">``, and where
    the claim was found (:func:`claim_span`); unmarked, and None, when it was not.

    >>> claim_html("<b>x</b> is y. Z.", "<b>x</b> is y.")
    ('<mark class="gp-claim">&lt;b&gt;x&lt;/b&gt; is y.</mark> Z.', (0, 14))
    """
    span = claim_span(response, claim)
    if span is None:
        return html.escape(response), None
    start, end = span
    marked = f'<mark class="gp-claim">{html.escape(response[start:end])}</mark>'
    return html.escape(response[:start]) + marked + html.escape(response[end:]), span
