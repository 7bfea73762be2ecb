"""The one create-only write: created, or the object exists (412, or a 403 for an object that is
there), or a refusal raised (a 403 for one that is not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from app.core.storage import create_only

pytestmark = pytest.mark.unit


class Blob:
    """An upload's stand-in: answers `error`, and says whether the object `exists`."""

    def __init__(self, error: Exception | None = None, exists: bool = False) -> None:
        self.error, self._exists = error, exists
        self.uploads: list[tuple[str, object, dict[str, Any]]] = []
        self.checks: list[dict[str, Any]] = []

    def _upload(self, how: str, data: object, kwargs: dict[str, Any]) -> None:
        self.uploads.append((how, data, kwargs))
        if self.error is not None:
            raise self.error

    def upload_from_string(self, data: object, **kwargs: Any) -> None:
        self._upload("string", data, kwargs)

    def upload_from_filename(self, filename: str, **kwargs: Any) -> None:
        self._upload("file", filename, kwargs)

    def exists(self, **kwargs: Any) -> bool:
        self.checks.append(kwargs)
        return self._exists


def test_a_new_object_is_created_under_the_create_only_precondition(tmp_path: Path) -> None:
    blob = Blob()
    assert create_only(blob, b"{}", content_type="application/json", timeout=2.0)
    assert create_only(blob, tmp_path / "archive")
    assert blob.uploads == [
        ("string", b"{}", {"if_generation_match": 0, "content_type": "application/json", "timeout": 2.0}),
        ("file", str(tmp_path / "archive"), {"if_generation_match": 0}),
    ]


def test_an_object_that_exists_is_a_412_or_a_403_where_it_is_there() -> None:
    assert not create_only(Blob(gexc.PreconditionFailed("exists")), "{}")  # type: ignore[no-untyped-call]
    overwrite = gexc.Forbidden("storage.objects.delete")  # type: ignore[no-untyped-call]
    creator = Blob(overwrite, exists=True)  # an identity that may create objects, not overwrite them
    assert not create_only(creator, "{}", content_type="application/json", timeout=1.0, retry=None)
    assert creator.checks == [{"timeout": 1.0, "retry": None}]  # the upload's time and retry


def test_a_403_for_an_object_that_is_not_there_is_a_refusal() -> None:
    refused = gexc.Forbidden("storage.objects.create")  # type: ignore[no-untyped-call]
    with pytest.raises(gexc.Forbidden):
        create_only(Blob(refused, exists=False), "{}")
