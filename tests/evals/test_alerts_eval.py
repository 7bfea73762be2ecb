"""`dgemma alerts eval`: the labelled file and its refusals, the scoring on hand-made rows (recall,
noise, confusion, severity, the sweep, the suggestion's split), and the command against the real
gateway app over an engine that answers what each alert's script says."""

from __future__ import annotations

import dataclasses
import itertools
import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.alerts.answers import RouterAnswers
from app.alerts.policy import Policy, Thresholds
from app.alerts.records import Action, Alert, Page, Severity
from app.gateway.main import create_app
from deploy.cli import main
from evals.alerts.classify import Row, decided
from evals.alerts.labelled import Expected, Labelled, check, read_labelled, without_severity
from evals.alerts.score import (
    GRID,
    Ratio,
    action_counts,
    at_threshold,
    confusion,
    missed_pages,
    noise,
    operating_point,
    page_recall,
    point,
    severity_accuracy,
    split,
    suggest,
    sweep,
    team_accuracy,
    toml_lines,
)
from evals.errors import LabelledFileError
from tests.helpers.alerts import policy_toml, write_policy
from tests.helpers.gateway import ScriptedEngine, gateway_settings, serving

# The policy of these tests (the default one is the kit's, and changes with it).
POLICY_TOML = policy_toml(
    teams={"database": "database", "network": "network", "application": "application"},
    routes={
        route: {"page": ["console"], "ticket": ["console"]}
        for route in ("database", "network", "application", "oncall")
    },
    questions={
        "page": "Should on-call be woken up now?",
        "team": "Which team owns it?",
        "severity": "How severe is it?",
    },
)
LEVELS = ["info", "warning", "error", "critical"]


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy(tmp_path_factory.mktemp("policy"), POLICY_TOML)


@pytest.fixture(scope="module")
def policy(policy_file: Path) -> Policy:
    return Policy.load(policy_file)


def _alert(title: str, **labels: str) -> Alert:
    return Alert(
        source="alertmanager", key=f"alertmanager:{title}", status="firing", title=title, summary=title,
        labels={"alertname": title, **labels},
    )  # fmt: skip


def _answers(p: float, team: str = "database", level: int = 1, p_team: float = 0.8) -> RouterAnswers:
    others = [t for t in ("database", "network", "application") if t != team]
    wire = {
        "page": {"type": "noul", "noul": p},
        "team": {
            "type": "choice", "choice": team, "confidence": p_team,
            "probabilities": {team: p_team, **dict.fromkeys(others, (1 - p_team) / 2)},
        },
        "severity": {"type": "score", "score": float(level), "confidence": 0.9, "legend": {},
                     "probabilities": {}},
    }  # fmt: skip
    return RouterAnswers(p, team, p_team, float(level), wire=wire)


def _item(title: str, page: bool, team: str = "database", severity: Severity = "warning") -> Labelled:
    return Labelled("labelled.jsonl:1", 0, _alert(title), Expected(page, team, severity))


def _hand(
    title: str, expected_page: bool, action: Action, *, team: str = "database",
    expected_team: str = "database", severity: Severity = "warning", expected_severity: Severity = "warning",
) -> Row:  # fmt: skip
    """A row whose decision is written by hand (the pure scoring needs no policy)."""
    item = Labelled(
        "labelled.jsonl:1", 0, _alert(title), Expected(expected_page, expected_team, expected_severity)
    )
    answers = _answers(0.5, team)
    page = Page(
        alert=item.alert, action=action, route=team, severity=severity, classified=True,
        answers=answers.wire, reason="by hand",
    )  # fmt: skip
    return Row(item, answers, page)


@pytest.mark.unit
def test_recall_counts_the_expected_pages_paged_and_noise_the_pages_not_expected() -> None:
    rows = [
        _hand("a", True, "page"),
        _hand("b", True, "ticket"),
        _hand("c", True, "page"),
        _hand("d", False, "page"),
        _hand("e", False, "drop"),
        _hand("f", False, "ticket"),
    ]
    assert page_recall(rows) == Ratio(2, 3) and str(page_recall(rows)) == "2/3 (0.667)"
    assert [r.item.alert.title for r in missed_pages(rows)] == ["b"]
    assert [r.item.alert.title for r in noise(rows)] == ["d"]
    assert action_counts(rows) == {"page": 3, "ticket": 2, "drop": 1}
    assert action_counts(rows[1:2]) == {"page": 0, "ticket": 1, "drop": 0}
    assert page_recall(rows[3:]).value is None and str(page_recall(rows[3:])) == "-"


