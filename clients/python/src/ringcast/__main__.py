"""python3 -m ringcast COMMAND: the ringcast CLI's client commands in Python.

    python3 -m ringcast tail [flags]   subscribe; print one JSON object per fact and per signal
"""

from __future__ import annotations

import sys

USAGE = """Usage: python3 -m ringcast COMMAND [flags]

  tail [flags]   subscribe; print one JSON object per fact and per signal
                 (the flags and output of `ringcast tail`)

Run python3 -m ringcast tail --help for its flags.
"""


def main() -> int:
    args = sys.argv[1:]
    if not args:
        sys.stderr.write(USAGE)
        return 2
    if args[0] == "tail":
        from .tail import run

        return run(args[1:], sys.stdout.buffer, sys.stderr)
    if args[0] in ("help", "-h", "--help", "-help"):
        sys.stdout.write(USAGE)
        return 0
    if args[0] in ("version", "--version", "-version"):
        from . import __version__

        print(f"ringcast (Python client) {__version__}")
        return 0
    sys.stderr.write(f"ringcast: unknown command {args[0]!r}\n\n{USAGE}")
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(1)
