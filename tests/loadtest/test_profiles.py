"""The gate's profiles: every target has one bound and says where its figure comes from."""

from __future__ import annotations

import tomllib

import pytest

from loadtest.gate import PROFILES, GateProfile

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", list(tomllib.loads(PROFILES.read_text())))
def test_every_target_has_a_bound_and_a_source(name: str) -> None:
    profile = GateProfile.load(name)
    assert profile.users >= 1 and profile.targets
    for target, spec in profile.targets.items():
        assert len({"min", "max"} & set(spec)) == 1, target
        assert isinstance(spec["source"], str) and spec["source"], target


def test_the_h200_gate_cites_h200_measurements_and_projects_the_h100() -> None:
    targets = GateProfile.load("h200").targets
    for target in ("latency_p50_ms", "latency_p95_ms", "throughput_rps", "throughput_p95_ms"):
        source = targets[target]["source"]
        assert source.startswith("measured on an H200") and "docs/engine-sizing-h200" in source, target
    assert all("projection" in targets[t]["source"] for t in ("latency_p50_ms", "throughput_rps"))
    assert targets["throughput_decisions_per_s"]["min"] == 3 * targets["throughput_rps"]["min"]
