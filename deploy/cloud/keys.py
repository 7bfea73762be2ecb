"""`dgemma keys`: a deployed service's API keys, all of them in the latest version of its secret, one
per line. The gateway re-reads that version every `DGEMMA_API_KEYS_RELOAD_S` (a Secret Manager
volume serves the latest version on each read), so a change reaches running instances without a new
revision. A key is only ever shown once, by `add`; `list` and `revoke` name keys by their ID."""

from __future__ import annotations

import hashlib
import re
import secrets

from rich.console import Console

from app.core.config import ConfigError
from deploy.cloud.config import DeployConfig
from deploy.cloud.gcloud import Gcloud
from deploy.cloud.inputs import check_project
from deploy.cloud.shell import Shell
from deploy.errors import DeployError

ID_CHARS = 8  # what `list` shows; `revoke` takes any prefix of the digest from MIN_ID_CHARS on
MIN_ID_CHARS = 6
# How long a new version needs before no reader holds the one before: the gateway and the router
# each re-read the keys every 60 s (DGEMMA_API_KEYS_RELOAD_S, DGEMMA_ALERTS_GATEWAY_API_KEY_RELOAD_S).
SETTLE_S = 150


def key_id(key: str) -> str:
    """A key's ID: the start of its SHA-256, which says nothing usable about the key."""
    return hashlib.sha256(key.encode()).hexdigest()[:ID_CHARS]


def _keys(cfg: DeployConfig, console: Console) -> tuple[Gcloud, list[str]]:
    check_project(cfg, "keys", "gcloud")
    if not cfg.dry_run:
        cfg.directory.mkdir(parents=True, exist_ok=True)  # for deploy.log, on a machine that never deployed
    gcloud = Gcloud(cfg, Shell(console, cfg.directory, dry_run=cfg.dry_run))
    secret = cfg.api_keys_secret
    has_version = gcloud.secret_has_version(secret)
    if has_version is None:
        raise ConfigError(f"there is no secret {secret}: deploy the service first")
    keys = list(dict.fromkeys(gcloud.read_keys(secret)))
    # `read_keys` says [] when the read fails too: a version written from that would drop every key.
    if has_version and not keys:
        raise DeployError(f"the latest version of {secret} could not be read or holds no key (deploy.log)")
    return gcloud, keys


def add_key(cfg: DeployConfig, console: Console) -> str:
    """A new API key, added to the secret's keys as a new version (the old keys stay valid)."""
    gcloud, keys = _keys(cfg, console)
    # A dry run shows where the key goes, never a key that looks like one.
    key = "<a new key>" if cfg.dry_run else secrets.token_urlsafe(32)
    gcloud.add_version(cfg.api_keys_secret, "\n".join([*keys, key]) + "\n")
    return key


def rotate_key(cfg: DeployConfig, console: Console) -> tuple[str, str]:
    """A new key first in the secret's keys, the one the alert router sends: the gateway accepts it
    within a minute, the router sends it within a minute and meanwhile, on a 401, the old one (no
    401 window). (new key's ID, the old first key's ID), for the revoke that may follow."""
    gcloud, keys = _keys(cfg, console)
    key = "<a new key>" if cfg.dry_run else secrets.token_urlsafe(32)
    gcloud.add_version(cfg.api_keys_secret, "\n".join([key, *keys]) + "\n")
    return key_id(key), key_id(keys[0]) if keys else ""


def list_keys(cfg: DeployConfig, console: Console) -> list[str]:
    """One line per accepted key: its ID and its first 4 characters, never the key; the first is
    marked, as the alert router sends it. None in a dry run (the keys are not read)."""
    _, keys = _keys(cfg, console)
    if cfg.dry_run:
        return []
    return [
        f"{key_id(k)}  {k[:4]}...{'  (first: the alert router sends it)' if i == 0 else ''}"
        for i, k in enumerate(keys)
    ]


def revoke_key(cfg: DeployConfig, console: Console, wanted: str) -> str:
    """Write the secret's keys without the one `wanted` names (its ID, or a longer or shorter prefix
    of its SHA-256), then disable the older versions; the revoked key's ID. Refuses an ID that names
    no key or several, the last key, and the first one while the alert router runs."""
    wanted = wanted.strip().lower()  # never echoed: an operator may paste a key by mistake
    if not re.fullmatch(f"[0-9a-f]{{{MIN_ID_CHARS},64}}", wanted):
        raise ConfigError(f"not a key ID: IDs are the {ID_CHARS} hex digits `dgemma keys list` shows")
    gcloud, keys = _keys(cfg, console)
    secret = cfg.api_keys_secret
    if cfg.dry_run:
        gcloud.shell.note(f"if {wanted} names one key and not the last: the other keys as a new version")
        kept, revoked = ["<the other keys>"], wanted
    else:
        found = [k for k in keys if hashlib.sha256(k.encode()).hexdigest().startswith(wanted)]
        if len(found) != 1:
            many = f"{len(found)} keys" if found else "no key"
            raise ConfigError(f"the ID names {many} of {secret}: give the one `dgemma keys list` shows")
        if found == keys:
            raise ConfigError(
                f"the ID names the last key of {secret}: add its successor first (`dgemma keys add`)"
            )
        # The router sends the first key: revoked, its calls would be 401s. Rotate first.
        if found[0] == keys[0] and gcloud.describe_service(cfg.router) is not None:
            raise ConfigError(
                f"the ID names the first key, which the alert router {cfg.router} sends: give the router "
                "a new one first (`dgemma keys rotate`), then revoke this one"
            )
        # Just after a rotation, the key that was the first may still be what a router sends.
        age = gcloud.latest_version_age_s(secret)
        older = gcloud.older_versions(secret) if age is not None and age < SETTLE_S else []
        before = gcloud.read_keys(secret, older[-1]) if older else []
        if age is not None and before[:1] == found[:1] != keys[:1]:
            raise ConfigError(
                f"the ID names the key the alert router sent until the rotation {age:.0f} s ago: the "
                "gateway's instances and the router take up to a minute each to read the new one; revoke "
                f"in {SETTLE_S - age:.0f} s, so that no call is refused meanwhile"
            )
        kept, revoked = [k for k in keys if k != found[0]], key_id(found[0])
    gcloud.add_version(secret, "\n".join(kept) + "\n")
    # The older versions still hold the revoked key: disabled, nobody can read it back from them
    # (running instances mount `latest`; `gcloud secrets versions enable` undoes it if need be).
    for version in gcloud.older_versions(secret):
        gcloud.disable_version(secret, version)
    return revoked
