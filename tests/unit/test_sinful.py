"""MyAddress sinful strings: HTCondor's clients read the CEDAR address, the pool's daemons
the gRPC one from the ``grpc`` parameter."""

from __future__ import annotations

import pytest

from mockpool.claimid import cedar_address, from_sinful, sinful


def test_a_daemon_without_cedar_keeps_the_plain_sinful() -> None:
    assert sinful("10.0.0.5:40001") == "<10.0.0.5:40001>"
    assert from_sinful("<10.0.0.5:40001>") == "10.0.0.5:40001"


def test_a_daemon_with_cedar_leads_with_it_and_carries_grpc_as_a_parameter() -> None:
    text = sinful("10.0.0.5:40001", cedar="10.0.0.5:9618")
    # noUDP: htcondor2 would send RESCHEDULE over UDP to a TCP-only listener otherwise
    assert text == "<10.0.0.5:9618?addrs=10.0.0.5-9618&noUDP&grpc=10.0.0.5-40001>"
    assert from_sinful(text) == "10.0.0.5:40001"
    assert cedar_address(text) == "10.0.0.5:9618"


@pytest.mark.parametrize(
    ("text", "grpc"),
    [
        ("<10.0.0.5:9618?alias=cm.example.org>", "10.0.0.5:9618"),  # HTCondor's own
        ("<10.0.0.5:9618?grpc=10.0.0.5-7&addrs=10.0.0.5-9618>", "10.0.0.5:7"),  # any order
        ("<10.0.0.5:9618?grpc=nonsense>", "10.0.0.5:9618"),  # no port: the head
        ("  <h:1>  ", "h:1"),
    ],
)
def test_from_sinful_reads_the_grpc_parameter_wherever_it_is(text: str, grpc: str) -> None:
    assert from_sinful(text) == grpc


def test_a_full_sinful_passes_through() -> None:
    text = "<10.0.0.5:9618?addrs=10.0.0.5-9618&grpc=10.0.0.5-40001>"
    assert sinful(text, cedar="1.2.3.4:5") == text
