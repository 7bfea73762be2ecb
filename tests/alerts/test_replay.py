"""`dgemma alerts replay`'s input: a JSON Lines file of saved deliveries, and the refusal (exit 2,
file and line named) of one it cannot use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.alerts.replay import ReplayFileError, read_deliveries
from deploy.cli import main

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data" / "alerts"


def _lines(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "deliveries.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_alert_of_every_delivery_is_read(tmp_path: Path) -> None:
    am = json.loads((DATA / "alertmanager_firing.json").read_text())
    cm = json.loads((DATA / "cloud_monitoring_closed.json").read_text())
    path = _lines(
        tmp_path,
        json.dumps({"source": "alertmanager", "payload": am}),
        "",
        json.dumps({"source": "cloud-monitoring", "payload": cm}),
    )
    alerts = read_deliveries(path)
    assert [a.source for a in alerts] == ["alertmanager"] * len(am["alerts"]) + ["cloud-monitoring"]
    assert alerts[-1].status == "resolved"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", ':2: expected {"source": ..., "payload": ...}'),
        ('{"payload": {}}', ':2: expected {"source": ..., "payload": ...} (\'source\')'),
        ('{"source": "nagios", "payload": {}}', ":2: source 'nagios' is not one of alertmanager, grafana"),
        ('{"source": "grafana", "payload": {"alerts": 3}}', ":2: alerts: expected an array, got 3"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    good = json.dumps({"source": "grafana", "payload": {"alerts": []}})
    path = _lines(tmp_path, good, line)
    with pytest.raises(ReplayFileError) as caught:
        read_deliveries(path)
    assert str(caught.value).startswith(f"{path}:2: ") and message in str(caught.value)


def test_the_cli_refuses_an_unusable_file_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["alerts", "replay", str(tmp_path / "absent.jsonl")]) == 2
    assert "No such file" in capsys.readouterr().err
    path = _lines(tmp_path, '{"source": "nagios", "payload": {}}')
    assert main(["alerts", "replay", str(path)]) == 2
    assert "source 'nagios'" in " ".join(capsys.readouterr().err.split())
