"""The lines of a UTF-8 text file: the one place every reader of ``pooling`` opens a file.

A UTF-8 byte-order mark at the start of the file is dropped (spreadsheet programs write one);
a line that is not UTF-8 is refused by number, so the message names the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pooling import PoolingError


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` of a UTF-8 file, refusing any line that is not UTF-8.

    Raises:
        PoolingError: the file cannot be opened, or a line is not UTF-8 (file and line named).
    """
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise PoolingError(f"cannot open: {exc.strerror}", path=path) from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
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
