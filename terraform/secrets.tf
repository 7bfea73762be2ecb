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

# The gateway's calibration file (`dgemma calibrate`), when set. It is configuration, not a secret
# (temperatures, the model's name, the data's hash): its content is in the state like any other
# setting. Secret Manager is how Cloud Run mounts a file. The revision pins this version, so a new file
# makes a new revision: the gateway reads it once, at start, and refuses one of another model or policy.
resource "google_secret_manager_secret" "calibration" {
  count = var.calibration == "" ? 0 : 1

  project   = var.project_id
  secret_id = "${var.service_name}-calibration"
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

resource "google_secret_manager_secret_version" "calibration" {
  count = var.calibration == "" ? 0 : 1

  secret      = google_secret_manager_secret.calibration[0].id
  secret_data = var.calibration

  # The running revision keeps reading its version until the new revision replaces it.
  lifecycle {
    create_before_destroy = true
  }
}
