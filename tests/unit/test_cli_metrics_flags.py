"""`--metrics-port` and `--metrics-htcondor` on `mockpool run` and `mockpool up`: the spec
the pool starts with carries them (no spec edit needed), and a bad port is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mockpool.cli import pool_cmds
from mockpool.cli.main import build_parser
from mockpool.pool import api, serve
from mockpool.pool.spec import parse_spec
from mockpool.pool.specmodel import SpecError

SPEC = Path(__file__).resolve().parents[2] / "examples" / "pslot.toml"


class Started(Exception):
    """Raised where the pool would start: the test has what it came for."""


def test_run_starts_its_pool_with_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run_pool(spec: Any, *_: Any, **__: Any) -> None:
        seen["spec"] = spec
        raise Started

    monkeypatch.setattr(api, "run_pool", run_pool)
    ns = build_parser().parse_args(
        ["run", str(SPEC), "--metrics-port", "9187", "--metrics-htcondor"]
    )
    with pytest.raises(Started):
        ns.func(ns)
    assert seen["spec"].metrics_port == 9187
    assert seen["spec"].metrics_htcondor is True


def test_run_without_the_flags_keeps_the_spec_s(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def run_pool(spec: Any, *_: Any, **__: Any) -> None:
        seen["spec"] = spec
        raise Started

    monkeypatch.setattr(api, "run_pool", run_pool)
    ns = build_parser().parse_args(["run", str(SPEC)])
    with pytest.raises(Started):
        ns.func(ns)
    assert seen["spec"].metrics_port == 0 and seen["spec"].metrics_htcondor is False


def test_up_hands_the_flags_to_its_pool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def popen(cmd: list[str], **_: Any) -> None:
        seen["cmd"] = cmd
        raise Started

    monkeypatch.setattr(pool_cmds.subprocess, "Popen", popen)
    ns = build_parser().parse_args(
        ["up", str(SPEC), "--pool", str(tmp_path / "p"), "--metrics-port", "9188"]
    )
    with pytest.raises(Started):
        ns.func(ns)
    assert seen["cmd"][-2:] == ["--metrics-port", "9188"]

    # and the background process starts its Pool with them
    def pool(spec: Any, **_: Any) -> None:
        seen["spec"] = spec
        raise Started

    monkeypatch.setattr(serve, "Pool", pool)
    monkeypatch.setattr(serve.signal, "signal", lambda *_: None)  # keep pytest's own
    with pytest.raises(Started):
        serve.main([*seen["cmd"][3:], "--metrics-htcondor"])
    assert seen["spec"].metrics_port == 9188
    assert seen["spec"].metrics_htcondor is True


@pytest.mark.parametrize("command", ["run", "up"])
@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_bad_port_is_refused(command: str, port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, str(SPEC), "--metrics-port", port])
    assert (
        f"--metrics-port: must be a port number 0..65535, got '{port}'" in capsys.readouterr().err
    )


def test_the_spec_s_switch_must_be_a_boolean() -> None:
    with pytest.raises(SpecError, match=r"<t>:3: \[pool\] metrics_htcondor: must be true or false"):
        parse_spec('[pool]\nclock = "virtual"\nmetrics_htcondor = "yes"\n', "<t>")
    assert parse_spec("[pool]\nmetrics_htcondor = true\n", "<t>").metrics_htcondor is True


def test_a_virtual_run_says_it_serves_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_pool(spec: Any, *_: Any, **__: Any) -> None:
        raise Started

    monkeypatch.setattr(api, "run_pool", run_pool)
    ns = build_parser().parse_args(["run", str(SPEC), "--clock", "virtual", "--metrics-port", "1"])
    with pytest.raises(Started):
        ns.func(ns)
    assert "a virtual run serves no metrics; they are in metrics.prom" in capsys.readouterr().err