@pytest.mark.unit
def test_teams_are_the_models_answer_and_severity_is_scored_exact_and_within_one() -> None:
    rows = [
        _hand("a", True, "page", team="database", expected_team="database", severity="critical",
              expected_severity="critical"),
        _hand("b", True, "page", team="network", expected_team="database", severity="error",
              expected_severity="critical"),
        _hand("c", False, "ticket", team="network", expected_team="network", severity="info",
              expected_severity="error"),
        _hand("d", False, "ticket", team="application", expected_team="network"),
    ]  # fmt: skip
    # A rule that decided without the model: no team answer, so not in the team figures.
    alone = rows[0].item
    rows.append(Row(alone, None, Page(alert=alone.alert, action="page", route="oncall",
                                      severity="critical", classified=False)))  # fmt: skip
    assert team_accuracy(rows) == Ratio(2, 4)
    teams = ["database", "network", "application"]
    assert confusion(rows, teams) == {
        "database": {"database": 1, "network": 1, "application": 0},
        "network": {"database": 0, "network": 1, "application": 1},
        "application": {"database": 0, "network": 0, "application": 0},
    }
    exact, within_one = severity_accuracy(rows, LEVELS)
    assert exact == Ratio(3, 5) and within_one == Ratio(4, 5)  # c is two levels off


@pytest.mark.unit
def test_the_sweep_moves_the_threshold_that_pages_and_reaches_both_ends(policy: Policy) -> None:
    scripted = [  # title, expected page, p(page), the model's severity level
        ("quiet", False, 0.05, 0), ("blip", False, 0.30, 1), ("unsure", True, 0.50, 1),
        ("sure", True, 0.95, 2), ("severe", True, 0.01, 3),
    ]  # fmt: skip
    rows = [decided(_item(t, page), _answers(p, level=level), policy) for t, page, p, level in scripted]
    assert [r.page.action for r in rows][2:] == ["page", "page", "page"]  # the uncertain band pages
    points = sweep(rows, policy)
    assert [p.threshold for p in (points[0], points[-1])] == [0.0, 1.0]
    assert points[0].paged == 5 and points[0].share == 1 and points[0].recall == Ratio(3, 3)
    assert points[0].noise == 2
    # At 1.0 only what pages whatever p(page) says: the model's critical severity.
    assert points[-1].paged == 1 and points[-1].recall == Ratio(1, 3) and points[-1].noise == 0
    assert all(a.paged >= b.paged for a, b in itertools.pairwise(points))
    # The policy's own `uncertain` is the router's operating point, re-decided or not.
    at_policy = next(p for p in points if p.threshold == policy.spec.thresholds.uncertain)
    assert at_policy == operating_point(rows, policy.spec.thresholds.uncertain)
    assert (at_policy.paged, at_policy.recall) == (3, Ratio(3, 3))
    # Just above the uncertain row: it is no longer paged (p(page) 0.50 < 0.51).
    assert point(rows, policy, 0.51).recall == Ratio(2, 3)


@pytest.mark.unit
def test_moving_the_threshold_keeps_the_thresholds_in_order(policy: Policy) -> None:
    t = policy.spec.thresholds
    high = at_threshold(policy, 0.9).spec.thresholds
    assert (high.ticket, high.uncertain, high.page) == (t.ticket, 0.9, 0.9)
    low = at_threshold(policy, 0.05).spec.thresholds
    assert (low.ticket, low.uncertain, low.page) == (0.05, 0.05, t.page)
    assert low.page_severity == t.page_severity and low.team_confidence == t.team_confidence
    assert policy.spec.thresholds.uncertain == 0.4  # the original is untouched
    Thresholds.model_validate(high.model_dump())  # still a valid policy


def _suggest_rows(policy: Policy) -> list[Row]:
    pages = [0.12, 0.33, 0.41, 0.47, 0.52, 0.58, 0.66, 0.71, 0.83, 0.91]
    quiet = [0.02, 0.06, 0.09, 0.14, 0.18, 0.22, 0.27, 0.31, 0.36, 0.44]
    labelled = [(f"page-{i}", True, p) for i, p in enumerate(pages)]
    labelled += [(f"quiet-{i}", False, p) for i, p in enumerate(quiet)]
    return [decided(_item(t, page), _answers(p), policy) for t, page, p in labelled]


