"""The lines of a UTF-8 text file: the one place every reader of ``pooling`` opens a file.

A UTF-8 byte-order mark at the start of the file is dropped (spreadsheet programs write one);
a line that is not UTF-8 is refused by number, so the message names the file and the line.

A line longer than :data:`LINE_CAP` bytes is refused by number too, after reading at most the
cap: without one, a file with no line end (a link to ``/dev/zero``, a binary file given by
mistake) would be read into memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

from pooling import PoolingError

#: The longest line a reader accepts, in bytes: 64 MiB. Real lines are far shorter: the longest
#: are an answer with every context it was given (100 chunks of 8,000 characters is under
#: 4 MiB even at 4 bytes a character) or a whole book as one corpus document (a long novel is
#: 3 to 4 MB); the cap leaves room for ten times those, while bounding what one line can cost
#: (the line, its text and the records parsed from it: a few hundred MiB at most). The same cap
#: bounds one CSV/TSV record (a quoted field may span lines) and one field of it.
LINE_CAP = 64 * 2**20


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` of a UTF-8 file, refusing any line that is not UTF-8.

    Raises:
        PoolingError: the file cannot be opened, a line is not UTF-8, or a line is longer than
            :data:`LINE_CAP` bytes (file and line named).
    """
    path = Path(path)
    cap = LINE_CAP
    try:
        handle = path.open("rb", buffering=1 << 20)
    except OSError as exc:
        raise PoolingError(f"cannot open: {exc.strerror}", path=path) from exc
    with handle:
        for number, raw in enumerate(iter(partial(handle.readline, cap + 1), b""), start=1):
            if len(raw) > cap and not raw.endswith(b"\n"):  # cap bytes and a line end are within the cap
                raise PoolingError(over_cap("line", cap), path=path, line=number)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise PoolingError(
                    f"not valid UTF-8 (byte {exc.start + 1} of the line); re-save the file as UTF-8",
                    path=path,
                    line=number,
                ) from exc
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield number, text


def over_cap(what: str, cap: int) -> str:
    """The message for a line (or CSV record) longer than ``cap`` bytes.

    >>> over_cap("line", 1000)
    'longer than 1,000 bytes, the cap of one line (1,000 bytes read without a line end); is this the right file?'
    """
    if what == "line":
        return f"longer than {cap:,} bytes, the cap of one line ({cap:,} bytes read without a line end); is this the right file?"
    return (f"a {what} longer than {cap:,} characters, the cap of one {what} (a quoted field that spans lines counts "
            "whole); is a quote left open?")


def first_bytes(path: str | Path, n: int) -> bytes:
    """The first ``n`` bytes of ``path`` (fewer if it is shorter), to tell a binary format by its
    magic number.

    Raises:
        PoolingError: the file cannot be opened.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            return handle.read(n)
    except OSError as exc:
        raise PoolingError(f"cannot open: {exc.strerror}", path=path) from exc
