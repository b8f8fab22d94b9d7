"""HTCondor's own Python bindings as a client, in a child process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any


async def run_htcondor(code: str, folder: Path, config: str = "") -> Any:
    """Run ``code`` (which sets ``result`` to something JSON can carry) with HTCondor's
    ``htcondor2`` bindings in a child process, its ``CONDOR_CONFIG`` holding ``config``,
    and return ``result``. A child, because the bindings hold the GIL while they wait on
    the network: a CEDAR server in this process could not answer a call made here."""
    conf = folder / "condor_config"
    conf.write_text(config + "\n")
    script = f"import htcondor2, classad2, json\n{code}\nprint(json.dumps(result, default=str))\n"
    env = {**os.environ, "CONDOR_CONFIG": str(conf)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, f"htcondor2 client failed ({proc.returncode}):\n{err.decode()}"
    return json.loads(out.decode().strip().splitlines()[-1])