@pytest.mark.unit
def test_the_split_is_stratified_by_expected_page_and_seeded(policy: Policy) -> None:
    rows = _suggest_rows(policy)
    fit, held = split(rows, seed=3)
    titles = [r.item.alert.title for r in fit + held]
    assert sorted(titles) == sorted(r.item.alert.title for r in rows)  # disjoint, and every row
    assert page_recall(fit).total == page_recall(held).total == 5 and len(fit) == len(held) == 10
    assert [r.item.alert.title for r in split(rows, seed=3)[0]] == [r.item.alert.title for r in fit]
    assert {r.item.alert.title for r in split(rows, seed=4)[0]} != {r.item.alert.title for r in fit}


@pytest.mark.unit
def test_suggest_fits_the_threshold_on_one_half_and_reports_it_on_the_other(policy: Policy) -> None:
    rows = _suggest_rows(policy)
    for seed in range(6):
        s = suggest(rows, policy, 1.0, seed=seed)
        fit, held = split(rows, seed)
        lowest_fit_page = min(r.p_page or 0 for r in fit if r.item.expected.page)
        # The highest threshold of the grid that pages every expected page of the fitting half...
        assert s.threshold == max(x for x in GRID if x <= lowest_fit_page)
        assert s.fit == point(fit, policy, s.threshold) and s.fit.recall == Ratio(5, 5)
        assert not point(fit, policy, round(s.threshold + 0.01, 2)).recall.reaches(1.0)
        # ...measured on the other half, as it is there (below target when that half has a lower one).
        held_pages = [r.p_page or 0 for r in held if r.item.expected.page]
        assert s.held_out == point(held, policy, s.threshold)
        assert s.held_out.recall == Ratio(sum(p >= s.threshold for p in held_pages), 5)
        assert s.current_held_out == operating_point(held, 0.4)
    # The TOML pastes into a policy: the moved threshold, every other one as it was.
    s = suggest(rows, policy, 0.8, seed=0)
    pasted = Thresholds.model_validate(tomllib.loads(toml_lines(s.thresholds))["thresholds"])
    assert pasted.uncertain == s.threshold and pasted.page_severity == "critical"
    assert pasted.page == max(0.7, s.threshold) and pasted.team_confidence == 0.5
    assert s.fit.recall.reaches(0.8)
    with pytest.raises(LabelledFileError, match="at least 2 alerts expected to page"):
        suggest(rows[:1] + rows[10:], policy, 0.9)


class Ticketing(Policy):
    """A policy that tickets every expected page below p(page) 0.5 whatever the threshold (as a
    rule would)."""

    def decide(self, alert: Alert, answers: RouterAnswers | None) -> Page:
        page = super().decide(alert, answers)
        low = answers is not None and answers.p_page < 0.5 and alert.title.startswith("page-")
        return dataclasses.replace(page, action="ticket") if low else page


@pytest.mark.unit
def test_a_recall_no_threshold_reaches_gets_the_best_there_is(policy: Policy) -> None:
    ticketing = Ticketing(policy.spec, policy.sink_configs, policy.source)
    rows = _suggest_rows(ticketing)
    s = suggest(rows, ticketing, 1.0, seed=0)
    fit, _ = split(rows, 0)
    reachable = [r.p_page or 0 for r in fit if r.item.expected.page and (r.p_page or 0) >= 0.5]
    assert not s.reached and s.fit.recall == Ratio(len(reachable), 5)
    assert s.threshold == max(x for x in GRID if x <= min(reachable))
    assert suggest(rows, ticketing, 0.2, seed=0).reached


@pytest.mark.unit
def test_without_severity_removes_only_the_senders_severity_label() -> None:
    alert = Alert(
        source="grafana", key="grafana:1", status="firing", title="DiskFull", summary="critical: disk full",
        labels={"alertname": "DiskFull", "Severity": "critical", "team": "db"},
        annotations={"severity": "kept"},
    )  # fmt: skip
    stripped = without_severity(alert)
    assert stripped.labels == {"alertname": "DiskFull", "team": "db"}
    assert stripped.annotations == alert.annotations and stripped.summary == alert.summary
    assert stripped.key == alert.key and "Severity" not in json.dumps(stripped.state())
    assert without_severity(stripped) is stripped
    assert without_severity(alert, "team").labels == {"alertname": "DiskFull", "Severity": "critical"}


