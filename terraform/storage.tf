resource "google_storage_bucket" "weights" {
  #checkov:skip=CKV_GCP_62:The checkpoint is immutable and verified by its manifest; reads are audited by Data Access logs, a second logging bucket adds nothing.
  #checkov:skip=CKV_GCP_78:Versioning would keep every replaced 15 GB checkpoint; a checkpoint is identified by its prefix and manifest instead.
  project  = var.project_id
  name     = local.weights_bucket
  location = upper(var.region) # the same region as the service: no cross-region egress at start
  labels   = local.labels

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # Compile caches are keyed by what they were compiled for, so old keys are dead weight, and the
  # archives of instances that lost the race to save a key are orphans: both go after this age (a live
  # key is then compiled and saved once more by the next cold instance).
  lifecycle_rule {
    condition {
      age            = var.compile_cache_days
      matches_prefix = [local.compile_cache_prefix]
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}

# Cloud Build reads the uploaded source from here (the build service account may read nothing else).
resource "google_storage_bucket" "build_source" {
  #checkov:skip=CKV_GCP_62:Holds only build-source tarballs, deleted after a week.
  #checkov:skip=CKV_GCP_78:Source tarballs are reproducible from git; versions add nothing.
  project  = var.project_id
  name     = "${var.project_id}-${var.service_name}-build"
  location = upper(var.region)
  labels   = local.labels

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true

  lifecycle_rule {
    condition {
      age = 7
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}

# The alert router's ledger (app/alerts/ledger.py): one small create-only object per fact of an alert
# episode (the decision, each sink's delivery, claims), shared by every router instance and revision,
# so that a page goes out once across instances, restarts and deploys. Only the router's identity may
# write it (iam.tf). Facts are never read after their alert resolves: they expire after a month.
resource "google_storage_bucket" "alerts_ledger" {
  #checkov:skip=CKV_GCP_62:A few KB of routing facts, written and read by one service account; Data Access logs audit it.
  #checkov:skip=CKV_GCP_78:Objects are created once and never overwritten (claims aside, which are ephemeral); versions add nothing.
  count = var.router_image == "" ? 0 : 1

  project  = var.project_id
  name     = local.alerts_ledger_bucket
  location = upper(var.region)
  labels   = local.labels

  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = true # facts of past alerts only: nothing to keep when the router goes

  lifecycle_rule {
    condition {
      age = var.alerts_ledger_days
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [google_project_service.apis]
}
