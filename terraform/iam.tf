# The service's identity: it may read its API-key secret and, when the checkpoint is not baked into
# the image, the weights bucket. Nothing project-wide.
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

resource "google_storage_bucket_iam_member" "runtime_reads_weights" {
  count = local.runtime_reads_weights ? 1 : 0

  bucket = google_storage_bucket.weights.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:${google_service_account.runtime.email}"
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