def _am(*alerts: tuple[str, dict[str, str]], status: str = "firing") -> dict[str, Any]:
    return {
        "version": "4",
        "alerts": [
            {"status": status, "labels": {"alertname": title, **labels},
             "annotations": {"summary": f"{title} on prod"}, "fingerprint": f"fp-{title}"}
            for title, labels in alerts
        ],
    }  # fmt: skip


def _line(source: str, payload: dict[str, Any], *expected: tuple[bool, str, str], **extra: Any) -> str:
    entries = [{"page": p, "team": t, "severity": s} for p, t, s in expected]
    return json.dumps({"source": source, "payload": payload, "expected": entries, **extra})


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.unit
def test_every_alert_of_every_labelled_delivery_is_read_with_its_labels(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "labelled.jsonl",
        _line("alertmanager", _am(("A", {}), ("B", {})), (True, "database", "critical"),
              (False, "network", "info"), note="two"),
        "",
        _line("grafana", {"alerts": [{"status": "firing", "labels": {"alertname": "C"}}]},
              (False, "application", "warning")),
    )  # fmt: skip
    items = read_labelled(path)
    assert [(i.alert.title, i.expected.page, i.expected.team) for i in items] == [
        ("A", True, "database"), ("B", False, "network"), ("C", False, "application"),
    ]  # fmt: skip
    assert [i.where for i in items] == [f"{path}:1", f"{path}:1", f"{path}:3"]
    assert [i.index for i in items] == [0, 1, 0] and items[0].note == "two" and items[2].note is None


GOOD = _line("alertmanager", _am(("A", {})), (True, "database", "critical"))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ('{"source": "alertmanager", "payload": {"alerts": []}}', "expected: field required"),
        (_line("nagios", {}, (True, "database", "critical")), "source: expected"),
        (_line("alertmanager", {"alerts": 3}, (True, "database", "critical")),
         "payload: alerts: expected an array, got 3"),
        (_line("alertmanager", _am(("A", {})), (True, "database", "critical"), (True, "network", "info")),
         "the payload has 1 alert(s) and `expected` 2 entries"),
        (_line("alertmanager", _am(("A", {})), (True, "database", "urgent")), "expected[0].severity:"),
        (json.dumps({"source": "alertmanager", "payload": _am(("A", {})),
                     "expected": [{"page": "yes", "team": "database", "severity": "info"}]}),
         "expected[0].page:"),
        (_line("alertmanager", _am(("A", {}), status="resolved"), (True, "database", "critical")),
         "alert 0 (A) is resolved"),
    ],
)  # fmt: skip
@pytest.mark.unit
def test_a_bad_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = _write(tmp_path / "labelled.jsonl", GOOD, line)
    with pytest.raises(LabelledFileError) as caught:
        read_labelled(path)
    assert str(caught.value).startswith(f"{path}:2: ") and message in str(caught.value)


@pytest.mark.unit
def test_a_team_or_level_the_policy_does_not_know_is_named(tmp_path: Path, policy: Policy) -> None:
    path = _write(
        tmp_path / "labelled.jsonl", GOOD, _line("alertmanager", _am(("A", {})), (True, "dba", "info"))
    )
    with pytest.raises(LabelledFileError, match=r":2: expected\[0\]\.team 'dba' is not a team of "):
        check(read_labelled(path), policy)


