"""A machine's identity attributes (Arch, OpSys..., domains) from its configuration."""

from __future__ import annotations

import pytest

from mockpool.config import ConfigError, parse_config
from mockpool.startd.machine import Machine


def slot_ad(text: str, name: str = "exec0001") -> dict[str, object]:
    m = Machine(name, parse_config(text, "test.conf"), "127.0.0.1:9618", 1000, 0.0)
    ad = m.public_ads(0.0)[0]
    keys = ("Arch", "OpSys", "OpSysAndVer", "OpSysMajorVer", "OpSysName")
    keys += ("UidDomain", "FileSystemDomain", "HasFileTransfer")
    return {k: ad.eval(k) for k in keys}


def test_defaults_describe_an_x86_64_almalinux_9_host() -> None:
    assert slot_ad("") == {
        "Arch": "X86_64",
        "OpSys": "LINUX",
        "OpSysAndVer": "AlmaLinux9",
        "OpSysMajorVer": 9,
        "OpSysName": "AlmaLinux",
        "UidDomain": "mockpool",
        "FileSystemDomain": "exec0001",  # HTCondor's default: $(FULL_HOSTNAME)
        "HasFileTransfer": True,
    }


def test_knobs_set_each_attribute() -> None:
    text = (
        "ARCH = aarch64\nOPSYSANDVER = Ubuntu22\nOPSYSMAJORVER = 22\nOPSYSNAME = Ubuntu\n"
        "UID_DOMAIN = example.org\nFILESYSTEM_DOMAIN = fs.example.org\n"
    )
    ad = slot_ad(text)
    assert ad["Arch"] == "aarch64"
    assert ad["OpSys"] == "LINUX"
    assert (ad["OpSysAndVer"], ad["OpSysMajorVer"], ad["OpSysName"]) == ("Ubuntu22", 22, "Ubuntu")
    assert (ad["UidDomain"], ad["FileSystemDomain"]) == ("example.org", "fs.example.org")


def test_a_major_version_that_is_not_a_number_names_the_knob() -> None:
    with pytest.raises(ConfigError, match=r"test\.conf:2: OPSYSMAJORVER = 'nine'"):
        slot_ad("ARCH = aarch64\nOPSYSMAJORVER = nine\n")
