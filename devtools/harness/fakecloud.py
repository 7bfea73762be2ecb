"""Recording stand-ins for `gcloud` and `terraform`, for tests of `dgemma deploy`'s orchestration.

`install(bin_dir, state_path)` writes two executables into `bin_dir` (put it first on PATH) that run
this module. They answer the commands the deploy emits from a JSON state file (the "project":
buckets, secrets and their versions, images, the GPU service and its traffic, the alert router),
change it as the real tools would, and append every call to `state["calls"]`. A `terraform apply`
creates the module's secrets (named as terraform/main.tf names them) and, like Cloud Run, refuses a
router revision whose secrets have no version. Like Terraform, it creates the weights bucket only
where none exists and otherwise answers 409, unless the generated root imports that bucket (an
`import` block in the generated root, read at each command); `state rm` forgets it, `state list`
lists what it keeps, `destroy` deletes what the state holds. Scenario switches in the state:
`fail_apply_at` (the Nth `terraform apply` fails), `service_url`/`candidate_url`/`router_url`
(where the services answer: real servers on loopback). Only the orchestration is tested this way;
the commands' syntax is checked against the real gcloud CLI, and the module against the provider
schema, elsewhere.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

STATE_ENV = "FAKECLOUD_STATE"
ROOT = Path(__file__).resolve().parents[2]


def install(bin_dir: Path, state_path: Path, initial: dict[str, Any]) -> None:
    """Write the `gcloud` and `terraform` stand-ins and the initial state."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state: dict[str, Any] = {"calls": [], "buckets": {}, "secrets": {}, "images": {}, "service": None}
    state.update(applies=0, router=None)
    state_path.write_text(json.dumps({**state, **initial}))
    for tool in ("gcloud", "terraform"):
        script = bin_dir / tool
        # devtools/ is not installed: the stand-ins find it from the checkout, wherever they are called.
        script.write_text(
            f"#!/bin/sh\nexport {STATE_ENV}={state_path} PYTHONPATH={ROOT}\n"
            f'exec {sys.executable} -m devtools.harness.fakecloud {tool} "$@"\n'
        )
        script.chmod(0o755)


