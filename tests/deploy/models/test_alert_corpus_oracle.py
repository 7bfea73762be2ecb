"""The generator draws what it drew when the recording was made (tests/helpers/corpus_oracle.py):
3,000 draws of every stream the training scripts use, and the tables they read, identical."""

from __future__ import annotations

import json

import pytest

from deploy.devstack.stack import script_module
from tests.helpers.corpus_oracle import RECORDING, record

pytestmark = pytest.mark.unit


def test_the_generator_draws_what_the_recording_holds() -> None:
    expected = json.loads(RECORDING.read_text())
    got = record(script_module("alert_corpus"))
    assert got["draws"] == expected["draws"] == 3000
    assert got["tables"] == expected["tables"]
    for name, stream in expected["streams"].items():
        assert got["streams"][name]["full"] == stream["full"], name
        digests = got["streams"][name]["digests"]
        first = next(
            (i for i, (a, b) in enumerate(zip(digests, stream["digests"], strict=True)) if a != b), None
        )
        assert first is None, f"{name}: draw {first} differs"
    assert set(got["streams"]) == set(expected["streams"])
