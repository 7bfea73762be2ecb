# What an operator sees of the kit in Cloud Monitoring: the collectors' configs (their containers are
# in service.tf and alerts.tf), a dashboard per service, alert policies, uptime checks and the
# decision service's SLOs. Queries and thresholds are explained in terraform/README.md (Monitoring).
# The alerts and SLOs come from monitoring/alerts.yaml (main.tf), which is also the source of the
# Prometheus rules (monitoring/prometheus/dgemma.rules.yml): the same alerts in both.

# The collectors' configs (RunMonitoring, main.tf): Cloud Run mounts a file from Secret Manager only.
# Configuration, not secrets: the values are in the state like any other setting.
resource "google_secret_manager_secret" "metrics" {
  for_each = local.metrics_collectors

  project   = var.project_id
  secret_id = "${var.service_name}-metrics-${each.key}"
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

resource "google_secret_manager_secret_version" "metrics" {
  for_each = local.metrics_collectors

  secret      = google_secret_manager_secret.metrics[each.key].id
  secret_data = each.value.config

  lifecycle {
    create_before_destroy = true # the running revision reads its pinned version until replaced
  }
}

# A dashboard per service, from monitoring/dashboards.yaml (main.tf builds the JSON).
resource "google_monitoring_dashboard" "services" {
  for_each = local.dashboards_json

  project        = var.project_id
  dashboard_json = each.value

  depends_on = [google_project_service.apis]
}

# The decision service's SLOs: availability as Cloud Run's own frontend counts it (a request that
# found no instance is counted too), latency from the gateway's histogram of successful decisions.
resource "google_monitoring_custom_service" "decisions" {
  project      = var.project_id
  service_id   = "${var.service_name}-decisions"
  display_name = "${var.service_name}: structured decisions"
  user_labels  = local.labels

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_slo" "availability" {
  project             = var.project_id
  service             = google_monitoring_custom_service.decisions.service_id
  slo_id              = "availability"
  display_name        = "${local.slo.availability * 100} % of requests answer without 5xx, over ${local.slo.days} days"
  goal                = local.slo.availability
  rolling_period_days = local.slo.days
  user_labels         = local.labels

  request_based_sli {
    good_total_ratio {
      bad_service_filter   = "${local.cloud_run_requests} metric.label.\"response_code_class\"=\"5xx\""
      total_service_filter = local.cloud_run_requests
    }
  }
}

resource "google_monitoring_slo" "latency" {
  project             = var.project_id
  service             = google_monitoring_custom_service.decisions.service_id
  slo_id              = "latency"
  display_name        = "${local.slo.latency * 100} % of decisions within ${local.slo.latency_s} s, over ${local.slo.days} days"
  goal                = local.slo.latency
  rolling_period_days = local.slo.days
  user_labels         = local.labels

  request_based_sli {
    distribution_cut {
      distribution_filter = "metric.type=\"prometheus.googleapis.com/dgemma_decision_seconds/histogram\" resource.type=\"prometheus_target\" resource.label.\"namespace\"=\"${var.service_name}\""
      range {
        max = local.slo.latency_s
      }
    }
  }
}

# Burn-rate alerts on both SLOs (the SRE workbook's pairs: 14.4x over 1 h, 6x over 6 h), and the kit's
# own conditions in PromQL over the collectors' metrics: both from monitoring/alerts.yaml (main.tf,
# local.slo_alerts and local.alert_policies).
resource "google_monitoring_alert_policy" "slo_burn" {
  for_each = local.slo_alerts

  project               = var.project_id
  display_name          = "${var.service_name}: ${each.value.name}"
  combiner              = "OR"
  severity              = each.value.severity
  notification_channels = var.notification_channels
  user_labels           = local.labels

  dynamic "conditions" {
    for_each = local.slo.burn
    content {
      display_name = "${conditions.value.factor}x the budget's rate over ${conditions.value.window_s / 3600} h"
      condition_threshold {
        filter = format(
          "select_slo_burn_rate(\"%s\", \"%ds\")",
          each.key == "availability" ? google_monitoring_slo.availability.id : google_monitoring_slo.latency.id,
          conditions.value.window_s,
        )
        comparison      = "COMPARISON_GT"
        threshold_value = conditions.value.factor
        duration        = "0s"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.service_name}: the ${each.key} SLO's month is being spent fast (${each.value.alert})"
    content   = each.value.runbook
  }

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_alert_policy" "kit" {
  for_each = local.alert_policies

  project      = var.project_id
  display_name = "${var.service_name}: ${each.value.name}"
  combiner     = "OR"
  severity     = each.value.severity
  # The dead-man's switch notifies through channels that do not pass through the router.
  notification_channels = each.value.deadman ? var.deadman_notification_channels : var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = each.value.name
    condition_prometheus_query_language {
      query    = each.value.query
      duration = each.value.duration
      # Created before any instance has written the metric (a fresh project): not validated.
      disable_metric_validation = true
      evaluation_interval       = "60s"
    }
  }

  alert_strategy {
    auto_close = "1800s"
  }

  documentation {
    mime_type = "text/markdown"
    subject   = "${var.service_name}: ${each.value.name} (${each.value.alert})"
    content   = each.value.runbook
  }

  depends_on = [google_project_service.apis]
}

# The router's uptime: public, so checked as anyone calls it. Failing from two regions for 10 min
# notifies the dead-man's channels: a router that is down cannot page about itself.
resource "google_monitoring_uptime_check_config" "router" {
  count = var.router_image == "" ? 0 : 1

  project      = var.project_id
  display_name = "${var.service_name}-router /healthz"
  timeout      = "10s"
  period       = "300s"

  http_check {
    path         = "/healthz"
    port         = 443
    use_ssl      = true
    validate_ssl = true
  }

  monitored_resource {
    type = "uptime_url"
    labels = {
      project_id = var.project_id
      host       = trimprefix(google_cloud_run_v2_service.router[0].uri, "https://")
    }
  }

  depends_on = [google_project_service.apis]
}

# The GPU service's uptime, off by default (gpu_uptime_check): each check is a request, which starts an
# L4 instance when none runs, so checks every 15 min keep one up around the clock (terraform/README.md,
# Monitoring: about $1,022 a month). The SLOs and the error alerts watch it for nothing while it idles.
resource "google_monitoring_uptime_check_config" "gpu" {
  count = var.image != "" && var.gpu_uptime_check ? 1 : 0

  project      = var.project_id
  display_name = "${var.service_name} /healthz"
  timeout      = "60s"
  period       = "900s"

  http_check {
    path         = "/healthz"
    port         = 443
    use_ssl      = true
    validate_ssl = true
    # The service is private: the check presents an ID token of Cloud Monitoring's service agent,
    # which may invoke it (iam.tf).
    service_agent_authentication {
      type = "OIDC_TOKEN"
    }
  }

  monitored_resource {
    type = "uptime_url"
    labels = {
      project_id = var.project_id
      host       = trimprefix(google_cloud_run_v2_service.gpu[0].uri, "https://")
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_alert_policy" "uptime" {
  for_each = merge(
    var.router_image == "" ? {} : { router = google_monitoring_uptime_check_config.router[0].uptime_check_id },
    var.image != "" && var.gpu_uptime_check ? { gpu = google_monitoring_uptime_check_config.gpu[0].uptime_check_id } : {},
  )

  project               = var.project_id
  display_name          = "${var.service_name}: ${each.key == "router" ? "the alert router" : "the decision service"} fails its uptime check"
  combiner              = "OR"
  severity              = "CRITICAL"
  notification_channels = each.key == "router" ? var.deadman_notification_channels : var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "/healthz fails from more than one region"
    condition_threshold {
      filter          = "metric.type=\"monitoring.googleapis.com/uptime_check/check_passed\" resource.type=\"uptime_url\" metric.label.\"check_id\"=\"${each.value}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 1
      duration        = "600s"
      aggregations {
        alignment_period     = "1200s"
        per_series_aligner   = "ALIGN_NEXT_OLDER"
        cross_series_reducer = "REDUCE_COUNT_FALSE"
        group_by_fields      = ["resource.label.*"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Open the service's logs (`gcloud run services logs read ${each.key == "router" ? "${var.service_name}-router" : var.service_name} --region ${var.region}`) and its revisions; `dgemma rollback` returns to the previous revision."
  }
}
