// project and place

variable "project_id" {
  type        = string
  description = "Google Cloud project that hosts the service, its images, weights and secret."

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a Google Cloud project id (6-30 lowercase letters, digits, hyphens)."
  }
}

variable "region" {
  type        = string
  description = "Region of the service and its weights bucket. Cloud Run offers NVIDIA L4 in these regions (docs seen 2026-11; us-central1 and asia-south1 by invitation)."

  validation {
    condition     = contains(["europe-west1", "europe-west4", "us-east4", "us-central1", "asia-southeast1", "asia-south1"], var.region)
    error_message = "region must be a Cloud Run region with NVIDIA L4 GPUs: europe-west1, europe-west4, us-east4, us-central1, asia-southeast1 or asia-south1."
  }
}

variable "service_name" {
  type        = string
  description = "Name of the Cloud Run service; also names the image repository, the weights bucket, the service account and the secret."
  default     = "dgemma"

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$", var.service_name))
    error_message = "service_name must be 1-22 lowercase letters, digits or hyphens, starting with a letter (it prefixes the service account id)."
  }
}

variable "labels" {
  type        = map(string)
  description = "Labels added to every resource that takes labels."
  default     = {}

  validation {
    condition = alltrue([
      for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))
    ])
    error_message = "labels must be keys of 1-63 lowercase letters, digits, _ or -, starting with a letter, with values of at most 63 of the same characters."
  }
}

// the revision and its traffic (set by `dgemma deploy` per phase)

variable "image" {
  type        = string
  description = "Image by digest (REGION-docker.pkg.dev/PROJECT/REPO/dgemma@sha256:...). Empty: only the infrastructure is created (the first phase of a deploy, before the image exists)."
  default     = ""

  validation {
    condition     = var.image == "" || can(regex("@sha256:[0-9a-f]{64}$", var.image))
    error_message = "image must be deployed by digest (...@sha256:<64 hex>), so a revision always runs the image that passed the gate."
  }
}

variable "revision_suffix" {
  type        = string
  description = "Suffix of the revision name (`SERVICE-SUFFIX`), e.g. the git SHA and a hash of the settings; a new suffix makes a new revision. Empty: Cloud Run names it."
  default     = ""

  validation {
    condition     = can(regex("^([a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?)?$", var.revision_suffix))
    error_message = "revision_suffix must be at most 30 lowercase letters, digits or hyphens."
  }
}

variable "serving_revision" {
  type        = string
  description = "Revision that receives 100 % of the traffic. Empty: the latest revision (the first deploy)."
  default     = ""
}

variable "candidate_revision" {
  type        = string
  description = "Revision tagged `candidate` at 0 % of the traffic (reachable at https://candidate---SERVICE-...run.app) while it is load-tested. Empty: no candidate."
  default     = ""
}

// the GPU instance

variable "max_instance_count" {
  type        = number
  description = "Most instances (GPUs) at once. Must not exceed the project's L4 quota in the region (`l4_gpu_quota`)."
  default     = 1

  validation {
    condition     = var.max_instance_count >= 1 && var.max_instance_count <= var.l4_gpu_quota
    error_message = "max_instance_count must be between 1 and l4_gpu_quota (the Cloud Run L4 quota of the project in this region)."
  }
}

variable "l4_gpu_quota" {
  type        = number
  description = "The project's Cloud Run quota of L4 GPUs in the region, of the kind matching gpu_zonal_redundancy_disabled (a first deploy without zonal redundancy is typically granted 3). Raise it only after the quota was raised."
  default     = 3

  validation {
    condition     = var.l4_gpu_quota >= 1
    error_message = "l4_gpu_quota must be at least 1."
  }
}

variable "gpu_zonal_redundancy_disabled" {
  type        = bool
  description = "Run without zonal redundancy for the GPU: a lower price and a separate, more easily granted quota, at the cost of best-effort failover."
  default     = true
}

variable "cpu" {
  type        = string
  description = "vCPUs of the instance. An L4 needs at least 4; 8 is the Cloud Run maximum with a GPU."
  default     = "8"

  validation {
    condition     = contains(["4", "6", "8"], var.cpu)
    error_message = "cpu must be 4, 6 or 8 for an L4 instance."
  }
}

