"""Go's fmt printing of `{{ $value }}` and `{{ $labels }}` (evals/alerts/gofmt.py)."""

from __future__ import annotations

import pytest

from evals.alerts.gofmt import go_labels, go_value

pytestmark = pytest.mark.unit


def test_go_value_prints_as_go_fmt_does() -> None:
    cases = {0: "0", 1: "1", 0.5: "0.5", 97.25: "97.25", 123456.0: "123456", 1e6: "1e+06"}
    cases |= {
        1234567.0: "1.234567e+06",
        0.0001: "0.0001",
        0.00001: "1e-05",
        -3.0: "-3",
        0.1 + 0.2: "0.30000000000000004",
    }
    assert {v: go_value(v) for v in cases} == cases
    assert go_labels({"job": "pg", "instance": "db-1:9187"}) == "map[instance:db-1:9187 job:pg]"
