"""`-pool`: HTCondor's tools name a central manager with it; an existing folder is still
an `up` pool's folder (the only form before)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mockpool.cli.pool_cmds import _collector_arg, _tool_info


def _ns(pool: str | None) -> argparse.Namespace:
    return argparse.Namespace(pool=pool)


def test_host_port_names_the_collector(tmp_path: Path) -> None:
    assert _collector_arg(_ns("cm.example.org:9618")) == "cm.example.org:9618"
    assert _collector_arg(_ns("127.0.0.1:40000")) == "127.0.0.1:40000"
    assert _collector_arg(_ns("[::1]:9618")) == "[::1]:9618"


def test_a_folder_or_nothing_is_not_a_collector(tmp_path: Path) -> None:
    odd = tmp_path / "a:1"  # a folder whose name looks like host:port is a folder
    odd.mkdir()
    assert _collector_arg(_ns(str(odd))) == ""
    assert _collector_arg(_ns(str(tmp_path))) == ""
    assert _collector_arg(_ns(None)) == ""
    assert _collector_arg(_ns("cm.example.org")) == ""  # no port: a folder's name
    assert _collector_arg(_ns("cm:999999")) == ""  # not a port


def test_the_home_pools_dates_are_used_only_for_the_same_collector(tmp_path: Path) -> None:
    info = {"collector": "127.0.0.1:5000", "time_scale": 60, "epoch_wall": 100.0}
    (tmp_path / "pool.json").write_text(json.dumps(info))
    assert _tool_info(tmp_path, "127.0.0.1:5000") == info
    other = _tool_info(tmp_path, "cm:9618")
    assert other["collector"] == "cm:9618" and other["time_scale"] == 1.0
    assert _tool_info(tmp_path / "none", "cm:9618")["collector"] == "cm:9618"
