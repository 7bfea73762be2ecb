"""The checkpoint in the project's weights bucket (uploaded when its manifest differs, verified by
Cloud Storage's own checksums), and the weights mode whose instance-memory budget fits it."""

from __future__ import annotations

from rich.console import Console

from app.core.config import ConfigError
from deploy.cloud.config import DeployConfig
from deploy.cloud.host_budget import check_host_fits, checkpoint_bytes, default_weights_mode, host_budget
from deploy.cloud.shell import Shell
from deploy.errors import WeightsError
from deploy.runtime.gpu_budget import fit
from deploy.runtime.settings import WEIGHTS_MODES
from deploy.runtime.weights import (
    Manifest,
    build_manifest,
    checkpoint_files,
    client_from_env,
    same_files,
    upload,
    verify_remote,
)


def ensure_weights(
    cfg: DeployConfig, shell: Shell, url: str, local: Manifest | None = None
) -> Manifest | None:
    """Upload the checkpoint (`local`: its manifest, if built) when the bucket's manifest differs;
    then the bucket's objects must match their manifest (by Cloud Storage's own checksums). The
    manifest, or None in a dry run."""
    what = (
        f"upload {cfg.checkpoint} to {url} if its manifest differs; verify {url} by MD5/CRC32C"
        if cfg.checkpoint
        else f"verify {url} against its manifest by MD5/CRC32C"
    )
    return shell.call(what, lambda: sync(cfg, shell.console, url, local), None)


def sync(cfg: DeployConfig, console: Console, url: str, local: Manifest | None = None) -> Manifest | None:
    """The upload (when the manifest differs) and the verification, against the bucket itself."""
    from deploy.runtime.weights import fetch_manifest

    client = client_from_env(cfg.project)
    try:
        manifest: Manifest | None = fetch_manifest(url, client)
    except WeightsError:
        if cfg.checkpoint is None:
            raise
        manifest = None
    if cfg.checkpoint is not None:
        local = local or build_manifest(cfg.checkpoint)
        if manifest is None or not same_files(local, manifest):
            console.print(f"uploading {cfg.checkpoint} to {url} ({local.total_bytes / 1e9:.1f} GB)")
            manifest = upload(cfg.checkpoint, url, client, manifest=local)
    problems = verify_remote(url, client, manifest=manifest)
    if problems:
        raise ConfigError(f"refusing to deploy without verified weights at {url}: " + "; ".join(problems[:5]))
    return manifest


def expected_sizes(cfg: DeployConfig) -> tuple[int, int]:
    """(total, largest file) of the checkpoint before the bucket is read: `--checkpoint`'s files (what
    its manifest will list), else the checkpoint the settings describe (the bucket's is not known)."""
    if cfg.checkpoint is not None and cfg.checkpoint.is_dir():
        sizes = [p.stat().st_size for p in checkpoint_files(cfg.checkpoint)]
        if sizes:
            return sum(sizes), max(sizes)
    return checkpoint_bytes(fit(cfg.engine))


def choose_mode(cfg: DeployConfig, manifest: Manifest | None) -> str:
    """The asked-for weights mode if its instance-memory budget fits, or the fastest that does; by
    the bucket's manifest, or (None: before the bucket is read, a dry run) by `expected_sizes`."""
    if manifest is not None:
        total, largest = manifest.total_bytes, max(e.size for e in manifest.files)
    else:
        total, largest = expected_sizes(cfg)
    if cfg.weights_mode == "auto":
        return default_weights_mode(total, largest, cfg.memory_gib)
    if cfg.weights_mode not in WEIGHTS_MODES:
        raise ConfigError(
            f"--weights-mode {cfg.weights_mode!r}: expected auto or one of {', '.join(WEIGHTS_MODES)}"
        )
    check_host_fits(host_budget(cfg.weights_mode, total, largest, cfg.memory_gib))
    return cfg.weights_mode
