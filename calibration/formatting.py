"""Text of numbers and of untrusted names, defined once for every report (calibration's and
the app's: calibration imports nothing of ``labeler``, so the home is here).

- :func:`fixed`: a number with fixed decimals, never ``-0.000``; a missing value as asked.
- :func:`markdown_escape`: Markdown's special characters backslash-escaped (for a CI job
  summary, HTML's too, as entities).

HTML is escaped by the standard library's :func:`html.escape`, called directly: no module
defines an escape of its own.
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection

#: Characters Markdown (CommonMark, GitHub's and Streamlit's dialects) may treat specially.
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:")
#: The characters a CI job summary escapes after HTML's (GitHub renders the tags in Markdown, so
#: ``<`` and ``&`` become entities there and need no backslash).
JOB_SUMMARY_SPECIAL = frozenset("\\`*_[]|#!~")


def fixed(x: float | None, digits: int = 3, *, sign: bool = False, missing: str | None = None) -> str:
    """``x`` with ``digits`` decimals, never ``-0.000``: a value that rounds to zero has no sign
    (with ``sign``, every other value shows its ``+`` or ``-``). With ``missing``, None and NaN
    read as it (``"n/a"``); without, NaN reads ``nan``.

    >>> fixed(-0.0004), fixed(-0.0), fixed(-0.0006), fixed(0.5123, 2), fixed(-0.00001, 4, sign=True), fixed(0.02, 2, sign=True)
    ('0.000', '0.000', '-0.001', '0.51', '0.0000', '+0.02')
    >>> fixed(None, missing="n/a"), fixed(float("nan"), missing="-")
    ('n/a', '-')
    """
    if missing is not None and (x is None or (isinstance(x, float) and math.isnan(x))):
        return missing
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    if text[:1] in "+-" and not text.strip("+-0."):
        return text[1:]
    return text


def markdown_escape(text: str, special: Collection[str] = MARKDOWN_SPECIAL, *, entities: bool = False,
                    one_line: bool = False) -> str:
    """``text`` with Markdown's ``special`` characters backslash-escaped, so it renders as written.

    Names and ids come from users and files: unescaped, ``![x](http://...)`` would load a
    remote image, ``a|b`` would add a table column and ``:red[x]`` would colour a Streamlit page.
    With ``entities``, ``&``, ``<`` and ``>`` become HTML entities first (Markdown that renders
    HTML tags: a CI job summary, with :data:`JOB_SUMMARY_SPECIAL`); with ``one_line``, a newline
    becomes a space (a table cell or a list item stays on its line).

    >>> print(markdown_escape("a|b ![x](u) :red[x]"))
    a\\|b \\!\\[x\\]\\(u\\) \\:red\\[x\\]
    >>> print(markdown_escape("<b>*x*</b>\\n&", JOB_SUMMARY_SPECIAL, entities=True, one_line=True))
    &lt;b&gt;\\*x\\*&lt;/b&gt; &amp;
    """
    if entities:
        text = html.escape(text, quote=False)
    escaped = "".join("\\" + c if c in special else c for c in text)
    return escaped.replace("\n", " ") if one_line else escaped
