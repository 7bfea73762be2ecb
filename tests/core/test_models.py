"""The one rendering of pydantic's errors: `where: what` per error on one line, a validator's own
words without pydantic's "Value error, ", and the first few of many counted."""

from __future__ import annotations

import pytest
from pydantic import ValidationError, field_validator

from app.core.models import StrictModel, dotted, validation_problems

pytestmark = pytest.mark.unit


class Rule(StrictModel):
    name: str
    weight: int

    @field_validator("name")
    @classmethod
    def _named(cls, name: str) -> str:
        if not name:
            raise ValueError("a rule needs a name")
        return name


class Policy(StrictModel):
    rules: list[Rule]


def refusal(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Policy.model_validate(data)
    return caught.value


def test_each_error_is_named_by_where_it_is() -> None:
    error = refusal({"rules": [{"name": "", "weight": "x"}], "extra": 1})
    assert validation_problems(error) == (
        "rules.0.name: a rule needs a name; "
        "rules.0.weight: Input should be a valid integer, unable to parse string as an integer; "
        "extra: Extra inputs are not permitted"
    )


def test_a_caller_says_how_a_place_and_a_problem_read_and_how_many_are_shown() -> None:
    error = refusal({"rules": [{"name": "", "weight": 1}, {}]})
    shown = validation_problems(error, path=lambda loc: dotted(("policy", *loc)), most=1)
    assert shown == "policy.rules.0.name: a rule needs a name; and 2 more"
    nowhere = validation_problems(error, path=lambda loc: "", problem=lambda e: e["type"], most=2)
    assert nowhere == "value_error; missing; and 1 more"
