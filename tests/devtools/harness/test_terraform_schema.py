"""The offline schema checker (devtools.harness.terraform_schema) against small fixture modules.

Each failing case mutates one line of a conforming GPU Cloud Run module and asserts the complete
problem list, so a case fails both when the problem goes unreported and when anything else is reported.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devtools.harness import terraform_schema
from devtools.harness.terraform_schema import Attribute, Block, Field, Schema, SchemaError, problems

pytestmark = pytest.mark.integration  # the real terraform CLI, the provider's schema, checkov

VERSIONS_TF = """\
terraform {
  required_version = ">= 1.9"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 8.7"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

variable "project" {
  type = string
}

variable "region" {
  type    = string
  default = "europe-west4"
}
"""

MAIN_TF = """\
locals {
  env = { MODEL = "diffusion-gemma", LOG_LEVEL = "info" }
}

data "google_project" "this" {}

resource "google_storage_bucket" "weights" {
  name                        = "${var.project}-weights"
  location                    = var.region
  uniform_bucket_level_access = true
  force_destroy               = false
}

resource "google_service_account" "run" {
  account_id   = "dgemma-run"
  display_name = "DiffusionGemma on Cloud Run"
}

resource "google_storage_bucket_iam_member" "run_reads_weights" {
  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.run.email}"
}

resource "google_secret_manager_secret" "token" {
  count     = 1
  secret_id = "dgemma-token"
  replication {
    auto {}
  }
  lifecycle {
    prevent_destroy = false
  }
}

resource "google_cloud_run_v2_service" "gpu" {
  name                = "dgemma"
  location            = var.region
  deletion_protection = false
  ingress             = "INGRESS_TRAFFIC_ALL"

  template {
    service_account                  = google_service_account.run.email
    gpu_zonal_redundancy_disabled    = true
    max_instance_request_concurrency = 8
    timeout                          = "600s"

    scaling {
      min_instance_count = 0
      max_instance_count = 1
    }
    node_selector {
      accelerator = "nvidia-l4"
    }
    containers {
      image = "europe-docker.pkg.dev/p/r/dgemma:latest"
      args  = ["--port", "8080"]
      ports {
        container_port = 8080
      }
      resources {
        limits = {
          cpu              = "8"
          memory           = "32Gi"
          "nvidia.com/gpu" = "1"
        }
        cpu_idle          = false
        startup_cpu_boost = true
      }
      startup_probe {
        initial_delay_seconds = 0
        period_seconds        = 10
        failure_threshold     = 60
        http_get {
          path = "/healthz"
          port = 8080
        }
      }
      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }
      env {
        name = "TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.token[0].secret_id
            version = "latest"
          }
        }
      }
      volume_mounts {
        name       = "weights"
        mount_path = "/weights"
      }
    }
    volumes {
      name = "weights"
      gcs {
        bucket        = google_storage_bucket.weights.name
        read_only     = true
        mount_options = ["implicit-dirs"]
      }
    }
  }

  lifecycle {
    ignore_changes = [client, client_version]
  }
  depends_on = [google_storage_bucket_iam_member.run_reads_weights]
}

resource "random_id" "suffix" {
  byte_length = 4
}