variable "memory" {
  type        = string
  description = "Memory of the instance (its disk is memory too: a downloaded checkpoint counts against it). An L4 needs 16Gi to 32Gi; `dgemma fit --weights-mode` checks the budget."
  default     = "32Gi"

  validation {
    condition     = can(regex("^(1[6-9]|2[0-9]|3[0-2])Gi$", var.memory))
    error_message = "memory must be between 16Gi and 32Gi for an L4 instance."
  }
}

// the engine (the same knobs the supervisor's fit profile reads)

variable "engine_max_num_seqs" {
  type        = number
  description = "vLLM --max-num-seqs. Also the service's request concurrency and the gateway's admission (README, Deploy): Cloud Run queues and sheds beyond it. The default is the supervisor's (DGEMMA_ENGINE_MAX_NUM_SEQS); `dgemma deploy` writes it from the same settings."
  default     = 32

  validation {
    condition     = var.engine_max_num_seqs >= 1 && var.engine_max_num_seqs <= 256
    error_message = "engine_max_num_seqs must be between 1 and 256."
  }
}

variable "engine_canvas" {
  type        = number
  description = "Canvas length the engine allocates per sequence (DGEMMA_ENGINE_CANVAS); the fit profile sizes GPU memory from it."
  default     = 32
}

variable "engine_prompt_tokens" {
  type        = number
  description = "Prompt length the KV cache is sized for (DGEMMA_ENGINE_PROMPT_TOKENS)."
  default     = 300
}

variable "engine_timeout_s" {
  type        = number
  description = "How long one engine call may take before a decision fails with 503 (DGEMMA_ENGINE_TIMEOUT_S). At most 1800: with the cold-start budget it makes the request timeout, which Cloud Run caps at 3600 s."
  default     = 120

  validation {
    condition     = var.engine_timeout_s >= 1 && var.engine_timeout_s <= 1800
    error_message = "engine_timeout_s must be between 1 and 1800 (plus cold_start_budget_s, Cloud Run's 3600 s request timeout)."
  }
}

variable "cold_start_budget_s" {
  type        = number
  description = "Seconds an instance may take from start to ready (image, weights, engine init). The startup probe's window and the supervisor's engine wait are this long; Cloud Run allows up to 1800 s for GPU services. The request timeout adds engine_timeout_s, because Cloud Run counts a cold start inside the first request's timeout."
  default     = 900

  validation {
    condition     = var.cold_start_budget_s >= 60 && var.cold_start_budget_s <= 1800
    error_message = "cold_start_budget_s must be between 60 and 1800 (Cloud Run's startup-probe limit for GPU services)."
  }
}

variable "log_level" {
  type        = string
  description = "DGEMMA_LOG_LEVEL of the service."
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be DEBUG, INFO, WARNING or ERROR."
  }
}

// weights

variable "weights_mode" {
  type        = string
  description = "How the instance gets the checkpoint: `baked` (in the image, pulled from the bucket by Cloud Build; image layers do not count against instance memory), `download` (from the bucket at every start into the instance's memory disk), `gcs_fuse` (a read-only Cloud Storage volume, read in place). `dgemma fit --weights-mode` checks the memory budget of each."
  default     = "baked"

  validation {
    condition     = contains(["baked", "download", "gcs_fuse"], var.weights_mode)
    error_message = "weights_mode must be baked, download or gcs_fuse."
  }
}

variable "weights_prefix" {
  type        = string
  description = "Folder of the checkpoint in the weights bucket (its manifest.json included)."
  default     = "dgemma-w4a16"

  validation {
    condition     = can(regex("^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$", var.weights_prefix))
    error_message = "weights_prefix must be a relative object path such as dgemma-w4a16 or models/dgemma-w4a16/v2."
  }
}

variable "weights_version" {
  type        = string
  description = "The checkpoint's own folder under `weights_prefix`: `dgemma deploy --checkpoint` uploads each checkpoint to `<weights_prefix>/<its manifest's content digest>`, so a revision's weights never change under it and a rollback serves the weights it served. Empty: `weights_prefix` itself."
  default     = ""

  validation {
    condition     = can(regex("^([0-9a-f]{12})?$", var.weights_version))
    error_message = "weights_version must be empty or a checkpoint's 12-hex-digit manifest digest."
  }
}

