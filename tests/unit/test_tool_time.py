"""time() and random() where no pool clock runs: the tools and the configuration.

The evaluator has no clock and no generator of its own (a daemon's core passes the pool's
date and its seeded generator). The tools keep HTCondor's meaning by passing the wall
clock and a generator of their own at their call sites (mockpool.tooltime); the
configuration is read before any pool clock runs, so time() in a knob's value is refused
with the knob named, and $EVAL's random() draws from the configuration's seed.
"""

from __future__ import annotations

import time

import pytest

from mockpool.cli.main import main
from mockpool.config import ConfigDict, ConfigError, parse_config


def _eval(capsys: pytest.CaptureFixture[str], expression: str) -> str:
    assert main(["eval", expression]) == 0
    return capsys.readouterr().out.strip()


def test_the_eval_tool_reads_the_wall_clock(capsys: pytest.CaptureFixture[str]) -> None:
    before = int(time.time())
    got = int(_eval(capsys, "time()"))
    assert before <= got <= int(time.time())


def test_the_eval_tool_draws_random_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    draws = {float(_eval(capsys, "random()")) for _ in range(5)}
    assert all(0.0 <= d < 1.0 for d in draws) and len(draws) > 1


def _config(text: str, seed: int) -> ConfigDict:
    return parse_config(text, "pool.conf", base=ConfigDict(seed=seed))


def test_eval_macro_draws_from_the_configuration_seed() -> None:
    text = "R = random(1000000)\nX = $EVAL(R)\n"
    assert _config(text, 1).get_str("X") == _config(text, 1).get_str("X")
    assert _config(text, 1).get_str("X") != _config(text, 2).get_str("X")


def test_time_in_a_knob_is_refused_with_its_place() -> None:
    cfg = parse_config("T = time()\nX = $EVAL(T)\nN = time() % 7\n", "pool.conf")
    with pytest.raises(ConfigError, match=r"pool\.conf:2: X: \$EVAL\(T\): time\(\) has no value"):
        cfg.get_str("X")
    with pytest.raises(ConfigError, match=r"pool\.conf:3: N = "):
        cfg.get_int("N")
