locals {
  labels = merge(var.labels, { "managed-by" = "dgemma-kit" })

  weights_bucket = "${var.project_id}-${var.service_name}-weights"
  weights_url    = "gs://${local.weights_bucket}/${var.weights_prefix}"
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