variable "gcs_fuse_mount_options" {
  type        = list(string)
  description = "Cloud Storage FUSE options of the weights volume (gcs_fuse mode): buffered, parallel-friendly reads of large immutable files, metadata cached for the instance's life."
  default     = ["implicit-dirs", "enable-buffered-read=true", "metadata-cache-ttl-secs=-1", "stat-cache-max-size-mb=32"]
}

variable "compile_cache_days" {
  type        = number
  description = "Days the engine's compile caches (the weights bucket's compile-cache/ prefix, restored by each new instance so that only a revision's first instance compiles) are kept: then deleted, and the next cold instance compiles and saves them once more."
  default     = 30

  validation {
    condition     = var.compile_cache_days >= 1 && var.compile_cache_days <= 365 && floor(var.compile_cache_days) == var.compile_cache_days
    error_message = "compile_cache_days must be a whole number of days between 1 and 365."
  }
}

// access

variable "invokers" {
  type        = list(string)
  description = "Principals allowed to invoke the service (`user:...`, `serviceAccount:...`, `group:...`): the operator running `dgemma deploy` (for the smoke call and the gate) and other callers. The alert router's own identity is granted by the module. Never public."
  default     = []

  validation {
    condition     = alltrue([for m in var.invokers : can(regex("^(user|serviceAccount|group):[^@ ]+@[^@ ]+$", m))])
    error_message = "invokers must be user:, serviceAccount: or group: principals with an email; allUsers and allAuthenticatedUsers are refused."
  }
}

variable "image_retention_count" {
  type        = number
  description = "Images kept in the repository (the most recent); older ones are deleted by the cleanup policy."
  default     = 10

  validation {
    condition     = var.image_retention_count >= 2
    error_message = "image_retention_count must keep at least 2 images (the serving one and a candidate)."
  }
}

variable "deletion_protection" {
  type        = bool
  description = "Refuse to destroy the service; `dgemma destroy` turns it off first."
  default     = true
}

// the alert router (a CPU service in front of the GPU service: monitoring webhooks in, pages out)

variable "router_image" {
  type        = string
  description = "Alert router image by digest (REGION-docker.pkg.dev/PROJECT/REPO/SERVICE-router@sha256:..., the Dockerfile's `router` target). Empty: no router service yet. Needs `image`: the router asks the GPU service."
  default     = ""

  validation {
    condition     = var.router_image == "" || can(regex("@sha256:[0-9a-f]{64}$", var.router_image))
    error_message = "router_image must be deployed by digest (...@sha256:<64 hex>)."
  }

  validation {
    condition     = var.router_image == "" || var.image != ""
    error_message = "router_image needs image: the router asks the GPU service, which exists only once image is set."
  }
}

variable "calibration" {
  type        = string
  description = "The gateway's calibration file (the JSON `dgemma calibrate` writes; not secret). Empty: answers carry the model's own probabilities. Set: stored as the secret SERVICE-calibration, mounted as a file named by DGEMMA_CALIBRATION_FILE; a change makes a new revision. The gateway refuses to start on a file fitted on another model or read policy."
  default     = ""

  validation {
    condition     = length(var.calibration) <= 65536
    error_message = "calibration must be at most 64 KiB (a Secret Manager version's limit)."
  }

  validation {
    condition     = var.calibration == "" || can(jsondecode(var.calibration).format)
    error_message = "calibration must be the JSON file `dgemma calibrate` writes (it has a \"format\")."
  }
}

variable "alerts_policy" {
  type        = string
  description = "The router's policy (TOML content: questions, thresholds, teams, routes, sinks; not secret). Empty: the image's default policy (three example teams, pages printed to the log). Set: stored as the secret SERVICE-alerts-policy, mounted as a file; a change makes a new router revision."
  default     = ""

  validation {
    condition     = length(var.alerts_policy) <= 65536
    error_message = "alerts_policy must be at most 64 KiB (a Secret Manager version's limit)."
  }
}

