"""A cursor kept in a file, written as the Go client's SaveCursor writes it
(so `ringcast tail --cursor-file` in Go and Python share files)."""

from __future__ import annotations

import os
import secrets

from .cursor import ZERO_CURSOR, Cursor, CursorError, format_cursor, parse_cursor


def save_cursor(path: str | os.PathLike[str], c: Cursor) -> None:
    """Writes c to path atomically: a temporary file in the same directory,
    synced, renamed over path, and the directory synced, so a crash leaves
    either the old cursor or the new one, never a torn file."""
    text = format_cursor(c) + "\n"
    path = os.fspath(path)
    d = os.path.dirname(path) or "."
    fd, tmp = _create_temp(d, _temp_prefix(path))
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dfd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load_cursor(path: str | os.PathLike[str]) -> Cursor:
    """Reads a cursor written by save_cursor (or the Go client). A missing
    file is the zero cursor (start from a snapshot); anything that does not
    parse raises CursorError, never silently a fresh start."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return ZERO_CURSOR
    try:
        return parse_cursor(text.strip())
    except CursorError as e:
        raise CursorError(f"load cursor from {os.fspath(path)}: {e}") from None


def _create_temp(d: str, prefix: str) -> tuple[int, str]:
    """A new file prefix+digits in d (digits, as the Go client names its
    temporaries, so either client's remove_cursor_temps finds them)."""
    for _ in range(100):
        tmp = os.path.join(d, prefix + str(secrets.randbelow(10**10)))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"save cursor: no free temporary name in {d}")


def _temp_prefix(path: str) -> str:
    return "." + os.path.basename(path) + ".tmp"


def remove_cursor_temps(path: str | os.PathLike[str]) -> None:
    """Removes the temporary files a save interrupted by a kill left next to
    path. Call it at start, from the cursor file's only writer."""
    path = os.fspath(path)
    d = os.path.dirname(path) or "."
    prefix = _temp_prefix(path)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return
    for name in names:
        rest = name[len(prefix):] if name.startswith(prefix) else ""
        if not rest or not (rest.isascii() and rest.isdigit()):
            continue
        full = os.path.join(d, name)
        if os.path.isfile(full) and not os.path.islink(full):
            try:
                os.unlink(full)
            except FileNotFoundError:
                pass

