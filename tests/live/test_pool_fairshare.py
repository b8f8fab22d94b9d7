"""End to end on Ray actors and gRPC: fair share and group quotas in the first cycle,
the accountant on disk, Accounting ads and condor_userprio."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pytest

from mockpool import Pool
from mockpool.pool.spec import parse_spec

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _spec(config: str, slots: int, submits: list[tuple[str, str, int]], extra: str = "") -> str:
    out = f"""[pool]
time_scale = 30
duration = 3600
seed = 1

[config]
NEGOTIATOR_INTERVAL = 600
UPDATE_INTERVAL = 60
{config}

[[startds]]
name = "exec{{:04d}}"
count = 1
config = '''
NUM_CPUS = {slots}
MEMORY = {slots * 1024}
NUM_SLOTS_TYPE_1 = {slots}
SLOT_TYPE_1 = 1/{slots}
'''

[[schedds]]
count = 1
{extra}
"""
    for owner, group, n in submits:
        acct = f"accounting_group = {group}\n" if group else ""
        out += f"""
[[submit]]
at = 0
owner = "{owner}"
description = '''
executable = /bin/sleep
arguments = 100000
request_cpus = 1
request_memory = 100MB
{acct}queue {n}
'''
"""
    return out


def _first_cycle(pool: Pool) -> Counter[str]:
    assert pool.wait(lambda: len(pool.negotiator_log.cycles) >= 1, timeout=60)
    return Counter(m.submitter for m in pool.negotiator_log.cycles[0].matches)


@pytest.fixture(scope="module")
def pie_pool(ray_session: None) -> Iterator[Pool]:
    # Factors 10, 20, 40 at RUP 0.5: EUP 5, 10, 20 (a bob factor from the spec table).
    extra = """
[accountant."alice@mockpool"]
factor = 10
[accountant."bob@mockpool"]
factor = 20
[accountant."carol@mockpool"]
factor = 40
"""
    text = _spec("", 70, [("alice", "", 100), ("bob", "", 100), ("carol", "", 100)], extra)
    with Pool(parse_spec(text, "pie.toml")) as p:
        yield p


def test_eup_5_10_20_get_40_20_10_in_the_first_cycle(pie_pool: Pool) -> None:
    assert _first_cycle(pie_pool) == {
        "alice@mockpool": 40,
        "bob@mockpool": 20,
        "carol@mockpool": 10,
    }


def test_accounting_ads_userprio_and_the_state_file(pie_pool: Pool) -> None:
    def charged() -> bool:
        ads = {a.eval("Name"): a for a in pie_pool.ads("Accounting")}
        return (
            ads.get("alice@mockpool") is not None
            and ads["alice@mockpool"].eval("WeightedResourcesUsed") == 40
        )

    assert pie_pool.wait(charged, timeout=60)
    ads = {a.eval("Name"): a for a in pie_pool.ads("Accounting")}
    assert ads["bob@mockpool"].eval("PriorityFactor") == 20.0
    assert ads["<none>"].eval("IsAccountingGroup") is True

    pie_pool.userprio("setfactor", "carol@mockpool", 80.0)
    got = pie_pool.userprio()
    carol = next(a for a in got if a.eval("Name") == "carol@mockpool")
    assert carol.eval("PriorityFactor") == 80.0
    state = json.loads((pie_pool.state_dir / "central" / "accountant.json").read_text())
    assert state["records"]["carol@mockpool"]["factor"] == 80.0


@pytest.fixture(scope="module")
def group_pool(ray_session: None) -> Iterator[Pool]:
    config = """GROUP_NAMES = "group_physics, group_chemistry"
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_chemistry = 10"""
    text = _spec(
        config,
        40,
        [
            ("alice", "group_physics", 50),
            ("bob", "group_chemistry", 50),
            ("carol", "", 50),
        ],
    )
    with Pool(parse_spec(text, "groups.toml")) as p:
        yield p


def test_static_group_quotas_cap_each_group(group_pool: Pool) -> None:
    # 40 slots: physics 20, chemistry 10; the root <none> keeps 40 - 30 = 10 for carol.
    assert _first_cycle(group_pool) == {
        "group_physics.alice@mockpool": 20,
        "group_chemistry.bob@mockpool": 10,
        "carol@mockpool": 10,
    }
    lines = group_pool.negotiator_log_lines
    assert any(
        line.endswith("Group group_physics - BEGIN NEGOTIATION with a quota limit of 20")
        for line in lines
    )
