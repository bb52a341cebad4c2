"""The messages generated from ringcast.proto (and buf/validate/validate.proto,
which it imports): gen/python, protoc's Python output.

In a checkout (PYTHONPATH=clients/python/src) this package reads them from
gen/python; the wheel ships gen/python here in place of this file
(pyproject.toml: package-dir)."""

import os as _os

__path__.append(_os.path.normpath(_os.path.join(_os.path.dirname(__file__), *[_os.pardir] * 5, "gen", "python")))