variable "alerts_sink_secrets" {
  type        = list(string)
  description = "Names of the sinks' secrets (PagerDuty routing keys, Slack webhook URLs, tokens). Each NAME makes the secret SERVICE-alerts-sink-NAME, without a value (add it out of band: `gcloud secrets versions add`), mounted at /secrets/sinks/NAME/value for the policy's `*_file` settings, e.g. routing_key_file = \"/secrets/sinks/pagerduty/value\"."
  default     = []

  validation {
    condition     = alltrue([for n in var.alerts_sink_secrets : can(regex("^[a-z][a-z0-9-]{0,40}$", n))])
    error_message = "alerts_sink_secrets names must be 1-41 lowercase letters, digits or hyphens, starting with a letter."
  }

  validation {
    condition     = length(distinct(var.alerts_sink_secrets)) == length(var.alerts_sink_secrets)
    error_message = "alerts_sink_secrets must not repeat a name."
  }
}

variable "router_cpu" {
  type        = string
  description = "vCPUs of the router's instance. At least 1: Cloud Run allows fractional CPU only with a request concurrency of 1."
  default     = "1"

  validation {
    condition     = contains(["1", "2", "4"], var.router_cpu)
    error_message = "router_cpu must be 1, 2 or 4."
  }
}

variable "router_memory" {
  type        = string
  description = "Memory of the router's instance: from 512Mi (the second generation's minimum) to 4Gi per vCPU."
  default     = "512Mi"

  validation {
    condition = (
      can(regex("^[1-9][0-9]*(Mi|Gi)$", var.router_memory))
      ? (
        tonumber(regex("^[0-9]+", var.router_memory)) * (endswith(var.router_memory, "Gi") ? 1024 : 1) >= 512
        && tonumber(regex("^[0-9]+", var.router_memory)) * (endswith(var.router_memory, "Gi") ? 1024 : 1) <= 4096 * tonumber(var.router_cpu)
      )
      : false
    )
    error_message = "router_memory must be written like 512Mi or 2Gi, between 512Mi and 4Gi per vCPU of router_cpu."
  }
}

variable "router_min_instance_count" {
  type        = number
  description = "Router instances kept up. 1 (default): no cold start inside the sender's deadline, and a page sent unclassified (the GPU service cold or down) is classified and updated as soon as the service answers, for the price of one always-on instance (1 vCPU, 512 MiB, and as much again for its metrics collector: about $100 a month at Cloud Run's instance-based rates). 0: no instance is kept, but the router's uptime check (every 5 min) and Alertmanager's Watchdog (every minute) each start one well within the 15 min an idle instance stays up, so it costs about the same (docs/deploy.md, Cost); a pending classification is resumed by the next instance that starts, and a delivery that finds none waits out a cold start of a few seconds."
  default     = 1

  validation {
    condition     = var.router_min_instance_count >= 0 && var.router_min_instance_count <= var.router_max_instance_count
    error_message = "router_min_instance_count must be between 0 and router_max_instance_count."
  }
}

variable "router_max_instance_count" {
  type        = number
  description = "Most router instances at once (each takes 80 deliveries at a time; a delivery waits at most the decision budget). The ledger in Cloud Storage keeps them, and overlapping revisions, to one page per alert episode. 3 gives headroom for an alert storm and a rollout's overlap."
  default     = 3

  validation {
    condition     = var.router_max_instance_count >= 1 && var.router_max_instance_count <= 100
    error_message = "router_max_instance_count must be between 1 and 100."
  }
}

variable "alerts_ledger_days" {
  type        = number
  description = "Days the router's ledger keeps an alert episode's facts (its decision, deliveries, resolution). An alert still firing after this many days pages again once."
  default     = 30

  validation {
    condition     = var.alerts_ledger_days >= 1
    error_message = "alerts_ledger_days must be at least 1."
  }
}

variable "alerts_mode" {
  type        = string
  description = "How the router acts on its decisions: `shadow` pages every firing alert as it was sent (the fallback route, the sender's severity) and only records what the policy would have done (`dgemma alerts report` reads the record); `act` pages as the policy decides. `dgemma deploy` starts a new router in shadow and keeps a running router's mode unless `--alerts-mode` says otherwise."
  default     = "shadow"

  validation {
    condition     = contains(["act", "shadow"], var.alerts_mode)
    error_message = "alerts_mode must be act or shadow."
  }
}

