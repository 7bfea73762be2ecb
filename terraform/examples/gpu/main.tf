# The decision service on one L4 in europe-west4, as `dgemma deploy` lays it out: first apply with
# `image` empty (the infrastructure), then with the built image's digest and the revision names.
# Copy terraform.example.tfvars to terraform.tfvars and fill it in.

variable "project_id" {
  type        = string
  description = "Google Cloud project."
}

variable "image" {
  type        = string
  description = "Image by digest; empty on the first apply."
  default     = ""
}

variable "router_image" {
  type        = string
  description = "Alert router image by digest (the Dockerfile's `router` target); empty until it is built (it needs image)."
  default     = ""
}

variable "operator" {
  type        = string
  description = "Who runs the deploy and its load-test gate, e.g. user:you@example.com."
}

module "dgemma" {
  source = "../.."

  project_id   = var.project_id
  region       = "europe-west4"
  service_name = "dgemma"
  image        = var.image

  weights_mode       = "baked"
  weights_prefix     = "dgemma-w4a16"
  max_instance_count = 1
  l4_gpu_quota       = 3

  engine_max_num_seqs = 32
  cold_start_budget_s = 900

  invokers = [var.operator]
  labels   = { team = "sre" }

  # Calibrated probabilities (README, Calibration): the file `dgemma calibrate` wrote for this model.
  # calibration = file("${path.module}/calibration.json")

  # The alert router: pages to PagerDuty, tickets to Slack. Add each sink's value once, out of band:
  #   printf %s KEY | gcloud secrets versions add dgemma-alerts-sink-pagerduty --data-file=-
  router_image             = var.router_image
  alerts_policy            = file("${path.module}/alerts-policy.toml")
  alerts_sink_secrets      = ["pagerduty", "slack"]
  alerts_decision_budget_s = 5
}

output "service_url" {
  description = "URL of the service."
  value       = module.dgemma.service_url
}

output "weights_url" {
  description = "Where `dgemma weights upload` puts the checkpoint."
  value       = module.dgemma.weights_url
}

output "alert_webhooks" {
  description = "Where Alertmanager, Grafana and Cloud Monitoring send their webhooks."
  value       = module.dgemma.alert_webhooks
}
