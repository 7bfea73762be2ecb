"""The one markdown-table helper (devtools/tables.py): a head and its separator, aligned by letter,
and rows of any cells."""

from __future__ import annotations

import pytest

from devtools.tables import header, row

pytestmark = pytest.mark.unit


def test_a_header_aligns_each_column_and_repeats_the_last_letter() -> None:
    assert header("arm", "runs", "p50", "p95", align="lr") == [
        "| arm | runs | p50 | p95 |",
        "| --- | ---: | ---: | ---: |",
    ]
    assert header("#", "arm", "req/s", align="rlr")[1] == "| ---: | --- | ---: |"
    assert header("phase", "from")[1] == "| --- | --- |"
    with pytest.raises(ValueError):
        header("a", align="c")


def test_a_row_shows_any_cell_and_an_empty_one_as_a_bare_pipe() -> None:
    assert row(3, "baseline", 81.5, None) == "| 3 | baseline | 81.5 | None |"
    assert row("pass", "") == "| pass | |"
