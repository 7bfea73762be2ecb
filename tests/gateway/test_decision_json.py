"""The decision's JSON types (plain dicts, for orjson) have the wire's response models' fields."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from app.gateway.decisions.decide import ChoiceJson, DiagnosticsJson, NoulJson, ScoreJson, UsageJson
from app.jev.wire import ChoiceAnswer, Diagnostics, NoulAnswer, ScoreAnswer, Usage

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        (NoulJson, NoulAnswer),
        (ChoiceJson, ChoiceAnswer),
        (ScoreJson, ScoreAnswer),
        (UsageJson, Usage),
        (DiagnosticsJson, Diagnostics),
    ],
)
def test_each_json_type_has_its_wire_models_fields(typed: type, model: type[BaseModel]) -> None:
    assert set(typed.__annotations__) == set(model.model_fields)