variable "alerts_decision_budget_s" {
  type        = number
  description = "Seconds an alert may wait for its classification before it pages unclassified on the fallback route (updated when the answer comes). At most 9: Alertmanager gives a notification, retries included, max(group_interval, 10 s), so the router answers in time even at the shortest group_interval."
  default     = 5

  validation {
    condition     = var.alerts_decision_budget_s > 0 && var.alerts_decision_budget_s <= 9
    error_message = "alerts_decision_budget_s must be more than 0 and at most 9 (Alertmanager may give a notification as little as 10 s)."
  }
}

// cost guard

variable "billing_account" {
  type        = string
  description = "ID of the billing account that pays for the project (XXXXXX-XXXXXX-XXXXXX). Set: a monthly budget of budget_amount on this project (budget.tf), which mails the account's billing administrators at 50 %, 90 % and 100 % of the month's spend and when the forecast reaches 100 %; it alerts, it never stops a service. Creating it takes a billing role on the account (Billing Account Costs Manager or Administrator) and credentials with a quota project. Empty: no budget."
  default     = ""

  validation {
    condition     = can(regex("^([0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6})?$", var.billing_account))
    error_message = "billing_account must be a billing account ID such as 012345-6789AB-CDEF01 (uppercase), or empty."
  }
}

variable "budget_amount" {
  type        = number
  description = "The project's budget per calendar month, in whole units of the billing account's currency (billing_account). 0: no budget."
  default     = 0

  validation {
    condition     = var.budget_amount >= 0 && floor(var.budget_amount) == var.budget_amount
    error_message = "budget_amount must be a whole amount, 0 or more."
  }

  validation {
    condition     = (var.billing_account == "") == (var.budget_amount == 0)
    error_message = "budget_amount and billing_account go together: a budget needs both, no budget neither."
  }
}

// monitoring (monitoring.tf)

variable "metrics_collector_image" {
  type        = string
  description = "Google's Managed Service for Prometheus collector for Cloud Run, beside each service's container (GoogleCloudPlatform/run-gmp-sidecar; pinned: a new version is a reviewed change)."
  default     = "us-docker.pkg.dev/cloud-ops-agents-artifacts/cloud-run-gmp-sidecar/cloud-run-gmp-sidecar:1.7.0"
}

variable "notification_channels" {
  type        = list(string)
  description = "Cloud Monitoring notification channels (projects/P/notificationChannels/ID) of the kit's alert policies. Empty: the policies open incidents in the console and notify no one."
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "notification_channels must be written projects/PROJECT/notificationChannels/ID."
  }
}

variable "deadman_notification_channels" {
  type        = list(string)
  description = "Channels of the dead-man's switch and the router's uptime: a way to people that does not pass through the alert router (e-mail, SMS, a pager's own integration), since these say the router may not be paging."
  default     = []

  validation {
    condition     = alltrue([for c in var.deadman_notification_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "deadman_notification_channels must be written projects/PROJECT/notificationChannels/ID."
  }
}

variable "deadman_switch" {
  type        = bool
  description = "The dead-man's switch: an alert policy, to `deadman_notification_channels`, that fires when Alertmanager's always-firing Watchdog has not reached the router for 10 min. Off where no Alertmanager sends the router its Watchdog (Grafana or Cloud Monitoring alone), since there it would fire for ever; the router's uptime check stays either way."
  default     = true
}

variable "alerts_pending_alert_minutes" {
  type        = number
  description = "Alert when a page sent unclassified has waited this long for its classification (the decision service still away)."
  default     = 15

  validation {
    condition     = var.alerts_pending_alert_minutes >= 1 && var.alerts_pending_alert_minutes <= 30
    error_message = "alerts_pending_alert_minutes must be 1 to 30 (the router stops trying after 30 min)."
  }
}

variable "gpu_uptime_check" {
  type        = bool
  description = "An uptime check of the GPU service every 15 min. Off by default: each check starts an L4 instance when none runs, which keeps one up around the clock (terraform/README.md, Monitoring)."
  default     = false
}
