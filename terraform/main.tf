locals {
  labels = merge(var.labels, { "managed-by" = "dgemma-kit" })

  weights_bucket = "${var.project_id}-${var.service_name}-weights"
  weights_url    = "gs://${local.weights_bucket}/${var.weights_prefix}"
  # The runtime reads the bucket only when the checkpoint is not in the image.
  runtime_reads_weights = var.weights_mode != "baked"
  # The supervisor's view of the checkpoint, per mode (the image defaults DGEMMA_MODEL_DIR to /weights).
  weights_env = {
    baked    = { DGEMMA_WEIGHTS_MODE = "baked" }
    download = { DGEMMA_WEIGHTS_MODE = "download", DGEMMA_WEIGHTS_URL = local.weights_url, DGEMMA_MODEL_DIR = "/tmp/weights" }
    gcs_fuse = { DGEMMA_WEIGHTS_MODE = "gcs_fuse", DGEMMA_WEIGHTS_URL = local.weights_url, DGEMMA_MODEL_DIR = "/mnt/weights" }
  }[var.weights_mode]

  api_keys_dir = "/secrets/api-keys"
  env = merge(local.weights_env, {
    DGEMMA_ENGINE_MAX_NUM_SEQS      = tostring(var.engine_max_num_seqs)
    DGEMMA_ENGINE_CANVAS            = tostring(var.engine_canvas)
    DGEMMA_ENGINE_PROMPT_TOKENS     = tostring(var.engine_prompt_tokens)
    DGEMMA_ENGINE_TIMEOUT_S         = tostring(var.engine_timeout_s)
    DGEMMA_ENGINE_STARTUP_TIMEOUT_S = tostring(var.cold_start_budget_s)
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
}

resource "google_project_service" "apis" {
  for_each = toset([
    "run.googleapis.com",
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "storage.googleapis.com",
    "secretmanager.googleapis.com",
    "iam.googleapis.com",
  ])

  project = var.project_id
  service = each.value
  # Turning an API off on destroy would break anything else in the project that uses it.
  disable_on_destroy = false
}
