# The GPU service: one L4 per instance, scale to zero, the supervisor (`dgemma run`) as entrypoint.
# Created once an image exists (`image` set): the first deploy phase builds only the infrastructure.
resource "google_cloud_run_v2_service" "gpu" {
  count = var.image == "" ? 0 : 1

  project             = var.project_id
  location            = var.region
  name                = var.service_name
  description         = "Jev-compatible structured decisions on DiffusionGemma (vLLM) on one NVIDIA L4."
  labels              = local.labels
  ingress             = "INGRESS_TRAFFIC_ALL" # private by IAM: only var.invokers may call it
  deletion_protection = var.deletion_protection

  template {
    revision                         = var.revision_suffix == "" ? null : "${var.service_name}-${var.revision_suffix}"
    labels                           = local.labels
    service_account                  = google_service_account.runtime.email
    execution_environment            = "EXECUTION_ENVIRONMENT_GEN2"
    timeout                          = "${var.cold_start_budget_s + var.engine_timeout_s}s"
    max_instance_request_concurrency = var.engine_max_num_seqs
    gpu_zonal_redundancy_disabled    = var.gpu_zonal_redundancy_disabled

    node_selector {
      accelerator = "nvidia-l4"
    }

    scaling {
      min_instance_count = 0
      max_instance_count = var.max_instance_count
    }

    containers {
      name  = "dgemma"
      image = var.image

      ports {
        container_port = 8080
      }

      resources {
        # The instance's cpu and memory, less the collector's share (main.tf).
        limits = {
          cpu              = local.gpu_container.cpu
          memory           = local.gpu_container.memory
          "nvidia.com/gpu" = "1"
        }
        cpu_idle          = false # GPU services need always-allocated CPU
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }

      volume_mounts {
        name       = "api-keys"
        mount_path = local.api_keys_dir
      }

      dynamic "volume_mounts" {
        for_each = var.weights_mode == "gcs_fuse" ? [1] : []
        content {
          name       = "weights"
          mount_path = "/mnt/weights"
        }
      }

      dynamic "volume_mounts" {
        for_each = var.calibration == "" ? [] : [1]
        content {
          name       = "calibration"
          mount_path = local.calibration_dir
        }
      }

      # /readyz answers 200 once vLLM does; the window is the cold-start budget.
      startup_probe {
        initial_delay_seconds = 0
        period_seconds        = local.startup_period_s
        timeout_seconds       = 5
        failure_threshold     = ceil(var.cold_start_budget_s / local.startup_period_s)
        http_get {
          path = "/readyz"
          port = 8080
        }
      }

      liveness_probe {
        period_seconds    = 30
        timeout_seconds   = 5
        failure_threshold = 3
        http_get {
          path = "/healthz"
          port = 8080
        }
      }
    }

    # Google's Prometheus collector (main.tf, local.collector: the same in both services). It starts
    # once the dgemma container's startup probe has passed (depends_on, as Cloud Run's guide for it
    # does), so the dgemma container's start and its probe are as before; it scrapes /metrics over the
    # instance's loopback.
    containers {
      name       = "collector"
      image      = local.collector.image
      depends_on = ["dgemma"]

      resources {
        limits = {
          cpu    = tostring(local.collector.cpu)
          memory = "${local.collector.memory_mib}Mi"
        }
        cpu_idle = false # scrapes between requests (Cloud Run's advice for this collector)
      }

      volume_mounts {
        name       = local.collector.volume
        mount_path = local.collector.config_dir
      }

      liveness_probe {
        period_seconds    = local.collector.liveness.period_s
        timeout_seconds   = local.collector.liveness.timeout_s
        failure_threshold = local.collector.liveness.failures
        http_get {
          path = local.collector.liveness.path
          port = local.collector.liveness.port
        }
      }
    }

    volumes {
      name = local.collector.volume
      secret {
        secret = google_secret_manager_secret.metrics["gateway"].secret_id
        items {
          version = google_secret_manager_secret_version.metrics["gateway"].version
          path    = local.collector.config
        }
      }
    }

    volumes {
      name = "api-keys"
      secret {
        secret = google_secret_manager_secret.api_keys.secret_id
        items {
          version = "latest"
          path    = "keys"
        }
      }
    }

    dynamic "volumes" {
      for_each = var.calibration == "" ? [] : [1]
      content {
        name = "calibration"
        secret {
          secret = google_secret_manager_secret.calibration[0].secret_id
          items {
            version = google_secret_manager_secret_version.calibration[0].version
            path    = "calibration.json"
          }
        }
      }
    }

    dynamic "volumes" {
      for_each = var.weights_mode == "gcs_fuse" ? [1] : []
      content {
        name = "weights"
        gcs {
          bucket        = google_storage_bucket.weights.name
          read_only     = true
          mount_options = concat(var.gcs_fuse_mount_options, ["only-dir=${local.weights_folder}"])
        }
      }
    }
  }

  # Traffic is Terraform's: `dgemma deploy` sets serving_revision and candidate_revision per phase.
  traffic {
    type     = var.serving_revision == "" ? "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST" : "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
    revision = var.serving_revision == "" ? null : var.serving_revision
    percent  = 100
  }

  dynamic "traffic" {
    for_each = var.candidate_revision == "" ? [] : [var.candidate_revision]
    content {
      type     = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
      revision = traffic.value
      percent  = 0
      tag      = "candidate"
    }
  }

  depends_on = [
    google_project_service.apis,
    google_secret_manager_secret_iam_member.runtime_reads_api_keys,
    google_secret_manager_secret_iam_member.runtime_reads_calibration,
    google_storage_bucket_iam_member.runtime_reads_weights,
    google_secret_manager_secret_iam_member.runtime_reads_metrics_config,
    google_project_iam_member.runtime_writes_metrics,
  ]
}
