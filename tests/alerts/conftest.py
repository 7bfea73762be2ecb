"""Fixtures the alert router's tests share."""

from __future__ import annotations

import pytest

from devtools.alertmanager import ensure_installed


@pytest.fixture(scope="session")
def alertmanager_installed() -> str:
    """The binary, installed by scripts/install_alertmanager.sh on a clean machine."""
    try:
        return ensure_installed()
    except RuntimeError as e:
        pytest.fail(str(e))
