# An optional monthly budget on the project (billing_account set): mail to the billing account's
# administrators as the month's spend crosses each threshold. A GPU instance bills by the second
# while it runs; a budget alerts, it never stops one.

locals {
  budget_thresholds = [
    { percent = 0.5, basis = "CURRENT_SPEND" },
    { percent = 0.9, basis = "CURRENT_SPEND" },
    { percent = 1.0, basis = "CURRENT_SPEND" },
    { percent = 1.0, basis = "FORECASTED_SPEND" },
  ]
}

# A budget's project filter takes the project's number, not its id.
data "google_project" "budget" {
  count      = var.billing_account == "" ? 0 : 1
  project_id = var.project_id

  depends_on = [google_project_service.apis]
}

resource "google_billing_budget" "project" {
  count           = var.billing_account == "" ? 0 : 1
  billing_account = var.billing_account
  display_name    = "${var.service_name} in ${var.project_id}"

  budget_filter {
    projects        = ["projects/${data.google_project.budget[0].number}"]
    calendar_period = "MONTH"
  }

  amount {
    specified_amount {
      # No currency_code: the billing account's own currency.
      units = tostring(var.budget_amount)
    }
  }

  dynamic "threshold_rules" {
    for_each = local.budget_thresholds
    content {
      threshold_percent = threshold_rules.value.percent
      spend_basis       = threshold_rules.value.basis
    }
  }

  depends_on = [google_project_service.apis]
}