@pytest.mark.unit
def test_the_command_refuses_an_unusable_file_with_exit_2(
    tmp_path: Path, policy_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "labelled.jsonl", GOOD, "{not json")
    out = tmp_path / "out"
    assert main(["alerts", "eval", str(path), "--policy", str(policy_file), "--out", str(out)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}:2: expected" in err and "not JSON" in err and "Traceback" not in err
    assert not out.exists()
    assert main(["alerts", "eval", str(tmp_path / "absent.jsonl"), "--policy", str(policy_file)]) == 2
    assert "No such file" in capsys.readouterr().err
    assert main(["alerts", "eval", str(path), "--policy", str(policy_file), "--suggest", "1.5"]) == 2
    assert "--suggest must be a page recall in (0, 1]" in capsys.readouterr().err


# -- the command, against the gateway ------------------------------------------------------------

# Each alert's answers, by title: p(page), the model's team, its severity level (info..critical).
SCRIPT: dict[str, tuple[float, str, int]] = {
    "DiskFull": (0.90, "database", 3),  # expected page: paged
    "ReplicaLag": (0.30, "database", 2),  # expected page: a ticket, the missed page
    "CertExpiring": (0.50, "network", 1),  # expected no page: paged (the uncertain band), noise
    "PodRestarts": (0.20, "application", 1),  # expected no page, info: a ticket, severity one off
    "HighLatency": (0.75, "network", 2),  # grafana, expected page, application: paged, team wrong
    "VM sent bytes": (0.25, "network", 1),  # cloud monitoring, expected no page: a ticket
}


class ScriptedAlerts(ScriptedEngine):
    """The engine answering each alert as SCRIPT says (in the option order it is asked)."""

    @staticmethod
    def _answer(body: dict[str, Any]) -> dict[str, Any]:
        p, team, level = SCRIPT[json.loads(body["state"])["alert"]]
        answers: dict[str, Any] = {}
        for name, q in body["questions"].items():
            if q["type"] == "noul":
                probs = {"yes": p, "no": 1 - p}
            elif q["type"] == "choice":
                probs = {t: 0.8 if t == team else 0.1 for t in q["criteria"]}
            else:
                probs = {
                    str(i): 0.94 if level == LEVELS.index(c) else 0.02 for i, c in enumerate(q["criteria"])
                }
            answers[name] = {"type": q["type"], "probabilities": probs}
        diagnostics = {name: {"label_mass": 0.9} for name in body["questions"]}
        return {
            "answers": answers,
            "diagnostics": diagnostics,
            "usage": {"input_tokens": 10, "output_tokens": 3},
        }


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[str, ScriptedAlerts]]:
    engine = ScriptedAlerts()
    with serving(create_app(gateway_settings(mode="single"), engine=engine)) as url:
        yield url, engine


def _labelled_file(path: Path) -> Path:
    cloud = json.loads(
        (Path(__file__).resolve().parents[1] / "data/alerts/cloud_monitoring_open.json").read_text()
    )
    del cloud["incident"]["severity"]  # its policy's "Critical" would floor it to a page
    am = _am(
        ("DiskFull", {"severity": "critical", "instance": "db-1"}),
        ("ReplicaLag", {"severity": "warning", "instance": "db-2"}),
        ("CertExpiring", {"Severity": "warning"}),
        ("PodRestarts", {"namespace": "shop"}),
    )
    grafana = {"alerts": [{"status": "firing", "labels": {"alertname": "HighLatency", "service": "shop"}}]}
    return _write(
        path,
        _line("alertmanager", am, (True, "database", "critical"), (True, "database", "error"),
              (False, "network", "warning"), (False, "application", "info")),
        _line("grafana", grafana, (True, "application", "error"), note="the team is the shop's"),
        _line("cloud-monitoring", cloud, (False, "network", "warning")),
    )  # fmt: skip


