locals {
  labels = merge(var.labels, { "managed-by" = "dgemma-kit" })

  weights_bucket = "${var.project_id}-${var.service_name}-weights"
  weights_folder = var.weights_version == "" ? var.weights_prefix : "${var.weights_prefix}/${var.weights_version}"
  weights_url    = "gs://${local.weights_bucket}/${local.weights_folder}"
  # The runtime reads the bucket only when the checkpoint is not in the image.
  runtime_reads_weights = var.weights_mode != "baked"
  # The engine's compile caches, kept between instances (deploy/runtime/compile_cache.py): the one
  # prefix of the bucket the runtime may write, in every weights mode.
  compile_cache_prefix = "compile-cache/"
  compile_cache_url    = "gs://${local.weights_bucket}/${trimsuffix(local.compile_cache_prefix, "/")}"
  # The supervisor's view of the checkpoint, per mode (the image defaults DGEMMA_MODEL_DIR to /weights).
  weights_env = {
    baked    = { DGEMMA_WEIGHTS_MODE = "baked" }
    download = { DGEMMA_WEIGHTS_MODE = "download", DGEMMA_WEIGHTS_URL = local.weights_url, DGEMMA_MODEL_DIR = "/tmp/weights" }
    gcs_fuse = { DGEMMA_WEIGHTS_MODE = "gcs_fuse", DGEMMA_WEIGHTS_URL = local.weights_url, DGEMMA_MODEL_DIR = "/mnt/weights" }
  }[var.weights_mode]

  api_keys_dir    = "/secrets/api-keys"
  calibration_dir = "/secrets/calibration"
  env = merge(local.weights_env, var.calibration == "" ? {} : {
    DGEMMA_CALIBRATION_FILE = "${local.calibration_dir}/calibration.json"
    }, {
    DGEMMA_ENGINE_MAX_NUM_SEQS      = tostring(var.engine_max_num_seqs)
    DGEMMA_ENGINE_CANVAS            = tostring(var.engine_canvas)
    DGEMMA_ENGINE_PROMPT_TOKENS     = tostring(var.engine_prompt_tokens)
    DGEMMA_ENGINE_TIMEOUT_S         = tostring(var.engine_timeout_s)
    DGEMMA_ENGINE_STARTUP_TIMEOUT_S = tostring(var.cold_start_budget_s)
    DGEMMA_COMPILE_CACHE_URL        = local.compile_cache_url
    # Cloud Run admits at most engine_max_num_seqs requests per instance and queues the rest itself
    # (and scales out); the gateway then never sheds an admitted request (README, Deploy).
    DGEMMA_MAX_CONCURRENT_DECISIONS = tostring(var.engine_max_num_seqs)
    DGEMMA_MAX_QUEUED_DECISIONS     = tostring(var.engine_max_num_seqs)
    DGEMMA_API_KEYS_FILE            = "${local.api_keys_dir}/keys"
    DGEMMA_GCP_PROJECT              = var.project_id
    DGEMMA_LOG_LEVEL                = var.log_level
  })

  # A startup probe every 10 s, failing after the cold-start budget (Cloud Run: at most 1800 s on a GPU).
  startup_period_s = 10

  # The alert router (alerts.tf). Each webhook source and the env var holding its sender's token.
  alerts_sender_env = {
    alertmanager       = "DGEMMA_ALERTS_ALERTMANAGER_TOKEN"
    grafana            = "DGEMMA_ALERTS_GRAFANA_TOKEN"
    "cloud-monitoring" = "DGEMMA_ALERTS_CLOUD_MONITORING_TOKEN"
  }
  alerts_policy_dir = "/secrets/alerts-policy"
  alerts_sinks_dir  = "/secrets/sinks"
  # The router's own secrets by role (key: known at plan time), and their ids: the senders' tokens, the
  # sinks' keys and, when set, the policy. The router may read these and the API keys, nothing else.
  alerts_secret_ids = merge(
    { for source in keys(local.alerts_sender_env) : "sender-${source}" => "${var.service_name}-alerts-${source}-token" },
    { for name in var.alerts_sink_secrets : "sink-${name}" => "${var.service_name}-alerts-sink-${name}" },
    var.alerts_policy == "" ? {} : { policy = "${var.service_name}-alerts-policy" },
  )
  alerts_ledger_bucket = "${var.project_id}-${var.service_name}-alerts" # the router's ledger (storage.tf)
  # The router's env that needs no resource (alerts.tf adds the GPU service's URL and the tokens).
  router_env = merge(
    var.alerts_policy == "" ? {} : { DGEMMA_ALERTS_POLICY_FILE = "${local.alerts_policy_dir}/policy.toml" },
    {
      DGEMMA_ALERTS_GATEWAY_API_KEY_FILE = "${local.api_keys_dir}/keys"
      DGEMMA_ALERTS_ID_TOKEN             = "true" # the GPU service is private: an ID token per call
      DGEMMA_ALERTS_DECISION_BUDGET_S    = tostring(var.alerts_decision_budget_s)
      DGEMMA_ALERTS_MODE                 = var.alerts_mode
      # Shared by every instance and revision: one page per alert episode across them.
      DGEMMA_ALERTS_LEDGER_URL = "gs://${local.alerts_ledger_bucket}/ledger"
      # Never in the cloud: a source without a token answers 401 (the service itself is public).
      DGEMMA_ALERTS_ALLOW_OPEN_SENDERS = "false"
      DGEMMA_GCP_PROJECT               = var.project_id
      DGEMMA_LOG_LEVEL                 = var.log_level
      # A second, metrics-only listener for the collector beside it (monitoring.tf): the instance's
      # containers reach it; Cloud Run sends outside requests to port 8080 only.
      DGEMMA_ALERTS_METRICS_PORT = tostring(local.router_metrics_port)
    },
  )

  # Monitoring (monitoring.tf). Google's Managed Service for Prometheus collector runs beside each
  # service's container, scrapes its /metrics over the instance's loopback every 30 s (and once more at
  # shutdown) and writes them as prometheus.googleapis.com/* metrics. Its share of the instance: the
  # least whole vCPU (a fraction needs request concurrency 1) and 512 MiB, taken from the GPU instance's
  # cpu and memory (Cloud Run adds up the containers' limits), added to the router's.
  collector = { cpu = 1, memory_mib = 512 }
  gpu_container = {
    cpu    = tostring(tonumber(var.cpu) - local.collector.cpu)
    memory = "${tonumber(trimsuffix(var.memory, "Gi")) * 1024 - local.collector.memory_mib}Mi"
  }
  router_metrics_port = 9464
  # One collector config (RunMonitoring) per service. Its name is the `job` label, the one
  # monitoring/prometheus's rules use; the collector sets `namespace` to the Cloud Run service's name.
  metrics_collectors = {
    for key, c in {
      gateway = { job = "dgemma-gateway", port = 8080 }
      router  = { job = "dgemma-router", port = local.router_metrics_port }
      } : key => merge(c, {
        config = yamlencode({
          apiVersion = "monitoring.googleapis.com/v1beta"
          kind       = "RunMonitoring"
          metadata   = { name = c.job }
          spec = {
            endpoints    = [{ port = tostring(c.port), path = "/metrics", interval = "30s", timeout = "10s" }]
            targetLabels = { metadata = ["instance", "revision", "service"] }
          }
        })
    })
  }
  # Each service's series in Cloud Monitoring's PromQL: this deployment's, not another's in the project.
  services = { gateway = var.service_name, router = "${var.service_name}-router" }
  series   = { for key, name in local.services : key => "job=\"dgemma-${key}\",namespace=\"${name}\"" }

  # The dashboards (dashboards.yaml): two panels a row; PromQL narrowed to the deployment's series.
  dashboards = yamldecode(file("${path.module}/dashboards.yaml"))
  dashboards_json = {
    for key, d in local.dashboards : key => jsonencode({
      displayName = "${d.title}: ${local.services[key]}"
      mosaicLayout = {
        columns = 48
        tiles = [for i, p in d.panels : {
          xPos   = (i % 2) * 24
          yPos   = floor(i / 2) * 16
          width  = 24
          height = 16
          widget = {
            title = p.title
            xyChart = {
              dataSets = concat(
                [for q in try(p.promql, []) : {
                  plotType     = "LINE"
                  targetAxis   = "Y1"
                  unitOverride = p.unit
                  timeSeriesQuery = {
                    prometheusQuery = replace(q, "job=\"dgemma-${key}\"", local.series[key])
                  }
                }],
                [for c in try([p.cloud_run], []) : {
                  plotType     = "LINE"
                  targetAxis   = "Y1"
                  unitOverride = p.unit
                  timeSeriesQuery = {
                    timeSeriesFilter = {
                      filter = "metric.type=\"${c.metric}\" resource.type=\"cloud_run_revision\" resource.label.\"service_name\"=\"${local.services[key]}\""
                      aggregation = {
                        alignmentPeriod    = "60s"
                        perSeriesAligner   = c.aligner
                        crossSeriesReducer = c.reducer
                        groupByFields      = try(c.group_by, [])
                      }
                    }
                  }
                }],
              )
              yAxis = { scale = "LINEAR" }
            }
          }
        }]
      }
    })
  }

  # The SLOs (the same as monitoring/prometheus's) and their burn-rate pairs.
  slo = {
    availability = 0.995
    latency      = 0.95
    latency_s    = 0.5
    days         = 30
    burn         = [{ factor = 14.4, window_s = 3600 }, { factor = 6, window_s = 21600 }]
  }
  cloud_run_requests = "metric.type=\"run.googleapis.com/request_count\" resource.type=\"cloud_run_revision\" resource.label.\"service_name\"=\"${var.service_name}\""
  slo_runbook = {
    availability = "Requests to ${var.service_name} answer 5xx (the engine down, not ready, or no instance could start). Check the service's logs and `dgemma status`; `dgemma rollback` returns to the previous revision."
    latency      = "Decisions take over ${local.slo.latency_s} s too often: the GPU is saturated (see the dashboard's in-flight and shed panels) or a revision is slower. Raise max instances, or `dgemma rollback`."
  }

  # The kit's own alert conditions, in PromQL over the collectors' metrics: the Prometheus rules'
  # expressions, narrowed to this deployment. `deadman`: notify around the router.
  alert_policies = merge(
    var.image == "" ? {} : {
      decision_errors = {
        name     = "decisions fail with 5xx"
        severity = "CRITICAL"
        deadman  = false
        duration = "300s"
        query    = "sum(rate(dgemma_http_responses_total{${local.series.gateway},route=\"/v1/systemone\",status=~\"5..\"}[5m])) / sum(rate(dgemma_http_responses_total{${local.series.gateway},route=\"/v1/systemone\"}[5m])) > 0.05"
        runbook  = "Over 5 % of decisions answered 5xx for 5 min: the engine is down or not ready. Check the service's logs; `dgemma rollback` returns to the previous revision."
      }
      decisions_shed = {
        name     = "decisions shed with 429"
        severity = "WARNING"
        deadman  = false
        duration = "600s"
        query    = "sum(rate(dgemma_decisions_shed_total{${local.series.gateway}}[10m])) > 0"
        runbook  = "The gateway turns decisions away (admission full) for 10 min: raise max instances (`dgemma deploy --max-instances`), or send less."
      }
    },
    var.router_image == "" ? {} : {
      sink_failures = {
        name     = "pages to a sink fail"
        severity = "CRITICAL"
        deadman  = false
        duration = "0s"
        query    = "sum by (sink) (increase(dgemma_alerts_failed_total{${local.series.router}}[10m])) > 0"
        runbook  = "A sink refused or missed deliveries: people may not be paged. The sender retries; check the sink's secret and the router's logs (`jsonPayload.audit`)."
      }
      ledger_failures = {
        name     = "ledger calls fail"
        severity = "WARNING"
        deadman  = false
        duration = "0s"
        query    = "sum by (operation) (increase(dgemma_alerts_ledger_failures_total{${local.series.router}}[10m])) > 3"
        runbook  = "Calls to the router's ledger bucket fail or time out; it routes from memory meanwhile (a page may go out twice across instances)."
      }
      ledger_away = {
        name     = "router routes from memory (ledger away)"
        severity = "WARNING"
        deadman  = false
        duration = "300s"
        query    = "max(dgemma_alerts_ledger_up{${local.series.router}}) == 0"
        runbook  = "The ledger's store has not answered for 5 min: each alert may page once more per instance until it does. Check Cloud Storage's status and the router's identity's grant on its bucket."
      }
      classifications_waiting = {
        name     = "a fallback page waits for its classification"
        severity = "WARNING"
        deadman  = false
        duration = "0s"
        query    = "max(dgemma_alerts_pending_oldest_seconds{${local.series.router}}) > ${var.alerts_pending_alert_minutes * 60}"
        runbook  = "A page went out unclassified over ${var.alerts_pending_alert_minutes} min ago and the decision service has not classified it since: it is still away. See the decision service's dashboard."
      }
    },
    # The dead-man's switch, only where a Watchdog is sent to the router (deadman_switch).
    var.router_image == "" || !var.deadman_switch ? {} : {
      heartbeat = {
        name     = "no Watchdog heartbeat reaches the alert router"
        severity = "CRITICAL"
        deadman  = true
        duration = "300s"
        query    = "(time() - max(dgemma_alerts_heartbeat_timestamp_seconds{${local.series.router}}) > 600) or absent_over_time(dgemma_alerts_heartbeat_timestamp_seconds{${local.series.router}}[10m])"
        runbook  = "The dead-man's switch: Alertmanager's always-firing Watchdog has not reached the router for over 10 min, or the router is gone. Alerts may reach no one: check Alertmanager, its route to the router (docs/alert-routing.md) and the router; watch the alerting by hand until then."
      }
    },
  )
}

resource "google_project_service" "apis" {
  for_each = toset(concat([
    "run.googleapis.com",
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "storage.googleapis.com",
    "secretmanager.googleapis.com",
    "iam.googleapis.com",
    "monitoring.googleapis.com", # the collectors write here; dashboards, SLOs, alert policies
    ], var.billing_account == "" ? [] : [
    # The budget (budget.tf) and the project number it is scoped by.
    "billingbudgets.googleapis.com",
    "cloudresourcemanager.googleapis.com",
  ]))

  project = var.project_id
  service = each.value
  # Turning an API off on destroy would break anything else in the project that uses it.
  disable_on_destroy = false
}
