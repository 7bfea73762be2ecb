output "service_url" {
  description = "URL of the service (empty until an image is deployed)."
  value       = var.image == "" ? "" : google_cloud_run_v2_service.gpu[0].uri
}

output "candidate_url" {
  description = "URL of the revision tagged `candidate` (empty without a candidate)."
  value = var.image == "" || var.candidate_revision == "" ? "" : one([
    for t in google_cloud_run_v2_service.gpu[0].traffic_statuses : t.uri if t.tag == "candidate"
  ])
}

output "latest_ready_revision" {
  description = "The newest revision that became ready."
  value       = var.image == "" ? "" : google_cloud_run_v2_service.gpu[0].latest_ready_revision
}

output "weights_bucket" {
  description = "Bucket of the checkpoint."
  value       = google_storage_bucket.weights.name
}

output "weights_url" {
  description = "gs:// URL of the checkpoint folder (its manifest.json inside)."
  value       = local.weights_url
}

output "build_source_bucket" {
  description = "Bucket Cloud Build reads the uploaded source from."
  value       = google_storage_bucket.build_source.name
}

output "image_repository" {
  description = "Docker repository of the images (REGION-docker.pkg.dev/PROJECT/REPO)."
  value       = "${google_artifact_registry_repository.images.location}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}

output "runtime_service_account" {
  description = "Email of the service's runtime identity."
  value       = google_service_account.runtime.email
}

output "build_service_account" {
  description = "Email of the Cloud Build identity (`gcloud builds submit --service-account`)."
  value       = google_service_account.build.email
}

output "api_keys_secret" {
  description = "Secret Manager secret whose latest version holds the API keys, one per line."
  value       = google_secret_manager_secret.api_keys.id
}

output "router_url" {
  description = "URL of the alert router (empty until a router image is deployed)."
  value       = var.router_image == "" ? "" : google_cloud_run_v2_service.router[0].uri
}

output "router_service_account" {
  description = "Email of the alert router's identity (the GPU service's invoker)."
  value       = google_service_account.router.email
}

output "alert_webhooks" {
  description = "Webhook URL per source (alertmanager, grafana, cloud-monitoring); empty without a router. Alertmanager and Grafana send their token as `Authorization: Bearer`; Cloud Monitoring's URL ends in `?auth_token=`, to which its token is appended."
  value = var.router_image == "" ? {} : {
    for source in keys(local.alerts_sender_env) :
    source => "${google_cloud_run_v2_service.router[0].uri}/v1/alerts/${source}${source == "cloud-monitoring" ? "?auth_token=" : ""}"
  }
}

output "alerts_sender_secrets" {
  description = "Secret Manager secret per source whose latest version is that sender's token (`gcloud secrets versions access latest --secret=NAME`)."
  value       = { for source in keys(local.alerts_sender_env) : source => google_secret_manager_secret.alerts["sender-${source}"].id }
}

output "alerts_sink_secrets" {
  description = "Secret Manager secret per sink secret name; add each value out of band (`gcloud secrets versions add NAME --data-file=-`)."
  value       = { for name in var.alerts_sink_secrets : name => google_secret_manager_secret.alerts["sink-${name}"].id }
}