def load(state_path: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(state_path.read_text())
    return state


def _flag(args: list[str], name: str) -> str | None:
    for a in args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return None


def _fail(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr)
    return code


def _secret_missing(command: str, name: str) -> int:
    return _fail(
        f"ERROR: (gcloud.{command}) NOT_FOUND: Secret [projects/123456789012/secrets/{name}] not found "
        "or has no versions."
    )


def _module_secrets(v: dict[str, Any]) -> list[str]:
    """The secrets an apply of the module creates with these variables (terraform/main.tf's names)."""
    name = v["service_name"]
    senders = [f"{name}-alerts-{s}-token" for s in ("alertmanager", "grafana", "cloud-monitoring")]
    sinks = [f"{name}-alerts-sink-{s}" for s in v.get("alerts_sink_secrets", [])]
    policy = [f"{name}-alerts-policy"] if v.get("alerts_policy") else []
    return [f"{name}-api-keys", *senders, *sinks, *policy]


def gcloud(args: list[str], state: dict[str, Any]) -> int:
    words = [a for a in args if not a.startswith("-")]
    cmd = " ".join(words[:3])
    if cmd.startswith("auth print-access-token"):
        if state.get("no_credentials"):
            return _fail(
                "ERROR: (gcloud.auth.print-access-token) There was a problem refreshing your auth tokens"
            )
        print("ya29.fake-access-token")
    elif cmd.startswith("config get-value account"):
        print(state.get("account", "sre@example.com"))
    elif cmd.startswith("projects describe"):
        print("123456789012")
    elif cmd.startswith("storage buckets describe"):
        bucket = words[3].removeprefix("gs://")
        if bucket not in state["buckets"]:
            return _fail(f"ERROR: (gcloud.storage.buckets.describe) gs://{bucket} not found: 404.")
        fmt = _flag(args, "format") or ""
        print(state["buckets"][bucket] if "location" in fmt else bucket)
    elif cmd.startswith("storage buckets create"):
        state["buckets"][words[3].removeprefix("gs://")] = (_flag(args, "location") or "").upper()
    elif cmd.startswith(("storage buckets update", "storage rm")):
        pass
    elif cmd.startswith("storage cat"):
        if words[2] not in state.setdefault("objects", {}):
            return _fail(f"ERROR: (gcloud.storage.cat) The following URLs matched no objects:\n{words[2]}")
        print(state["objects"][words[2]], end="")
    elif cmd.startswith("storage cp") and args[2] == "-":
        state.setdefault("objects", {})[words[2]] = sys.stdin.read()
    elif cmd.startswith("run revisions list"):
        for revision in reversed((state["service"] or {}).get("revisions", [])):
            print(revision)
    elif cmd.startswith("run services describe"):
        service = state["router"] if words[3].endswith("-router") else state["service"]
        if service is None:
            return _fail(f"ERROR: (gcloud.run.services.describe) Cannot find service [{words[3]}]")
        traffic = [
            {"revisionName": r, "percent": p, **({"tag": t} if t else {})}
            for r, p, t in service.get("traffic", [])
        ]
        env = [{"name": "DGEMMA_ALERTS_MODE", "value": service["mode"]}] if service.get("mode") else []
        spec = {"template": {"spec": {"containers": [{"image": service["image"], "env": env}]}}}
        print(json.dumps({"status": {"traffic": traffic}, "spec": spec}))
    elif cmd.startswith("secrets versions list"):
        if words[3] not in state["secrets"]:
            return _secret_missing("secrets.versions.list", words[3])
        disabled = state.setdefault("disabled", {}).get(words[3], [])
        numbers = list(range(len(state["secrets"][words[3]]), 0, -1))  # newest first, as gcloud
        if _flag(args, "filter") == "state:enabled":
            numbers = [n for n in numbers if n not in disabled]
        names = [f"projects/123456789012/secrets/{words[3]}/versions/{n}" for n in numbers]
        if "createTime" in (_flag(args, "format") or ""):  # when each was added (unknown: long ago)
            created = state.setdefault("created", {}).get(words[3], {})
            names = [created.get(str(n), "2026-01-01T00:00:00Z") for n in numbers]
        print("\n".join(names[: int(_flag(args, "limit") or len(names))]))
    elif cmd.startswith("secrets versions disable"):
        secret, number = _flag(args, "secret") or "", int(words[3])
        if not 0 < number <= len(state["secrets"].get(secret, [])):
            return _fail(f"ERROR: (gcloud.secrets.versions.disable) NOT_FOUND: version {number} of {secret}")
        state.setdefault("disabled", {}).setdefault(secret, []).append(number)
    elif cmd.startswith("secrets versions add"):
        if words[3] not in state["secrets"]:
            return _secret_missing("secrets.versions.add", words[3])
        state["secrets"][words[3]].append(sys.stdin.read())
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        state.setdefault("created", {}).setdefault(words[3], {})[str(len(state["secrets"][words[3]]))] = now
    elif cmd.startswith("secrets versions access"):
        secret = _flag(args, "secret") or ""
        if not state["secrets"].get(secret):
            return _secret_missing("secrets.versions.access", secret)
        number = len(state["secrets"][secret]) if words[3] == "latest" else int(words[3])
        if number in state.get("disabled", {}).get(secret, []):
            return _fail(
                f"ERROR: (gcloud.secrets.versions.access) FAILED_PRECONDITION: {secret} {words[3]} "
                "is DISABLED"
            )
        print(state["secrets"][secret][number - 1], end="")
    elif cmd.startswith("artifacts docker images"):
        tag = words[4]
        if tag not in state["images"]:
            return _fail(f"ERROR: (gcloud.artifacts.docker.images.describe) Image not found: {tag}")
        print(state["images"][tag])
    elif cmd.startswith("builds submit"):
        subs = dict(kv.split("=", 1) for kv in (_flag(args, "substitutions") or "").split(","))
        state.setdefault("builds", []).append(subs)
        for image in (subs["_IMAGE"], subs["_ROUTER_IMAGE"]):  # cloudbuild.yaml pushes both
            state["images"][image] = "sha256:" + hashlib.sha256(image.encode()).hexdigest()
    else:
        return _fail(f"fakecloud: unexpected gcloud command: {args}", 2)
    return 0


WEIGHTS = "module.dgemma.google_storage_bucket.weights"
GPU = "module.dgemma.google_cloud_run_v2_service.gpu"
INVOKERS = "module.dgemma.google_cloud_run_v2_service_iam_member.invokers"


def weights_folder(v: dict[str, Any]) -> str:
    """The checkpoint's folder as terraform/main.tf's `weights_folder` makes it."""
    prefix, version = v.get("weights_prefix", "dgemma-w4a16"), v.get("weights_version", "")
    return f"{prefix}/{version}" if version else str(prefix)


def _weights_bucket(v: dict[str, Any], state: dict[str, Any]) -> str | None:
    """Create, import or refuse the weights bucket as Terraform would; an error message, or None."""
    bucket = f"{v['project_id']}-{v['service_name']}-weights"
    managed: list[str] = state.setdefault("managed", [])
    imported = state.get("imports", {}).get(WEIGHTS)
    if WEIGHTS in managed:
        return None
    if imported is not None:
        if imported != f"{v['project_id']}/{bucket}" or bucket not in state["buckets"]:
            return f"Error: Cannot import non-existent remote object (import of {WEIGHTS} as {imported})"
    elif bucket in state["buckets"]:
        return (
            "Error: googleapi: Error 409: Your previous request to create the named bucket succeeded "
            "and you already own it., conflict"
        )
    state["buckets"].setdefault(bucket, v["region"].upper())
    managed.append(WEIGHTS)
    return None


def terraform(args: list[str], state: dict[str, Any]) -> int:
    chdir = next((a.split("=", 1)[1] for a in args if a.startswith("-chdir=")), ".")
    words = [a for a in args if not a.startswith("-")]
    config = Path(chdir) / "main.tf.json"
    if words[:1] == ["init"] or (words[:1] in (["apply"], ["destroy"]) and config.exists()):
        root = json.loads(config.read_text())  # the generated root must parse; each command reads it
        state["imports"] = {block["to"]: block["id"] for block in root.get("import", [])}
    if words[:1] == ["init"]:
        return 0
    if words[:1] == ["apply"]:
        state["applies"] += 1
        var_file = next(a.split("=", 1)[1] for a in args if a.startswith("-var-file="))
        variables = json.loads(Path(var_file).read_text())
        targets = [a.split("=", 1)[1] for a in args if a.startswith("-target=")]
        state.setdefault("applied", []).append({**variables, **({"targets": targets} if targets else {})})
        if state.get("fail_apply_at") == state["applies"]:
            return _fail(
                "Error: creating Revision: googleapi: Error 409: quota exceeded (fakecloud scenario)"
            )
        for secret in _module_secrets(variables):
            state["secrets"].setdefault(secret, [])
        if variables.get("alerts_policy"):  # the one version Terraform writes
            state["secrets"][f"{variables['service_name']}-alerts-policy"].append(variables["alerts_policy"])
        gpu = any(t == GPU for t in targets)
        if targets and not gpu:
            return 0
        if not targets:
            refused = _weights_bucket(variables, state)
            if refused:
                return _fail(refused)
        if targets:  # the GPU service and the named invokers alone: the router stays as it is
            named = (t[len(INVOKERS) + 2 : -2] for t in targets if t.startswith(INVOKERS))
            state["invokers"] = sorted({*state.get("invokers", []), *named})
        elif variables.get("router_image"):
            # Cloud Run reads a revision's secrets when it deploys it: each needs a version.
            for secret in _module_secrets(variables):
                if not state["secrets"][secret]:
                    return _fail(
                        f"Error: Revision '{variables['service_name']}-router-00001' is not ready: Secret "
                        f"projects/123456789012/secrets/{secret}/versions/latest was not found"
                    )
            state["router"] = {
                "image": variables["router_image"],
                "policy": variables.get("alerts_policy"),
                "mode": variables.get("alerts_mode"),
            }
        else:
            state["router"] = None
        if not targets:
            state["invokers"] = sorted(variables.get("invokers", [])) if variables["image"] else []
        if variables["image"]:
            name = variables["service_name"]
            revision = (
                f"{name}-{variables['revision_suffix']}" if variables["revision_suffix"] else f"{name}-00001"
            )
            serving = variables["serving_revision"] or revision
            traffic = [[serving, 100, ""]]
            if variables["candidate_revision"]:
                traffic.append([variables["candidate_revision"], 0, "candidate"])
            known = (state["service"] or {}).get("revisions", [])
            revisions = [*known, *([revision] if revision not in known else [])]
            state["service"] = {"image": variables["image"], "traffic": traffic, "latest": revision}
            state["service"]["revisions"] = revisions
            state["last_vars"] = variables
        else:
            state["last_vars"] = {
                **state.get("last_vars", {}),
                **variables,
                "image": state.get("last_vars", {}).get("image", ""),
            }
        return 0
    if words[:1] == ["plan"]:  # what would change: each variable that differs from the last apply's
        var_file = next(a.split("=", 1)[1] for a in args if a.startswith("-var-file="))
        variables, last = json.loads(Path(var_file).read_text()), state.get("last_vars") or {}
        changed = {k: v for k, v in variables.items() if last.get(k) != v}
        print(f"Plan (fakecloud): {len(changed)} variables change: {json.dumps(changed, sort_keys=True)}")
        return 0
    if words[:1] == ["output"]:
        v = state.get("last_vars") or {}
        project, region, name = (
            v.get("project_id", "p"),
            v.get("region", "r"),
            v.get("service_name", "dgemma"),
        )
        service = state["service"]
        candidate = service and any(t[2] == "candidate" for t in service["traffic"])
        outputs = {
            "service_url": state.get("service_url", "") if service else "",
            "candidate_url": state.get("candidate_url", "") if candidate else "",
            "latest_ready_revision": service["latest"] if service else "",
            "weights_url": f"gs://{project}-{name}-weights/{weights_folder(v)}",
            "weights_bucket": f"{project}-{name}-weights",
            "build_source_bucket": f"{project}-{name}-build",
            "image_repository": f"{region}-docker.pkg.dev/{project}/{name}",
            "build_service_account": f"{name}-build@{project}.iam.gserviceaccount.com",
            "api_keys_secret": f"projects/{project}/secrets/{name}-api-keys",
            "router_url": state.get("router_url", "") if state["router"] else "",
            "router_service_account": f"{name}-router@{project}.iam.gserviceaccount.com",
            "alert_webhooks": {
                s: f"{state.get('router_url', '')}/v1/alerts/{s}"
                + ("?auth_token=" if s == "cloud-monitoring" else "")
                for s in (("alertmanager", "grafana", "cloud-monitoring") if state["router"] else ())
            },
            "alerts_sender_secrets": {
                s: f"projects/{project}/secrets/{name}-alerts-{s}-token"
                for s in ("alertmanager", "grafana", "cloud-monitoring")
            },
            "alerts_sink_secrets": {
                s: f"projects/{project}/secrets/{name}-alerts-sink-{s}"
                for s in v.get("alerts_sink_secrets", [])
            },
        }
        print(
            json.dumps(
                {k: {"value": val, "type": "string", "sensitive": False} for k, val in outputs.items()}
            )
        )
        return 0
    if words[:2] == ["state", "list"]:  # the addresses the stand-in keeps of what the state holds
        held = [
            *state.get("managed", []),
            *([GPU] if state["service"] else []),
            *(["module.dgemma.google_cloud_run_v2_service.router"] if state["router"] else []),
            *(f'module.dgemma.google_secret_manager_secret.alerts["{s}"]' for s in state["secrets"]),
        ]
        print("\n".join(held))
        return 0
    if words[:3] == ["state", "rm", WEIGHTS]:
        state["managed"] = [m for m in state.get("managed", []) if m != WEIGHTS]
        return 0
    if words[:1] == ["destroy"]:
        v = state.get("last_vars") or {}
        if WEIGHTS in state.get("managed", []):
            state["buckets"].pop(f"{v['project_id']}-{v['service_name']}-weights", None)
        state.update(managed=[], service=None, router=None, secrets={}, images={})
        return 0
    return _fail(f"fakecloud: unexpected terraform command: {args}", 2)


def _local(tool: str, args: list[str]) -> bool:
    """A command that reaches no cloud (deploy/cloud/inputs.py's checks): the real tool runs it."""
    if tool == "gcloud":
        return args[:2] == ["meta", "list-files-for-upload"]
    return (
        bool(args) and args[0].startswith("-chdir=") and Path(args[0][7:]).name.startswith("dgemma-inputs-")
    )


def _real(tool: str) -> str:
    """The tool on PATH that is not one of these stand-ins."""
    import os
    import shutil

    for entry in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which(tool, path=entry)
        if not found:
            continue
        with open(found, "rb") as f:  # the head only: the real terraform is a binary of ~90 MB
            head = f.read(500)
        if b"devtools.harness.fakecloud" not in head:
            return found
    raise SystemExit(_fail(f"fakecloud: no real {tool} on PATH for a local command", 2))


def main(argv: list[str]) -> int:
    import os

    tool, args = argv[0], argv[1:]
    if _local(tool, args):
        real = _real(tool)
        os.execv(real, [real, *args])
    path = Path(os.environ[STATE_ENV])
    state = load(path)
    state["calls"].append([tool, *args])
    code = gcloud(args, state) if tool == "gcloud" else terraform(args, state)
    path.write_text(json.dumps(state))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