@pytest.mark.inprocess
def test_the_command_scores_the_routers_decisions(
    gateway: tuple[str, ScriptedAlerts], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    url, engine = gateway
    monkeypatch.setenv("DGEMMA_ALERTS_GATEWAY_API_KEY", "test")
    path, out = _labelled_file(tmp_path / "labelled.jsonl"), tmp_path / "report"
    before = len(engine.calls)
    args = ["alerts", "eval", str(path), "--gateway", url, "--policy", str(policy_file), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    print(printed)  # the report, for -s
    states = [json.loads(b["state"]) for b in engine.calls[before:]]
    assert sorted(s["alert"] for s in states) == sorted(SCRIPT)
    sent = {s["alert"]: s.get("labels", {}) for s in states}
    assert sent["DiskFull"]["severity"] == "critical" and sent["CertExpiring"] == {
        "alertname": "CertExpiring", "Severity": "warning",
    }  # fmt: skip

    report = json.loads((out / "report.json").read_text())
    assert report["alerts"] == 6 and report["without_severity"] is None
    assert report["page_recall"] == {"hit": 2, "total": 3, "value": pytest.approx(2 / 3)}
    assert report["missed_pages"] == [f"{path}:1"]
    assert report["noise"]["count"] == 1 and report["pages"] == 3
    assert report["actions"] == {"page": 3, "ticket": 3, "drop": 0}
    assert report["team_accuracy"]["hit"] == 5 and report["team_confusion"]["application"]["network"] == 1
    assert report["severity_accuracy"]["exact"]["hit"] == 5
    assert report["severity_accuracy"]["within_one"]["hit"] == 6
    assert report["operating_point"] == {"threshold": 0.4, "alerts": 6, "paged": 3, "share": 0.5,
                                         "recall": report["page_recall"], "noise": 1}  # fmt: skip
    sweep = {p["threshold"]: p for p in report["sweep"]}
    assert sweep[0.0]["paged"] == 6 and sweep[0.3]["recall"]["hit"] == 3 and sweep[0.31]["recall"]["hit"] == 2
    assert sweep[1.0]["paged"] == 1  # DiskFull: the model said critical
    rows = {r["title"]: r for r in report["rows"]}
    assert rows["ReplicaLag"]["action"] == "ticket" and rows["ReplicaLag"]["answers"][
        "p_page"
    ] == pytest.approx(0.3)
    assert (
        rows["HighLatency"]["answers"]["team"] == "network"
        and rows["HighLatency"]["expected"]["team"] == "application"
    )
    assert rows["HighLatency"]["note"] == "the team is the shop's"
    assert rows["CertExpiring"]["low_confidence"] and rows["CertExpiring"]["action"] == "page"
    assert (
        rows["PodRestarts"]["severity"] == "warning" and rows["PodRestarts"]["expected"]["severity"] == "info"
    )

    text = " ".join(printed.split())
    assert "6 alert(s) of labelled.jsonl" in text
    assert "page recall │ 2/3 (0.667)" in text and "1 of 3 page(s) (33.3 %)" in text
    assert "page 3, ticket 3, drop 0" in text and "5/6 (0.833)" in text and "6/6 (1.000)" in text
    assert "missed pages (1)" in text and "ReplicaLag" in text and "0.30" in text
    assert "noise: paged, expected a ticket or a drop (1)" in text and "CertExpiring" in text
    md = (out / "report.md").read_text()
    assert "| page recall | 2/3 (0.667) |" in md and "ReplicaLag" in md and "![sweep](sweep.png)" in md
    for png in ("sweep.png", "teams.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.inprocess
def test_without_severity_the_model_reads_no_severity_label_and_suggest_prints_toml(
    gateway: tuple[str, ScriptedAlerts], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    url, engine = gateway
    monkeypatch.setenv("DGEMMA_ALERTS_GATEWAY_API_KEY", "test")
    monkeypatch.setenv("DGEMMA_ALERTS_POLICY_FILE", str(policy_file))
    monkeypatch.setenv("DGEMMA_ALERTS_GATEWAY_URL", url)  # the settings' defaults, no flags
    path, out = _labelled_file(tmp_path / "labelled.jsonl"), tmp_path / "report"
    before = len(engine.calls)
    args = ["alerts", "eval", str(path), "--without-severity", "--suggest", "1", "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    print(printed)
    states = [json.loads(b["state"]) for b in engine.calls[before:]]
    assert len(states) == 6
    for state in states:
        assert not {k.lower() for k in state.get("labels", {})} & {"severity"}, state
    diskfull = next(s for s in states if s["alert"] == "DiskFull")
    assert diskfull["labels"] == {"alertname": "DiskFull", "instance": "db-1"}
    report = json.loads((out / "report.json").read_text())
    assert report["without_severity"] == "severity" and report["severity_labels_removed"] == 3
    assert report["actions"] == {"page": 3, "ticket": 3, "drop": 0}  # the scripted answers decide
    s = report["suggestion"]
    assert s["target"] == 1 and s["fit"]["alerts"] + s["held_out"]["alerts"] == 6
    assert s["fit"]["recall"]["total"] == 2 and s["held_out"]["recall"]["total"] == 1
    assert s["fit"]["recall"]["hit"] == 2  # fitted to reach the target on its half
    text = " ".join(printed.split())
    assert "`severity` label removed from 3 alert(s)" in text
    assert "suggested for page recall >= 1.0" in text and "[thresholds]" in printed
    pasted = tomllib.loads(printed[printed.index("\n[thresholds]\n") :].split("\nwrote ")[0])
    assert pasted["thresholds"]["uncertain"] == s["threshold"]
    assert f"uncertain = {s['threshold']!r}" in (out / "report.md").read_text()
