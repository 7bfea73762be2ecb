resource "google_artifact_registry_repository" "images" {
  #checkov:skip=CKV_GCP_84:Images hold no secret and are rebuilt from git by digest; Google-managed encryption at rest suffices, a customer key would add key management without protecting anything more.
  project       = var.project_id
  location      = var.region
  repository_id = var.service_name
  format        = "DOCKER"
  description   = "Images of the ${var.service_name} decision service (vLLM + gateway), tagged by git SHA."
  labels        = local.labels

  cleanup_policy_dry_run = false

  cleanup_policies {
    id     = "keep-most-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = var.image_retention_count
    }
  }

  cleanup_policies {
    id     = "delete-the-rest"
    action = "DELETE"
    condition {
      tag_state  = "ANY"
      older_than = "86400s"
    }
  }

  depends_on = [google_project_service.apis]
}
