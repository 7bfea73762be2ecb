"""API keys rotate without a new revision: the gateway (real, under uvicorn, its lifespan running)
re-reads its keys file every `DGEMMA_API_KEYS_RELOAD_S`, as a Cloud Run instance re-reads a mounted
secret's latest version; a file it cannot use keeps the keys in force."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from app.core.polling import wait_until
from app.gateway.main import create_app
from tests.helpers.gateway import ScriptedEngine, gateway_settings, serving

pytestmark = pytest.mark.integration
RELOAD_S = 0.1


def _status(url: str, key: str) -> int:
    return httpx.get(f"{url}/v1/models", headers={"authorization": f"Bearer {key}"}).status_code


def _becomes(url: str, key: str, status: int) -> bool:
    return bool(wait_until(lambda: _status(url, key) == status, 3, interval_s=0.05))


def test_an_added_key_is_taken_and_a_removed_one_refused_without_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "keys"
    keys.write_text("old-key\n")
    settings = gateway_settings(
        api_keys="env-key", api_keys_file=keys, allow_any_key=False, api_keys_reload_s=RELOAD_S
    )
    with serving(create_app(settings, engine=ScriptedEngine())) as url:
        assert _status(url, "old-key") == 200 and _status(url, "new-key") == 401
        keys.write_text("old-key\nnew-key\n")  # `dgemma keys add`
        assert _becomes(url, "new-key", 200) and _status(url, "old-key") == 200
        keys.write_text("new-key\n")  # `dgemma keys revoke`
        assert _becomes(url, "old-key", 401) and _status(url, "new-key") == 200
        assert _status(url, "env-key") == 200  # DGEMMA_API_KEYS stay through reloads
        # A version without keys, bytes that are no text, no file at all: the keys in force stay.
        for broken in (b"\n \n", b"\xff\xfe key\n", None):
            caplog.clear()
            if broken is None:
                keys.unlink()
            else:
                keys.write_bytes(broken)
            assert wait_until(lambda: "the keys in force stay" in caplog.text, 3, interval_s=0.05)
            assert _status(url, "new-key") == 200 and _status(url, "old-key") == 401
        keys.write_text("newer-key\n")  # readable again: taken
        assert _becomes(url, "newer-key", 200) and _becomes(url, "new-key", 401)


def test_with_reload_off_the_file_is_read_once(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("first\n")
    settings = gateway_settings(api_keys_file=keys, allow_any_key=False, api_keys_reload_s=0)
    with serving(create_app(settings, engine=ScriptedEngine())) as url:
        keys.write_text("second\n")
        time.sleep(10 * RELOAD_S)  # ten intervals of the test above
        assert _status(url, "first") == 200 and _status(url, "second") == 401
