"""The messages generated from ringcast.proto (and buf/validate/validate.proto,
which it imports): gen/python, protoc's Python output.

In a checkout (PYTHONPATH=clients/python/src) this package reads them from
gen/python; the wheel ships gen/python here in place of this file
(pyproject.toml: package-dir)."""

import os as _os

_GEN = _os.path.normpath(_os.path.join(_os.path.dirname(_os.path.realpath(__file__)), *[_os.pardir] * 5, "gen", "python"))
if not _os.path.isfile(_os.path.join(_GEN, "ringcast", "v1", "ringcast_pb2.py")):
    raise ImportError(f"ringcast: the generated messages are missing from {_GEN} (go tool task generate:python)")
__path__.append(_GEN)