output "url" {
  value = google_cloud_run_v2_service.gpu.uri
}
"""

GPU = "main.tf: google_cloud_run_v2_service.gpu"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return terraform_schema.load_schema()  # downloads and indexes the wheel once per machine


def write_module(root: Path, main: str = MAIN_TF, versions: str = VERSIONS_TF) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "main.tf").write_text(main)
    (root / "versions.tf").write_text(versions)
    return root


def mutated(tmp_path: Path, schema: Schema, old: str, new: str, *, in_file: str = "main") -> list[str]:
    """The problems of the conforming module with `old` replaced by `new` in one of its files."""
    base = MAIN_TF if in_file == "main" else VERSIONS_TF
    assert base.count(old) == 1, f"fixture text {old!r} must occur exactly once"
    text = base.replace(old, new)
    if in_file == "main":
        write_module(tmp_path, main=text)
    else:
        write_module(tmp_path, versions=text)
    return problems(tmp_path, schema=schema)


def test_index_takes_names_from_the_generated_code(schema: Schema) -> None:
    def block(body: dict[str, Field], name: str) -> Block:
        found = body[name]
        assert isinstance(found, Block), f"{name} is an argument"
        return found

    service = schema.body(schema.kinds["resource"]["google_cloud_run_v2_service"])
    assert service["location"] == Attribute("string", required=True)
    assert block(service, "template").required and block(service, "template").single
    template = schema.body(block(service, "template").body)
    assert template["gpu_zonal_redundancy_disabled"] == Attribute("bool", required=False)
    containers = block(template, "containers")
    assert not containers.single and not containers.required
    resources = schema.body(block(schema.body(containers.body), "resources").body)
    assert resources["limits"] == Attribute("map(string)", required=False)  # "nvidia.com/gpu" is a key
    # jsii spells this property fetchhDetails (it may not start with "get"); Terraform's name is geth_details.
    nodes = schema.kinds["resource"]["google_blockchain_node_engine_blockchain_nodes"]
    assert ("ethereum_details", "geth_details") in schema.paths(nodes)
    assert "google_project" in schema.kinds["data"]
    assert "google_cloud_run_v2_service" not in schema.kinds["ephemeral"]


def test_conforming_gpu_module_has_no_problems(tmp_path: Path, schema: Schema) -> None:
    assert problems(write_module(tmp_path), schema=schema) == []


def test_unknown_resource_type(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, '"google_service_account" "run"', '"google_service_acount" "run"')
    assert found == [
        "main.tf: google_service_acount.run: unknown resource type"
        ' "google_service_acount" in provider google 8.7.0 (did you mean "google_service_account"?)'
    ]


def test_unknown_data_source_type(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, 'data "google_project" "this" {}', 'data "google_projects_x" "this" {}')
    assert found == [
        'main.tf: data.google_projects_x.this: unknown data source type "google_projects_x"'
        ' in provider google 8.7.0 (did you mean "google_projects"?)'
    ]


def test_misspelt_top_level_argument(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "  force_destroy  ", "  force_destroyy ")
    assert found == [
        'main.tf: google_storage_bucket.weights: unknown argument "force_destroyy"'
        ' (did you mean "force_destroy"?)'
    ]


def test_misspelt_nested_argument(tmp_path: Path, schema: Schema) -> None:
    found = mutated(
        tmp_path, schema, "gpu_zonal_redundancy_disabled    =", "gpu_zonal_redundancy_disabledd   ="
    )
    assert found == [
        f'{GPU}: template: unknown argument "gpu_zonal_redundancy_disabledd"'
        ' (did you mean "gpu_zonal_redundancy_disabled"?)'
    ]
    found = mutated(tmp_path, schema, "max_instance_count = 1", "max_instance_countt = 1")
    assert found == [
        f'{GPU}: template.scaling: unknown argument "max_instance_countt"'
        ' (did you mean "max_instance_count"?)'
    ]
    found = mutated(tmp_path, schema, 'path = "/healthz"', 'paht = "/healthz"')
    assert found == [
        f"{GPU}: template.containers[0].startup_probe.http_get:"
        ' unknown argument "paht" (did you mean "path"?)'
    ]


def test_argument_in_the_wrong_block(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "accelerator = ", "max_instance_count = 1\n      accelerator = ")
    assert found == [
        f'{GPU}: template.node_selector: unknown argument "max_instance_count"'
        " (it belongs in template.scaling, scaling)"
    ]
    found = mutated(
        tmp_path, schema, "    timeout                          = ", "    container_port = 8080\n  x = "
    )
    assert found == [
        f'{GPU}: template: unknown argument "container_port" (it belongs in template.containers.ports)',
        f'{GPU}: template: unknown argument "x"',
    ]


def test_missing_required_argument_and_block(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "  location                    = var.region\n", "")
    assert found == ['main.tf: google_storage_bucket.weights: missing required argument "location"']
    found = mutated(tmp_path, schema, '      image = "europe-docker.pkg.dev/p/r/dgemma:latest"\n', "")
    assert found == [f'{GPU}: template.containers[0]: missing required argument "image"']
    found = mutated(tmp_path, schema, "  replication {\n    auto {}\n  }\n", "")
    assert found == ['main.tf: google_secret_manager_secret.token: missing required block "replication"']


def test_string_where_number_or_bool_is_required(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "container_port = 8080", 'container_port = "8080"')
    assert found == [
        f'{GPU}: template.containers[0].ports: argument "container_port": expected number, got string "8080"'
    ]
    found = mutated(tmp_path, schema, "read_only     = true", 'read_only     = "yes"')
    assert found == [f'{GPU}: template.volumes[0].gcs: argument "read_only": expected bool, got string "yes"']
    found = mutated(tmp_path, schema, 'timeout                          = "600s"', "timeout = 600")
    assert found == [f'{GPU}: template: argument "timeout": expected string, got number 600']
    # Expressions are Terraform's business, whatever they evaluate to.
    assert mutated(tmp_path, schema, 'timeout                          = "600s"', "timeout = var.x") == []


def test_map_keys_are_data_and_values_and_items_are_typed(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, '"nvidia.com/gpu" = "1"', '"nvidia.com/gpu" = 1')
    assert found == [
        f'{GPU}: template.containers[0].resources: argument "limits" key "nvidia.com/gpu": expected string,'
        " got number 1"
    ]
    found = mutated(tmp_path, schema, 'args  = ["--port", "8080"]', 'args  = ["--port", 8080]')
    assert found == [
        f'{GPU}: template.containers[0]: argument "args" item 1: expected string, got number 8080'
    ]
    found = mutated(tmp_path, schema, 'args  = ["--port", "8080"]', 'args  = "--port 8080"')
    assert found == [
        f'{GPU}: template.containers[0]: argument "args": expected list of string, got string "--port 8080"'
    ]


def test_blocks_and_arguments_are_not_interchangeable(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "cpu_idle          = false", "cpu_idle {}")
    assert found == [
        f'{GPU}: template.containers[0].resources: "cpu_idle" is an argument, not a block:'
        " write cpu_idle = ..."
    ]
    found = mutated(tmp_path, schema, "node_selector {", "node_selector = {")
    assert found == [
        f'{GPU}: template: "node_selector" is a block, not an argument: write node_selector {{ ... }}'
    ]
    found = mutated(tmp_path, schema, "    node_selector {", "    scaling {}\n    node_selector {")
    assert found == [f'{GPU}: template: at most one "scaling" block is allowed, found 2']


def test_dynamic_block_content_is_checked(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "value = env.value", "valeu = env.value")
    assert found == [
        f'{GPU}: template.containers[0].dynamic.env.content: unknown argument "valeu" (did you mean "value"?)'
    ]
    found = mutated(tmp_path, schema, "name  = env.key", "value_source = 1")
    assert found == [
        f'{GPU}: template.containers[0].dynamic.env.content: "value_source" is a block, not an argument:'
        " write value_source { ... }",
        f'{GPU}: template.containers[0].dynamic.env.content: missing required argument "name"',
    ]
    found = mutated(tmp_path, schema, 'dynamic "env"', 'dynamic "envs"')
    assert found == [
        f'{GPU}: template.containers[0]: unknown block "envs" in dynamic block (did you mean "env"?)'
    ]
    found = mutated(tmp_path, schema, "for_each = local.env", "foreach = local.env")
    assert found == [
        f'{GPU}: template.containers[0].dynamic.env: unknown argument "foreach"',
        f'{GPU}: template.containers[0].dynamic.env: missing required argument "for_each"',
    ]


def test_a_dynamic_block_counts_as_present(tmp_path: Path, schema: Schema) -> None:
    dynamic_replication = (
        '  dynamic "replication" {\n    for_each = [1]\n    content {\n      auto {}\n    }\n  }\n'
    )
    assert mutated(tmp_path, schema, "  replication {\n    auto {}\n  }\n", dynamic_replication) == []


def test_meta_arguments_and_other_providers(tmp_path: Path, schema: Schema) -> None:
    found = mutated(
        tmp_path,
        schema,
        "  count     = 1\n",
        "  count = 1\n  for_each = {}\n  lifecycle {\n    bogus = 1\n  }\n",
    )
    assert found == [
        'main.tf: google_secret_manager_secret.token: lifecycle: unknown argument "bogus"',
        'main.tf: google_secret_manager_secret.token: "count" and "for_each" cannot both be set',
    ]
    # A resource served by another provider is not checked against google's schema.
    beta = 'resource "google_compute_instance" "b" {\n  provider = google-beta\n  anything = 1\n}\n'
    assert mutated(tmp_path, schema, "output ", beta + "output ") == []


def test_provider_block_and_required_providers(tmp_path: Path, schema: Schema) -> None:
    found = mutated(tmp_path, schema, "  region  = var.region", "  regoin  = var.region", in_file="versions")
    assert found == ['versions.tf: provider.google: unknown argument "regoin" (did you mean "region"?)']
    found = mutated(tmp_path, schema, '"~> 8.7"', '"~> 7.0"', in_file="versions")
    assert found == [
        'versions.tf: terraform.required_providers: google: version constraint "~> 7.0" does not admit 8.7.0,'
        " the version checked"
    ]
    found = mutated(tmp_path, schema, '"hashicorp/google"', '"hashicorp/google-beta"', in_file="versions")
    assert found == [
        'versions.tf: terraform.required_providers: google: source is "hashicorp/google-beta",'
        " this checker knows hashicorp/google"
    ]


def test_parse_errors_and_empty_directories(tmp_path: Path, schema: Schema) -> None:
    assert problems(tmp_path, schema=schema) == [f"{tmp_path}: no .tf files"]
    found = mutated(tmp_path, schema, "output ", 'resource "x" {\noutput ')
    assert len(found) == 1 and found[0].startswith("main.tf: cannot parse: Unexpected token")


def test_cli_prints_problems_and_sets_the_exit_code(
    tmp_path: Path, schema: Schema, capsys: pytest.CaptureFixture[str]
) -> None:
    module = write_module(tmp_path / "ok")
    assert terraform_schema.main([str(module)]) == 0
    write_module(tmp_path / "bad", main=MAIN_TF.replace("force_destroy ", "force_destroyy"))
    assert terraform_schema.main([str(tmp_path / "bad")]) == 1
    assert capsys.readouterr().out == (
        'main.tf: google_storage_bucket.weights: unknown argument "force_destroyy"'
        ' (did you mean "force_destroy"?)\n'
    )
    assert terraform_schema.main([]) == 2


def test_a_wheel_with_the_wrong_hash_is_refused(tmp_path: Path) -> None:
    (tmp_path / terraform_schema.WHEEL_NAME).write_bytes(b"truncated")

    def download(dest: Path) -> Path:
        (dest / terraform_schema.WHEEL_NAME).write_bytes(b"not the pinned wheel")
        return dest / terraform_schema.WHEEL_NAME

    with pytest.raises(SchemaError, match="sha256"):
        terraform_schema.ensure_wheel(tmp_path, download)
    assert os.listdir(tmp_path) == []  # neither the stale file nor the bad download is kept


def test_a_cached_wheel_is_verified_and_reused(tmp_path: Path) -> None:
    (tmp_path / terraform_schema.WHEEL_NAME).symlink_to(terraform_schema.ensure_wheel())

    def download(dest: Path) -> Path:
        raise AssertionError("a verified wheel must not be downloaded again")

    assert terraform_schema.ensure_wheel(tmp_path, download) == tmp_path / terraform_schema.WHEEL_NAME


def test_duplicates_override_files_and_ephemeral_resources(tmp_path: Path, schema: Schema) -> None:
    module = write_module(tmp_path)
    # An override file holds partial blocks merged into main.tf's: no required arguments, no duplicates.
    (module / "bucket_override.tf").write_text(
        'resource "google_storage_bucket" "weights" {\n  force_destroy = true\n  locaton = "EU"\n}\n'
    )
    (module / "token.tf").write_text(
        'ephemeral "google_service_account_access_token" "t" {\n  target_service_account = "a@b"\n}\n'
        'resource "google_service_account" "run" {\n  account_id = "again"\n}\n'
    )
    assert problems(module, schema=schema) == [
        "token.tf: google_service_account.run: duplicate resource block (also in main.tf)",
        'token.tf: ephemeral.google_service_account_access_token.t: missing required argument "scopes"',
        'bucket_override.tf: google_storage_bucket.weights: unknown argument "locaton"'
        ' (did you mean "location"?)',
    ]
