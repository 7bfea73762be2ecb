# The alert router (`dgemma alerts serve`, the Dockerfile's `router` target): monitoring webhooks in,
# one Jev question per alert to the GPU service, pages out through the policy's sinks. A CPU service
# of its own, created once `router_image` is set. Its identity and grants are in iam.tf.

# The router's secrets (local.alerts_secret_ids). The senders' tokens and the sinks' keys get no
# version here, so no value enters the state: `dgemma deploy` adds a random token to each sender
# secret that has none (Cloud Run refuses a revision whose secret has no version); the sinks' values
# are added by the operator (`gcloud secrets versions add`).
resource "google_secret_manager_secret" "alerts" {
  for_each = local.alerts_secret_ids

  project   = var.project_id
  secret_id = each.value
  labels    = local.labels

  replication {
    user_managed {
      replicas {
        location = var.region
      }
    }
  }

  depends_on = [google_project_service.apis]
}

# The policy is configuration, not a secret (it names files, never holds keys): its content is in the
# state like any other setting. Secret Manager is how Cloud Run mounts a file. The revision pins this
# version, so a changed policy makes a new revision: the router reads its policy once, at start.
resource "google_secret_manager_secret_version" "alerts_policy" {
  count = var.alerts_policy == "" ? 0 : 1

  secret      = google_secret_manager_secret.alerts["policy"].id
  secret_data = var.alerts_policy

  # The running revision keeps reading its version until the new revision replaces it.
  lifecycle {
    create_before_destroy = true
  }
}

resource "google_cloud_run_v2_service" "router" {
  count = var.router_image == "" ? 0 : 1

  project             = var.project_id
  location            = var.region
  name                = "${var.service_name}-router"
  description         = "Alert router: monitoring webhooks in, classified pages out (asks ${var.service_name})."
  labels              = local.labels
  ingress             = "INGRESS_TRAFFIC_ALL" # public: senders cannot mint Google ID tokens (iam.tf)
  deletion_protection = var.deletion_protection

  template {
    labels                = local.labels
    service_account       = google_service_account.router.email
    execution_environment = "EXECUTION_ENVIRONMENT_GEN2"
    # A webhook is answered within the decision budget plus the sinks' calls; this only bounds a stuck one.
    timeout                          = "60s"
    max_instance_request_concurrency = 80

    # The ledger is shared (Cloud Storage, storage.tf): instances and revisions may overlap, as Cloud
    # Run's rollouts and its brief excursions past the maximum make them, and still page once. One
    # instance is kept up by default (router_min_instance_count): no cold start in the sender's
    # deadline, and a fallback page's late classification runs at once instead of at the next
    # delivery.
    scaling {
      min_instance_count = var.router_min_instance_count
      max_instance_count = var.router_max_instance_count
    }

    containers {
      name  = "router"
      image = var.router_image

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.router_cpu
          memory = var.router_memory
        }
        # Always-allocated CPU: after answering a webhook the router keeps working (it pages at once
        # when the GPU service is cold, then wakes it and updates the page for up to 30 minutes);
        # with CPU throttled between requests that background work would stall.
        cpu_idle          = false
        startup_cpu_boost = true
      }

      # The GPU service's URL (all its traffic goes to the serving revision, never to a candidate).
      env {
        name  = "DGEMMA_ALERTS_GATEWAY_URL"
        value = google_cloud_run_v2_service.gpu[0].uri
      }

      dynamic "env" {
        for_each = local.router_env
        content {
          name  = env.key
          value = env.value
        }
      }

      # The senders' tokens, read by Cloud Run when an instance starts.
      dynamic "env" {
        for_each = local.alerts_sender_env
        content {
          name = env.value
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.alerts["sender-${env.key}"].secret_id
              version = "latest"
            }
          }
        }
      }

      # The gateway's API keys (the router sends the first).
      volume_mounts {
        name       = "api-keys"
        mount_path = local.api_keys_dir
      }

      dynamic "volume_mounts" {
        for_each = var.alerts_policy == "" ? [] : [1]
        content {
          name       = "alerts-policy"
          mount_path = local.alerts_policy_dir
        }
      }

      # One directory per sink secret: /secrets/sinks/NAME/value.
      dynamic "volume_mounts" {
        for_each = toset(var.alerts_sink_secrets)
        content {
          name       = "sink-${volume_mounts.value}"
          mount_path = "${local.alerts_sinks_dir}/${volume_mounts.value}"
        }
      }

      # /readyz needs nothing but the process (the router pages without the GPU service).
      startup_probe {
        initial_delay_seconds = 0
        period_seconds        = 2
        timeout_seconds       = 2
        failure_threshold     = 30
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
    # once the router container's startup probe has passed (depends_on, as Cloud Run's guide for it
    # does), so the router container's start and its probe are as before; it scrapes /metrics over the
    # instance's loopback.
    containers {
      name       = "collector"
      image      = local.collector.image
      depends_on = ["router"]

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
        secret = google_secret_manager_secret.metrics["router"].secret_id
        items {
          version = google_secret_manager_secret_version.metrics["router"].version
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
      for_each = var.alerts_policy == "" ? [] : [1]
      content {
        name = "alerts-policy"
        secret {
          secret = google_secret_manager_secret.alerts["policy"].secret_id
          items {
            version = google_secret_manager_secret_version.alerts_policy[0].version
            path    = "policy.toml" # DGEMMA_ALERTS_POLICY_FILE (main.tf)
          }
        }
      }
    }

    # Cloud Run mounts one secret per volume.
    dynamic "volumes" {
      for_each = toset(var.alerts_sink_secrets)
      content {
        name = "sink-${volumes.value}"
        secret {
          secret = google_secret_manager_secret.alerts["sink-${volumes.value}"].secret_id
          items {
            version = "latest"
            path    = "value"
          }
        }
      }
    }
  }

  depends_on = [
    google_project_service.apis,
    google_secret_manager_secret_iam_member.router_reads_secrets,
    google_storage_bucket_iam_member.router_ledger, # its first delivery writes the ledger
    google_secret_manager_secret_iam_member.router_reads_metrics_config,
    google_project_iam_member.router_writes_metrics,
  ]
}
