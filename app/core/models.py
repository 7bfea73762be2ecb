"""The one strict base of the kit's pydantic models: unknown fields are refused, and a parsed value
does not change afterwards."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown fields are an error (a typo is refused, not ignored); instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
