"""Log lines Cloud Logging parses: severity, time, trace; vLLM's output re-emitted with its level."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections import deque
from collections.abc import Iterator

import pytest

from app.core.observability import LOGGERS, SPAN_FIELD, TRACE_FIELD, configure_logging, parse_trace, trace_var
from deploy.runtime.supervisor import parse_vllm_line, relay_output

pytestmark = pytest.mark.unit


@pytest.fixture
def restore_loggers() -> Iterator[None]:
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).level) for n in LOGGERS}
    yield
    for name, (handlers, level) in saved.items():
        logging.getLogger(name).handlers[:] = handlers
        logging.getLogger(name).setLevel(level)


def _lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


@pytest.mark.usefixtures("restore_loggers")
def test_lines_carry_severity_time_and_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", project="my-proj")
    token = trace_var.set(parse_trace({"x-cloud-trace-context": "0123456789abcdef0123456789abcdef/17;o=1"}))
    try:
        logging.getLogger("app").warning("hello %s", "world", extra={"status": 200})
    finally:
        trace_var.reset(token)
    logging.getLogger("deploy").debug("below the level")
    (line,) = _lines(capsys.readouterr().err)
    assert line["severity"] == "WARNING" and line["message"] == "hello world" and line["status"] == 200
    assert str(line["time"]).endswith("+00:00") and "T" in str(line["time"])  # RFC 3339
    assert line[TRACE_FIELD] == "projects/my-proj/traces/0123456789abcdef0123456789abcdef"
    assert line[SPAN_FIELD] == f"{17:016x}"
    assert line["logging.googleapis.com/trace_sampled"] is True


def test_trace_headers() -> None:
    assert parse_trace({"x-cloud-trace-context": "ABCDEF0123456789ABCDEF0123456789"}) == {
        "trace": "abcdef0123456789abcdef0123456789",
        "sampled": False,
    }
    w3c = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert parse_trace({"traceparent": w3c}) == {
        "trace": "0af7651916cd43dd8448eb211c80319c",
        "span": "b7ad6b7169203331",
        "sampled": True,
    }
    assert parse_trace({"x-cloud-trace-context": "not-a-trace"}) == {}
    assert parse_trace({}) == {}


@pytest.mark.parametrize(
    ("line", "previous", "level", "message", "extra"),
    [
        (
            "(EngineCore pid=2644) INFO 11-30 06:21:15 [core.py:133] Initializing a V1 LLM engine",
            logging.INFO,
            logging.INFO,
            "Initializing a V1 LLM engine",
            {"source": "core.py:133", "vllm_process": "EngineCore"},
        ),
        (
            "WARNING 11-30 06:21:10 [vllm.py:1703] Enforce eager set",
            logging.INFO,
            logging.WARNING,
            "Enforce eager set",
            {"source": "vllm.py:1703"},
        ),
        ("[W1130 06:21:21.072070961 utils.cpp:68] Warning: NUMA", logging.INFO, logging.WARNING, None, {}),
        ("Traceback (most recent call last):", logging.INFO, logging.ERROR, None, {}),
        ('  File "x.py", line 1, in <module>', logging.ERROR, logging.ERROR, None, {}),
        ("Loading safetensors checkpoint shards: 100%", logging.INFO, logging.INFO, None, {}),
    ],
)
def test_vllm_lines_keep_their_level(
    line: str, previous: int, level: int, message: str | None, extra: dict[str, str]
) -> None:
    assert parse_vllm_line(line, previous) == (level, message or line, extra)


def test_relay_re_emits_a_real_childs_lines_with_their_fields() -> None:
    script = (
        "print('(APIServer pid=7) INFO 11-30 06:21:15 [api_server.py:1] serving'); "
        "print('(EngineCore pid=8) WARNING 11-30 06:21:16 [core.py:2] slow'); print('plain after')"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    records: list[logging.LogRecord] = []
    logger = logging.getLogger("test.relay")
    logger.addHandler(_ListHandler(records))
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    recent: deque[str] = deque(maxlen=2)
    relay_output(proc, logger, recent)
    proc.wait()
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("INFO", "serving"),
        ("WARNING", "slow"),
        ("WARNING", "plain after"),  # no level of its own: the previous line's
    ]
    assert records[0].vllm_process == "APIServer" and records[1].source == "core.py:2"  # type: ignore[attr-defined]
    assert list(recent) == ["(EngineCore pid=8) WARNING 11-30 06:21:16 [core.py:2] slow", "plain after"]


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
