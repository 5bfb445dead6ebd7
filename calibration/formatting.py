"""Text of numbers and of untrusted names, defined once for every report (calibration's and
the app's: calibration imports nothing of ``labeler``, so the home is here).

- :func:`fixed`: a number with fixed decimals, never ``-0.000``; a missing value as asked.
- :func:`markdown_escape`: Markdown's special characters backslash-escaped.
"""

from __future__ import annotations

import math

#: Characters Markdown (CommonMark, GitHub's and Streamlit's dialects) may treat specially.
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:")


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


def markdown_escape(text: str) -> str:
    """``text`` with Markdown's special characters backslash-escaped, so it renders as written.

    Names and ids come from users and files: unescaped, ``![x](http://...)`` would load a
    remote image, ``a|b`` would add a table column and ``:red[x]`` would colour a Streamlit page.

    >>> print(markdown_escape("a|b ![x](u) :red[x]"))
    a\\|b \\!\\[x\\]\\(u\\) \\:red\\[x\\]
    """
    return "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in text)
