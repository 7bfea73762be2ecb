# The service's identity: it may read its API-key secret, its calibration file when set and, when the
# checkpoint is not baked into the image, the weights bucket; it may write the bucket's compile-cache/
# prefix only. Nothing project-wide.
resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = "${var.service_name}-run"
  display_name = "Cloud Run service ${var.service_name} (decisions on an L4)"
}

resource "google_secret_manager_secret_iam_member" "runtime_reads_api_keys" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.api_keys.secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_secret_manager_secret_iam_member" "runtime_reads_calibration" {
  count = var.calibration == "" ? 0 : 1

  project   = var.project_id
  secret_id = google_secret_manager_secret.calibration[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_storage_bucket_iam_member" "runtime_reads_weights" {
  count = local.runtime_reads_weights ? 1 : 0

  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.runtime.email}"
}

# The compile caches (deploy/runtime/compile_cache.py): the runtime may create objects under the
# bucket's compile-cache/ prefix only, and neither replace nor delete any (its saves are create-only),
# and read them there when it does not read the whole bucket (baked weights).
resource "google_storage_bucket_iam_member" "runtime_writes_compile_cache" {
  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectCreator"
  member = "serviceAccount:${google_service_account.runtime.email}"

  condition {
    title       = "compile-cache-only"
    description = "Create objects under compile-cache/ only"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.weights.name}/objects/${local.compile_cache_prefix}\")"
  }
}

resource "google_storage_bucket_iam_member" "runtime_reads_compile_cache" {
  count = local.runtime_reads_weights ? 0 : 1

  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.runtime.email}"

  condition {
    title       = "compile-cache-only"
    description = "Read objects under compile-cache/ only"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.weights.name}/objects/${local.compile_cache_prefix}\")"
  }
}

# The alert router's identity: it may read its own secrets (local.alerts_secret_ids) and the gateway's
# API keys, each granted on the secret itself, and invoke the GPU service (below). Nothing project-wide.
resource "google_service_account" "router" {
  project      = var.project_id
  account_id   = "${var.service_name}-router"
  display_name = "Cloud Run service ${var.service_name}-router (alert router)"
}

resource "google_secret_manager_secret_iam_member" "router_reads_secrets" {
  for_each = merge(
    { "api-keys" = google_secret_manager_secret.api_keys.secret_id },
    { for key, secret in google_secret_manager_secret.alerts : key => secret.secret_id },
  )

  project   = var.project_id
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.router.email}"
}

# The router's ledger: objects of that bucket only (create, read, list, delete; no bucket settings).
resource "google_storage_bucket_iam_member" "router_ledger" {
  count = var.router_image == "" ? 0 : 1

  bucket = google_storage_bucket.alerts_ledger[0].name
  role   = "roles/storage.objectUser"
  member = "serviceAccount:${google_service_account.router.email}"
}

# The image builder: reads the build source and (baked mode) the weights, pushes to the repository,
# and writes its build logs.
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "${var.service_name}-build"
  display_name = "Cloud Build of ${var.service_name} images"
}

resource "google_storage_bucket_iam_member" "build_reads_weights" {
  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.build.email}"
}

resource "google_storage_bucket_iam_member" "build_reads_source" {
  bucket = google_storage_bucket.build_source.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.build.email}"
}

resource "google_artifact_registry_repository_iam_member" "build_pushes_images" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = "serviceAccount:${google_service_account.build.email}"
}

# Cloud Build with a service account of one's own must log somewhere; Cloud Logging needs this
# project-level role (the only one in the module, and on the builder, not the service).
resource "google_project_iam_member" "build_writes_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = "serviceAccount:${google_service_account.build.email}"
}

# Who may call the private service: named principals only (never allUsers).
resource "google_cloud_run_v2_service_iam_member" "invokers" {
  for_each = var.image == "" ? toset([]) : toset(var.invokers)

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.gpu[0].name
  role     = "roles/run.invoker"
  member   = each.value
}

# The router asks the GPU service with an ID token of its own identity; the GPU service stays private.
resource "google_cloud_run_v2_service_iam_member" "router_invokes_gpu" {
  count = var.image == "" || var.router_image == "" ? 0 : 1

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.gpu[0].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.router.email}"
}

# The router is public on purpose: Alertmanager, Grafana and Cloud Monitoring cannot mint Google ID
# tokens, so Cloud Run's IAM cannot check them. The router checks them itself: a token per source,
# compared in constant time; a request without it, or to a source without one configured, gets 401.
resource "google_cloud_run_v2_service_iam_member" "router_public" {
  #checkov:skip=CKV_DGEMMA_1:The alert router must take webhooks from senders that cannot mint Google ID tokens; it authenticates each sender by its own token and refuses sources without one. The GPU service stays private.
  count = var.router_image == "" ? 0 : 1

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.router[0].name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

# Monitoring (monitoring.tf). Each service's collector writes its metrics with the service's identity:
# roles/monitoring.metricWriter is the least role that writes time series, and it exists only
# project-wide. Each identity reads its own collector's config, granted on that secret.
resource "google_project_iam_member" "runtime_writes_metrics" {
  project = var.project_id
  role    = "roles/monitoring.metricWriter"
  member  = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_project_iam_member" "router_writes_metrics" {
  project = var.project_id
  role    = "roles/monitoring.metricWriter"
  member  = "serviceAccount:${google_service_account.router.email}"
}

resource "google_secret_manager_secret_iam_member" "runtime_reads_metrics_config" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.metrics["gateway"].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_secret_manager_secret_iam_member" "router_reads_metrics_config" {
  project   = var.project_id
  secret_id = google_secret_manager_secret.metrics["router"].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.router.email}"
}

# The GPU service's uptime check (off by default) calls it with an ID token of Cloud Monitoring's
# service agent, which must be allowed to invoke it.
data "google_project" "monitoring" {
  count      = var.image != "" && var.gpu_uptime_check ? 1 : 0
  project_id = var.project_id
}

resource "google_cloud_run_v2_service_iam_member" "uptime_check_invokes_gpu" {
  count = var.image != "" && var.gpu_uptime_check ? 1 : 0

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.gpu[0].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:service-${data.google_project.monitoring[0].number}@gcp-sa-monitoring-notification.iam.gserviceaccount.com"
}
