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
  # One definition of its container for both services: service.tf and alerts.tf each write
  # `containers { name = "collector" }` and its volume from these values alone, and differ only in
  # the container it waits for and the config it mounts (local.metrics_collectors).
  collector = {
    cpu        = 1
    memory_mib = 512
    image      = var.metrics_collector_image
    volume     = "metrics-config"
    config_dir = "/etc/rungmp" # the collector reads config.yaml there
    config     = "config.yaml"
    # Its own health endpoint, not a startup probe: nothing waits for the collector.
    liveness = { path = "/liveness", port = 13133, period_s = 30, timeout_s = 30, failures = 3 }
  }
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

  # The dashboards (monitoring/dashboards.yaml): two panels a row; PromQL narrowed to the deployment's series.
  dashboards = yamldecode(file("${path.module}/../monitoring/dashboards.yaml"))
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

  # The kit's alerts and SLOs (monitoring/alerts.yaml): the one source of these policies and of the
  # Prometheus rules (monitoring/prometheus/dgemma.rules.yml, which `make docs` renders from it).
  monitoring = yamldecode(file("${path.module}/../monitoring/alerts.yaml"))
  # The SLOs and their burn-rate pairs, each over its long window (monitoring.tf).
  slo = {
    availability = local.monitoring.slos.availability.goal
    latency      = local.monitoring.slos.latency.goal
    latency_s    = local.monitoring.slos.latency.threshold_s
    days         = local.monitoring.slos.days
    burn         = [for b in local.monitoring.slos.burn : { factor = b.factor, window_s = b.long_s }]
  }
  cloud_run_requests = "metric.type=\"run.googleapis.com/request_count\" resource.type=\"cloud_run_revision\" resource.label.\"service_name\"=\"${var.service_name}\""

  # Every alert by its name, and what fills its slots here: each service's series (local.series) and
  # each threshold, from its variable where it has one (alerts.yaml's value is the default of both).
  alerts = merge(values(local.monitoring.groups)...)
  alert_params = {
    pending_s = var.alerts_pending_alert_minutes * 60
  }
  alert_slots = {
    for name, a in local.alerts : name => merge(
      local.series,
      { for k, v in try(a.params, {}) : k => tostring(try(local.alert_params[k], v)) },
    )
  }
  # `for` in seconds (alerts.yaml writes 5m, 10m, 2m, 30s, 1h).
  alert_for_s = {
    for name, a in local.alerts : name => [
      for m in [regex("^(\\d+)([smh])$", try(a["for"], "0s"))] : tonumber(m[0]) * { s = 1, m = 60, h = 3600 }[m[1]]
    ][0]
  }
  # The Terraform variables that turn an alert's policy off.
  alert_switches = { deadman_switch = var.deadman_switch }
  deployed       = { gateway = var.image != "", router = var.router_image != "" }
  # The alerts Cloud Monitoring runs: those not Prometheus's alone, once their service is deployed and
  # their switch (if any) is on.
  cloud_alerts = [
    for name, a in local.alerts : name
    if try(a.only, "") != "prometheus" && try(local.deployed[a.service], false) && try(local.alert_switches[a.switch], true)
  ]
  # The kit's own conditions, in PromQL over the collectors' metrics (google_monitoring_alert_policy.kit),
  # by their keys. `deadman`: notify around the router.
  alert_policies = {
    for name, a in local.alerts : a.key => {
      alert    = name
      name     = a.title
      severity = upper(a.severity)
      deadman  = try(a.around_router, false)
      duration = "${local.alert_for_s[name]}s"
      query    = templatestring(a.expr, local.alert_slots[name])
      runbook  = templatestring(a.runbook, local.alert_slots[name])
    } if contains(local.cloud_alerts, name) && !can(a.slo)
  }
  # The SLOs' burn-rate policies (google_monitoring_alert_policy.slo_burn), by the SLO.
  slo_alerts = {
    for name, a in local.alerts : a.slo => {
      alert    = name
      name     = a.title
      severity = upper(a.severity)
      runbook  = templatestring(a.runbook, local.alert_slots[name])
    } if contains(local.cloud_alerts, name) && can(a.slo)
  }
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
