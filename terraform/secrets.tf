# The gateway's API keys. Terraform creates the secret only: its versions are added out of band
# (`dgemma deploy` on the first deploy, `dgemma keys add`), so no key value ever enters the state.
resource "google_secret_manager_secret" "api_keys" {
  project   = var.project_id
  secret_id = "${var.service_name}-api-keys"
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
