"""The wheel: built from the repository with pip (offline, Debian's
setuptools), installed into a fresh virtual environment that sees Debian's
protobuf and httpx, typed (py.typed and the generated .pyi), and working
there: `python -m ringcast tail` against a real server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import ringcast

from conftest import ROOT, Server


def test_the_wheel_installs_into_a_fresh_venv_and_runs(start_server: Callable[..., Server], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("PIP_")}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing but the wheel and what Debian installed
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(ROOT / "clients" / "python")], check=True, env=env, capture_output=True)
    wheels = list(dist.glob("ringcast-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", str(wheels[0])], check=True, env=env,
                   capture_output=True)
    where = subprocess.run(
        [py, "-c", "import pathlib, ringcast; p = pathlib.Path(ringcast.__file__).parent; print(p); "
         "assert (p / 'py.typed').is_file(); assert (p / '_gen/ringcast/v1/ringcast_pb2.pyi').is_file(); "
         "print(ringcast.pb.Fact.DESCRIPTOR.full_name)"],
        check=True, env=env, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert where[0].startswith(str(venv)), f"ringcast imported from {where[0]}, not the venv"
    assert where[1] == "ringcast.v1.Fact"

    srv = start_server()
    with ringcast.Client(srv.url) as c:
        r = c.publish([{"topic": "wheel/a", "type": "x.n", "data": {"n": 1}}])
    out = subprocess.run([py, "-m", "ringcast", "tail", "--server", srv.url, "--end-at-head"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith(f'{{"seq":{r.seq},"index":0,"last":true,"topic":"wheel/a"')
