"""The calibration file: what `dgemma calibrate` writes and the gateway serves by
(`DGEMMA_CALIBRATION_FILE`), refused at start unless fitted on the served model and read policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.core.config import ConfigError
from app.core.models import validation_problems
from app.gateway.decisions.calibration import T_MAX, T_MIN
from app.jev.wire import ReadPolicy

FORMAT: Literal["dgemma-calibration/1"] = "dgemma-calibration/1"
Kind = Literal["noul", "choice", "score"]


class Fit(BaseModel):
    """One fitted temperature, for a question name or a question type, with the dev split's NLL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Kind
    temperature: float = Field(ge=T_MIN, le=T_MAX)
    samples: int = Field(ge=1)
    nll_before: float
    nll_after: float


class Calibration(BaseModel):
    """The file `dgemma calibrate` writes: temperatures per question name (where the dev split had
    enough answers) and per question type, and what they were fitted on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["dgemma-calibration/1"] = FORMAT
    model: str
    """The served model name the answers came from."""
    read_policy: ReadPolicy
    """The read policy the answers were read under; the gateway applies the file only under it."""
    by_name: dict[str, Fit]
    by_type: dict[Kind, Fit]
    data: dict[str, str | int | float]
    """The labelled file (path, sha256), its split (rule, dev share) and the item counts."""
    test: list[dict[str, object]] = []
    """Before/after figures on the test split, per question (for people; the gateway ignores them)."""
    created: str = ""

    def temperature(self, name: str, kind: str) -> float | None:
        """The question's own fit when it has one of its type, else its type's, else none."""
        fit = self.by_name.get(name)
        if fit is None or fit.type != kind:
            fit = self.by_type.get(kind)  # type: ignore[call-overload]
        return None if fit is None else fit.temperature

    @classmethod
    def load(cls, path: Path, *, served_model: str, read_policy: ReadPolicy) -> Calibration:
        """The file at `path`, refused (ConfigError) unless fitted on this model and read policy."""
        try:
            calibration = cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ConfigError(f"calibration file {path}: cannot be read: {e}") from None
        except ValidationError as e:
            raise ConfigError(f"calibration file {path}: {validation_problems(e, most=1)}") from None
        if calibration.model != served_model:
            raise ConfigError(
                f"calibration file {path} was fitted on model {calibration.model!r}; this gateway serves "
                f"{served_model!r}. Fit one on this model: dgemma calibrate --url ... --data ..."
            )
        if calibration.read_policy != read_policy:
            raise ConfigError(
                f"calibration file {path} was fitted under the read policy "
                f"{calibration.read_policy.model_dump()}; this gateway's default is "
                f"{read_policy.model_dump()}. Serve that policy, or fit under this one."
            )
        return calibration
