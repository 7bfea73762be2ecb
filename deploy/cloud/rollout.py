"""`dgemma deploy` and `dgemma destroy`: Terraform lays out the project and the service, Cloud Build
makes the images (the GPU service's and the alert router's), a new revision waits at 0 % of the
traffic under the tag `candidate` until the load-test gate has passed, and only then does the traffic
move and the alert router take its new image and settings (the candidate is applied to the GPU
service alone); then the router must answer its readiness check. A first deploy has no traffic to
keep: its revision is callable by the operator alone until the gate passes, and the router is made
after it. A failed gate leaves the traffic, the router and the invokers as they were, and the
candidate untagged. Each apply is recorded beside the state (deploy/cloud/history.py) for
`dgemma rollback`.

The deploy is `STEPS`, an ordered list: each step has the title the progress display shows and acts
only through the adapters (`Shell`, `Gcloud`, `Terraform`). With `--dry-run` the same list runs
against a dry-run Shell, which prints each command, file and call instead of making it: the dry run
is what the real run would do, not a second telling of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from app.core.config import ConfigError
from app.core.identity import RequestHeaders, audience_of
from deploy.cloud.checks import check_alerts_policy, check_calibration, preflight
from deploy.cloud.config import SENDERS, DeployConfig
from deploy.cloud.gcloud import Gcloud, Live, add_version_argv
from deploy.cloud.history import History
from deploy.cloud.id_tokens import id_tokens
from deploy.cloud.inputs import check_deploy, check_project
from deploy.cloud.service import router_ready, smoke, wait_ready
from deploy.cloud.shell import Shell
from deploy.cloud.terraform import (
    GPU_INVOKERS,
    GPU_SERVICE,
    ROUTER_SECRETS,
    WEIGHTS_BUCKET,
    Terraform,
    module_resources,
    revision_suffix,
    tfvars,
)
from deploy.cloud.variables import changes, check_paging, remembered
from deploy.cloud.weights import choose_mode, ensure_weights
from deploy.errors import DeployError
from deploy.runtime.weights import Manifest, build_manifest

if TYPE_CHECKING:
    from loadtest.gate import GateProfile


def api_key(cfg: DeployConfig, gcloud: Gcloud, secret: str) -> str:
    """The key the smoke call and the gate use: the secret's, or a new one on the first deploy
    (added as the secret's first version, never through Terraform, and saved 0600 beside the state)."""
    shell = gcloud.shell
    if gcloud.secret_has_version(secret) and not shell.dry_run:
        keys = gcloud.read_keys(secret)
        if not keys:
            raise DeployError(f"the latest version of secret {secret} holds no key")
        return keys[0]
    shell.note(f"if {secret} has no version yet:")
    key = secrets.token_urlsafe(32)
    gcloud.add_version(secret, key + "\n")
    if not shell.dry_run:
        path = cfg.directory / "api-key"
        path.write_text(key + "\n")
        path.chmod(0o600)
        shell.console.print(f"a first API key was added to {secret}; a copy is in {path} (mode 0600)")
    return key


def ensure_router_secrets(cfg: DeployConfig, shell: Shell, tf: Terraform, variables: dict[str, Any]) -> None:
    """Every secret the router's revision reads has a version before the revision exists, because
    Cloud Run refuses to deploy one that reads a secret without: each sender's secret gets a random
    token as its first version (never through Terraform, never printed; read it with gcloud); a sink
    secret without a value stops the deploy with the command that adds it. A deployment from before
    the router lacks the secrets themselves: a targeted apply creates them first."""
    gcloud = Gcloud(cfg, shell)
    senders = [cfg.sender_secret(s) for s in SENDERS]
    sinks = [cfg.sink_secret(n) for n in cfg.alerts_sinks]
    has = {secret: gcloud.secret_has_version(secret) for secret in [*senders, *sinks]}
    if None in has.values():
        tf.apply(variables, "the alert router's secrets, which do not exist yet", targets=(ROUTER_SECRETS,))
        has = {secret: gcloud.secret_has_version(secret) for secret in has}
    for secret in senders:
        if not has[secret]:
            shell.note(f"if {secret} has no version yet:")
            gcloud.add_version(secret, secrets.token_urlsafe(32))
    empty = [secret for secret in sinks if not has[secret]]
    for secret in sinks:  # the dry run shows the stop a first deploy with sinks makes, as a step
        shell.note(
            f"if {secret} has no value yet (a first deploy): the deploy stops here (exit 2) with "
            f"`printf %s VALUE | {' '.join(add_version_argv(cfg, secret))}`; add it, deploy again"
        )
    if empty and not shell.dry_run:
        adds = "; ".join(f"printf %s VALUE | {' '.join(add_version_argv(cfg, s))}" for s in empty)
        raise ConfigError(
            f"the alert router's sink secrets have no value: {', '.join(empty)}. Add each ({adds}), "
            "then run the deploy again"
        )


# -- the rollout: its state, its steps --------------------------------------------------------------


@dataclass
class Rollout:
    """One deploy under way: its adapters, and what each step learns for the steps after it."""

    cfg: DeployConfig
    shell: Shell
    profile: GateProfile
    tokens: RequestHeaders
    account: str = ""
    operator: str = ""  # the operator as an invoker principal (unknown in a dry run)
    sha: str = ""
    invokers: tuple[str, ...] = ()
    live: Live | None = None
    manifest: Manifest | None = None
    local: Manifest | None = None  # --checkpoint's manifest, built once (its digest names its folder)
    mode: str = "baked"
    outputs: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    base: dict[str, Any] = field(default_factory=dict)  # the new revision's variables, traffic aside
    suffix: str = ""
    history: History = field(default_factory=History)

    @property
    def gcloud(self) -> Gcloud:
        return Gcloud(self.cfg, self.shell)

    @property
    def tf(self) -> Terraform:
        return Terraform(self.cfg, self.shell)

    @property
    def first(self) -> bool:
        return self.live is None

    @property
    def serving(self) -> str:
        return self.live.serving if self.live else ""

    @property
    def revision(self) -> str:
        return f"{self.cfg.service}-{self.suffix}"

    @property
    def placement(self) -> str:
        return (
            "100 %, callable by the operator alone (first deploy)" if self.first else "tagged candidate, 0 %"
        )

    @property
    def target(self) -> str:
        """Where the smoke call and the gate go: the service on a first deploy, else the candidate."""
        return str(self.outputs["service_url" if self.first else "candidate_url"])

    @property
    def report(self) -> Path:
        return self.cfg.directory / f"gate-{self.suffix}"

    def headers(self) -> dict[str, str]:
        """A fresh ID token whenever the cached one nears its expiry, and the API key."""
        return self.tokens.headers(audience_of(self.target), self.key)

    def phase(self, traffic: str, candidate: str, why: str, *, gpu_only: bool) -> None:
        """Apply the new revision with the traffic on `traffic` (empty: on the new revision alone),
        `candidate` tagged at 0 %: to the GPU service alone, with the operator as an invoker for the
        gate (`gpu_only`: the router and the other invokers stay as they are), or to everything;
        record it beside the state."""
        variables = {
            **self.base,
            "revision_suffix": self.suffix,
            "serving_revision": traffic,
            "candidate_revision": candidate,
        }
        operator = f'{GPU_INVOKERS}["{self.operator or "<the operator>"}"]'
        self.tf.apply(variables, why, targets=(GPU_SERVICE, operator) if gpu_only else ())
        moved = "" if gpu_only else (traffic or self.revision)
        self.history.record(variables, router=not gpu_only, serving=moved)
        self.history.write(self.gcloud)


@dataclass(frozen=True)
class Step:
    """One step of the rollout: `title` is what the progress display shows (formatted with the
    rollout as `r`); `run` acts only through the rollout's adapters, so against a dry-run Shell it
    prints what it would do. `run` returns an exit code to end the deploy there, or None to go on."""

    title: str
    run: Callable[[Rollout], int | None]

    def describe(self, r: Rollout) -> str:
        return self.title.format(r=r)


def _preflight(r: Rollout) -> None:
    r.account, r.sha = preflight(r.cfg, r.shell, r.gcloud)
    # What is deployed is where this deploy starts: every setting it does not name stays as the last
    # apply left it (a destroyed or never-made service has none). Read before any change, so that a
    # refusal below comes before the cloud is touched.
    r.live = r.gcloud.describe_service()
    r.history = History.read(r.gcloud) or History()
    if r.live is None:
        r.history = History()  # a new service (or one destroyed since): nothing to start from or go back to
    if r.shell.dry_run:
        r.shell.note(
            "a deploy starts from the settings the last apply left (the history beside the state); "
            "`--plan` lists the ones that change, from what to what"
        )
    asked = r.cfg
    r.cfg = remembered(r.cfg, r.history.applied)
    if r.cfg.checkpoint is not None:
        r.local, r.cfg = checkpoint_version(r.cfg, r.cfg.checkpoint, r.shell)
    if r.cfg != asked:
        # What came from the history, against this checkout's module and fit (its upload set: checked).
        check_deploy(r.cfg, upload=False)
    applied = r.history.applied
    if applied and not r.shell.dry_run:  # first: a policy check would only name the symptom
        check_paging(r.cfg, applied, tfvars(r.cfg, str(applied.get("weights_mode", ""))))
    check_alerts_policy(r.cfg)
    check_calibration(r.cfg)
    if r.cfg.alerts_mode is None:
        # A new router starts in shadow: it pages every alert as sent while its decisions are only
        # recorded, until someone has read them (`dgemma alerts report`) and switches it to act. A
        # running router keeps its mode (one deployed before modes existed acts).
        router = r.gcloud.describe_service(r.cfg.router)
        if r.cfg.dry_run:
            mode = "<shadow for a new router, else the mode it runs>"
        else:
            mode = "shadow" if router is None else router.env.get("DGEMMA_ALERTS_MODE", "act")
        r.cfg = replace(r.cfg, alerts_mode=mode)
    account = r.account
    operator = f"serviceAccount:{account}" if account.endswith("gserviceaccount.com") else f"user:{account}"
    # The operator may call the service (the gate does); a dry run does not know who runs it.
    known = account and not r.cfg.dry_run
    r.operator = operator if known else ""
    r.invokers = tuple(dict.fromkeys((*r.cfg.invokers, operator))) if known else r.cfg.invokers
    if applied and not r.shell.dry_run:
        changed = changes(applied, tfvars(r.cfg, str(applied.get("weights_mode", "")), invokers=r.invokers))
        r.shell.console.print(
            "settings that change: " + ("; ".join(map(str, changed)) if changed else "none"), markup=False
        )


def checkpoint_version(cfg: DeployConfig, checkpoint: Path, shell: Shell) -> tuple[Manifest, DeployConfig]:
    """`checkpoint`'s manifest, and `cfg` with its folder: the manifest's digest under the prefix, so
    that an upload never overwrites what a revision serves (a rollback serves its own weights)."""
    local = build_manifest(checkpoint)
    if "weights_version" in cfg.given and cfg.weights_version != local.digest:
        raise ConfigError(
            f"--weights-version {cfg.weights_version} with --checkpoint {cfg.checkpoint}, whose digest is "
            f"{local.digest}: give one of the two"
        )
    if cfg.weights_version != local.digest:
        shell.console.print(
            f"{cfg.checkpoint}: manifest digest {local.digest}, its folder gs://"
            f"{cfg.weights_bucket}/{cfg.weights_prefix}/{local.digest}",
            markup=False,
        )
    return local, replace(cfg, weights_version=local.digest)


def _init(r: Rollout) -> None:
    r.gcloud.ensure_state_bucket()
    r.tf.init(tfvars(r.cfg, "baked"), kept_weights(r.cfg, r.shell, r.gcloud))


def kept_weights(cfg: DeployConfig, shell: Shell, gcloud: Gcloud) -> dict[str, str]:
    """The weights bucket to import, when it exists: kept by `dgemma destroy` (forgotten by the state)
    or made by hand before the first deploy; without the import the apply would try to create it
    again and get a 409. One the state already holds is left as it is."""
    bucket = cfg.weights_bucket
    found = gcloud.describe_bucket(bucket, "name", reads="whether the weights bucket exists")
    if found.code != 0:
        return {}
    shell.note(f"if gs://{bucket} exists (kept by a destroy, or made by hand): Terraform imports it")
    return {WEIGHTS_BUCKET: f"{cfg.project}/{bucket}"}


def _weights(r: Rollout) -> None:
    if r.live is None or r.cfg.dry_run:
        r.shell.note("if the service does not exist yet:")
        r.tf.apply(
            tfvars(r.cfg, "baked", invokers=r.invokers),
            "the infrastructure (APIs, repository, buckets, identities, secret)",
        )
    r.manifest = ensure_weights(r.cfg, r.shell, r.cfg.weights_url, r.local)
    r.mode = choose_mode(r.cfg, r.manifest)


def _api_key(r: Rollout) -> None:
    r.outputs = r.tf.outputs()
    r.key = api_key(r.cfg, r.gcloud, str(r.outputs["api_keys_secret"]).rsplit("/", 1)[-1])


def _router_secrets(r: Rollout) -> None:
    ensure_router_secrets(r.cfg, r.shell, r.tf, tfvars(r.cfg, r.mode, invokers=r.invokers))


def _images(r: Rollout) -> int | None:
    weights_tag = None
    if r.mode == "baked":
        weights_tag = (
            hashlib.sha256(r.manifest.to_json().encode()).hexdigest()[:8] if r.manifest else "<manifest>"
        )
    image, router_image = r.gcloud.ensure_images(r.outputs, r.sha, weights_tag)
    r.base = tfvars(r.cfg, r.mode, image=image, router_image=router_image, invokers=r.invokers)
    r.suffix = revision_suffix(r.sha, r.base)
    if r.live is not None and r.live.serving == r.revision:
        if (
            not changes(r.history.applied, r.base)
            and r.history.applied.get("router_image") == r.base["router_image"]
        ):
            done = f"nothing to do: {r.revision} already serves this commit and these settings"
            r.shell.console.print(done)
            return 0
        # Only settings outside the GPU revision changed (the router's, monitoring's, the project's):
        # applied without a new revision, so without a gate or an L4 cold start.
        # The traffic as recorded ("" on a first deploy's revision: the latest), so nothing else moves.
        serving = str(r.history.applied.get("serving_revision", r.revision))
        r.phase(serving, "", "the settings outside the GPU revision (it keeps serving)", gpu_only=False)
        r.outputs = r.tf.outputs()
        router_ready(r.cfg, r.shell, r.outputs, r.revision)
        return 0
    return None


def _revision(r: Rollout) -> None:
    if r.first:
        # Nothing serves yet, so the first revision takes the traffic before its gate; until the gate
        # passes only the operator may call it, and the router that would send it alerts is not made.
        r.phase("", "", "the first revision, callable by the operator alone", gpu_only=True)
    else:
        r.phase(r.serving, r.revision, "the new revision, at 0 % under the tag candidate", gpu_only=True)
    r.outputs = r.tf.outputs()


def _ready(r: Rollout) -> None:
    def check() -> None:
        cold = wait_ready(r.target, r.headers, r.cfg.warmup_seconds)
        smoke(r.target, r.headers())
        r.shell.console.print(f"ready in {cold:.0f} s; smoke decision valid")

    what = f"wait for {r.target}/readyz (at most {r.cfg.warmup_seconds:.0f} s), then one smoke decision"
    r.shell.call(what, check, None)


def _gate(r: Rollout) -> int | None:
    from loadtest.gate import run as gate

    def missed() -> list[str]:
        timeout = r.cfg.warmup_seconds
        return list(gate(r.target, r.profile, r.report, headers=r.headers, warmup_timeout_s=timeout).missed)

    what = f"the {r.profile.name} gate on it; report in {r.report / 'summary.md'}"
    nothing: list[str] = []
    failed = r.shell.call(what, missed, nothing)
    if r.first:
        r.shell.note(
            "if the gate fails: the revision stays callable by the operator alone, no router, exit 1"
        )
    else:
        r.shell.note(
            f"if the gate fails: the candidate's tag goes, the traffic stays on {r.serving}, exit 1:"
        )
    if (r.shell.dry_run or failed) and not r.first:
        r.phase(r.serving, "", "untag the failed candidate (it keeps 0 %, scales to zero)", gpu_only=True)
    if failed:
        report = r.report / "summary.md"
        if r.first:
            r.shell.console.print(
                f"[red]the gate failed[/]: {r.revision} is callable by you alone and no alert router was "
                f"made; fix and deploy again, or `dgemma destroy`. Report: {report}"
            )
        else:
            r.shell.console.print(
                f"[red]the gate failed[/]: traffic stays on {r.serving}, the alert router as it was, and "
                f"{r.revision} is untagged at 0 %; report: {report}"
            )
        return 1
    r.shell.note("if it passes:")
    return None


def _traffic(r: Rollout) -> None:
    if r.first:
        r.phase("", "", "the invokers and the alert router", gpu_only=False)
    else:
        r.phase(r.revision, "", "the traffic to the new revision, then the alert router", gpu_only=False)
    r.outputs = r.tf.outputs()  # the router's URL, now that it exists
    if not r.shell.dry_run:  # a result, not an effect: a dry run has none to report
        r.shell.console.print(
            f"{r.revision} serves {r.outputs['service_url']}; gate report: {r.report / 'summary.md'}"
        )


def _router(r: Rollout) -> None:
    router_ready(r.cfg, r.shell, r.outputs, r.revision)


STEPS = (
    Step("preflight: tools, credentials, project, region, working tree", _preflight),
    Step("terraform init (state in gs://{r.cfg.state_bucket})", _init),
    Step("weights: upload if the manifest differs, verify in the bucket", _weights),
    Step("API key: the secret's latest, or a first one", _api_key),
    Step("alert router's secrets: a token for each sender that has none", _router_secrets),
    Step("images: Cloud Build of {r.sha} unless the tags exist (weights mode {r.mode})", _images),
    Step("revision {r.revision}: {r.placement}", _revision),
    Step(
        "waiting for {r.target} to be ready (a revision's first instance compiles and stores the compile "
        "cache for the next; no caller's traffic until the gate passes)",
        _ready,
    ),
    Step("load-test gate ({r.profile.name}) against the candidate", _gate),
    Step("traffic: 100 % to {r.revision}; the alert router's new image and settings", _traffic),
    Step("alert router: {r.outputs[router_url]}/readyz", _router),
)


def _plan(r: Rollout) -> int:
    """`--plan`: Terraform's plan of the deploy's last apply (the new revision serving, the router
    changed), with the images that run now: the plan uploads, builds and applies nothing."""
    r.live = r.gcloud.describe_service()
    router = r.gcloud.describe_service(r.cfg.router)
    running = r.live.env.get("DGEMMA_WEIGHTS_MODE", "baked") if r.live else "baked"
    mode = running if r.cfg.weights_mode == "auto" else r.cfg.weights_mode
    image = r.live.image if r.live else ""
    base = tfvars(r.cfg, mode, image=image, router_image=router.image if router else "", invokers=r.invokers)
    suffix = revision_suffix(r.sha, base)
    name = f"{r.cfg.service}-{suffix}"
    # The same revision (a change outside it): the traffic stays as recorded; a new one takes it.
    same = r.live is not None and r.live.serving == name
    serving = str(r.history.applied.get("serving_revision", name)) if same else name
    variables = {**base, "revision_suffix": suffix, "serving_revision": "" if r.first else serving}
    r.shell.console.print(
        "the plan keeps the images that run now: the deploy builds "
        f"{r.sha[:7] or 'this commit'}'s (a new revision) and deploys them by digest; the weights are "
        "not checked" + ("; nothing serves yet, so the plan shows the infrastructure" if r.first else ""),
        markup=False,
    )
    r.shell.console.print(
        r.tf.plan(variables, "what the deploy would change, applying nothing"), markup=False
    )
    return 0


PLAN = (STEPS[0], STEPS[1], Step("terraform plan: what the deploy would change", _plan))


def show_module(console: Console) -> None:
    """The resources the deploy's applies manage (terraform/), a service's containers with it; one
    line each, never wrapped, so that the list can be searched."""
    console.print("## what terraform/ makes (some only once an image, a router or a flag asks for it)")
    for file, resource, containers in module_resources():
        with_containers = f" (containers: {', '.join(containers)})" if containers else ""
        console.print(f"   {file:<14} {resource}{with_containers}", markup=False, soft_wrap=True)


@contextlib.contextmanager
def shown(progress: Progress | None, shell: Shell, text: str) -> Iterator[None]:
    """A line on the progress display (step, elapsed time), ticked off when done; in a dry run, a
    heading above what the step would do."""
    if progress is None:
        shell.console.print(f"## {text}", markup=False)
        yield
        return
    task = progress.add_task(text, total=1)
    yield
    progress.update(task, completed=1)


def deploy(cfg: DeployConfig, console: Console) -> int:
    """The whole deploy; 0 when the new revision serves (or nothing changed), 1 when the gate kept
    the traffic where it was."""
    from loadtest.gate import GateProfile

    check_deploy(cfg)
    if not cfg.dry_run:
        cfg.directory.mkdir(parents=True, exist_ok=True)
    profile = GateProfile.load(cfg.profile).overridden(
        list(cfg.targets), cfg.latency_seconds, cfg.throughput_seconds
    )
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    if cfg.dry_run:
        show_module(console)
    r = Rollout(cfg, shell, profile, id_tokens(cfg.id_token))
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with contextlib.ExitStack() as stack:
        progress = None if cfg.dry_run else stack.enter_context(Progress(*columns, console=console))
        for step in PLAN if cfg.plan else STEPS:
            try:
                with shown(progress, shell, step.describe(r)):
                    code = step.run(r)
            except KeyboardInterrupt:
                stack.close()  # the progress display first, so the words below stay on screen
                console.print(interrupted(r, step), markup=False, soft_wrap=True)
                raise
            if code is not None:
                return code
    return 0


def interrupted(r: Rollout, step: Step) -> str:
    """Where a deploy stopped on Ctrl-C, what it left, and how to go on."""
    left = {
        "_revision": "the new revision may be applied at 0 %",
        "_ready": f"{r.revision} is tagged candidate at 0 % and takes no caller's traffic",
        "_gate": f"{r.revision} is tagged candidate at 0 % and takes no caller's traffic",
        "_traffic": "the last apply may have stopped midway: Terraform's state says what it made",
    }.get(
        getattr(step.run, "__name__", ""),
        "nothing serves differently: the traffic and the router are as they were",
    )
    return (
        f"interrupted during: {step.describe(r)}. {left}. Run the same command again to go on: a deploy "
        "starts from what is deployed, and the next run's candidate replaces a tag left behind. If "
        "Terraform then says the state is locked, see docs/deploy.md, Interrupted and stuck deploys"
    )


def destroy(cfg: DeployConfig, console: Console, *, delete_weights: bool) -> int:
    """Tear everything down; the weights bucket (and the checkpoint) only with `delete_weights`. A
    project with nothing deployed (no service, no router, nothing in the Terraform state) is left as
    it is, and said to be: an apply there would first build what the destroy then deletes."""
    check_project(cfg, "destroy", "gcloud", "terraform")
    shell = Shell(console, cfg.directory, dry_run=cfg.dry_run)
    if not cfg.dry_run:
        cfg.directory.mkdir(parents=True, exist_ok=True)
    tf, gcloud = Terraform(cfg, shell), Gcloud(cfg, shell)
    live = gcloud.describe_service()
    router = gcloud.describe_service(cfg.router)
    kept = "" if delete_weights else f"; the weights stay in gs://{cfg.weights_bucket}"
    # No state bucket, no state: and nothing to init either (the backend is that bucket).
    state = gcloud.describe_bucket(cfg.state_bucket, "name", reads="whether the state bucket exists")
    held: list[str] = []
    if state.code == 0:
        tf.init(tfvars(cfg, "baked"), kept_weights(cfg, shell, gcloud))
        listed = tf.run("state", "list", reads="the resources the Terraform state holds", check=False)
        if listed.code != 0 and "No state file was found" not in listed.stderr:
            raise DeployError(f"`terraform state list` failed: {listed.stderr.strip()[-500:]}")
        held = listed.stdout.split() if listed.code == 0 else []
    if not (live or router or held):
        where = f"gs://{cfg.state_bucket} holds nothing" if state.code == 0 else "there is no state bucket"
        weights = gcloud.describe_bucket(
            cfg.weights_bucket, "name", reads="whether the weights bucket exists"
        )
        if weights.code != 0:
            kept = ""
        elif delete_weights:  # kept by an earlier destroy (or made by hand): no state holds it
            kept = f"; gs://{cfg.weights_bucket} stays: `gcloud storage rm --recursive gs://{cfg.weights_bucket}`"
        console.print(
            f"nothing to destroy: no {cfg.service} or {cfg.router} service in {cfg.project}/{cfg.region} "
            f"and no Terraform state ({where}); nothing was changed{kept}",
            markup=False,
        )
        return 0
    shell.note("if a service runs or the state holds resources (else: nothing to destroy, exit 0):")
    image = live.image if live and "@sha256:" in live.image else ""
    # Both services as they run (a service left out would be destroyed while still protected).
    router_image = router.image if router and image and "@sha256:" in router.image else ""
    variables = tfvars(cfg, "baked", image=image, router_image=router_image)
    history = History.read(gcloud)
    if live and history and history.applied:
        # What was last applied, so lifting the protection changes nothing else (no new revision).
        variables = dict(history.applied)
    tf.apply({**variables, "deletion_protection": False}, "lift the services' deletion protection")
    if delete_weights:
        gcloud.remove_weights()
    else:
        shell.note(f"keep gs://{cfg.weights_bucket}: forget it in the state so that destroy leaves it")
        tf.run("state", "rm", WEIGHTS_BUCKET, check=False)
    tf.write_root(variables)  # no import block in a destroy: it must not take a kept bucket back
    tf.run(
        "destroy",
        "-input=false",
        "-no-color",
        "-auto-approve",
        f"-var-file={cfg.directory / 'terraform.tfvars.json'}",
    )
    if cfg.dry_run:  # what it would do: a dry run has no result to report
        console.print(
            f"dry run: the destroy would delete {cfg.service} and {cfg.router} in {cfg.project}/"
            f"{cfg.region} and what the Terraform state holds"
            + ("" if delete_weights else f"; the weights would stay in gs://{cfg.weights_bucket}"),
            markup=False,
        )
        return 0
    # The first deploy's copy of the API key: its secret is gone with the project's resources.
    copy = cfg.directory / "api-key"
    if copy.exists():
        copy.unlink()
        kept += f"; the API key's copy {copy} removed"
    console.print(f"destroyed{kept}", markup=False)
    return 0
