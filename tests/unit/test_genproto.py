"""The committed generated code matches what scripts/genproto.py makes from proto/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    spec = importlib.util.spec_from_file_location("genproto", ROOT / "scripts" / "genproto.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["genproto"] = mod
    spec.loader.exec_module(mod)
    mod.generate(tmp_path)
    committed = ROOT / "services" / "v1"
    fresh = sorted(p.name for p in tmp_path.iterdir())
    assert fresh == sorted(
        p.name for p in committed.iterdir() if p.is_file() and p.name != "__pycache__"
    )
    for name in fresh:
        assert (tmp_path / name).read_text() == (committed / name).read_text(), (
            f"services/v1/{name} is stale: run python scripts/genproto.py"
        )


def test_classad_message_round_trip() -> None:
    from mockpool.v1 import classad_pb2

    ad = classad_pb2.ClassAd()
    a = ad.attributes.add(name="Memory")
    a.literal.integer = 2048
    b = ad.attributes.add(name="Requirements")
    b.expression = "TARGET.Memory >= 1024"
    again = classad_pb2.ClassAd.FromString(ad.SerializeToString())
    assert again.attributes[0].literal.WhichOneof("kind") == "integer"
    assert again.attributes[0].literal.integer == 2048
    assert again.attributes[1].expression == "TARGET.Memory >= 1024"
