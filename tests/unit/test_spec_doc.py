"""docs/spec.md is what scripts/gen_spec_doc.py makes from the spec's own schema (as
raft's verify_genproto), and the script refuses a key it has no meaning for."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    import gen_spec_doc  # scripts/ (pytest's pythonpath)

    return gen_spec_doc


def test_spec_doc_is_fresh(gen: ModuleType) -> None:
    assert (ROOT / "docs" / "spec.md").read_text() == gen.render(), (
        "docs/spec.md is stale: run python scripts/gen_spec_doc.py"
    )


def test_a_new_key_without_a_meaning_stops_the_script(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mockpool.pool import specmodel

    monkeypatch.setattr(specmodel, "POOL_KEYS", specmodel.POOL_KEYS | {"new_knob"})
    with pytest.raises(gen.SchemaDrift, match=r"\[pool\].*new_knob"):
        gen.render()


def test_pool_defaults_come_from_the_parser(gen: ModuleType) -> None:
    text = gen.render()
    assert "| `time_scale` | `60` |" in text
    assert '| `clock` | `"live"` |' in text
