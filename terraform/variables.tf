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
  description = "How long one engine call may take before a decision fails with 503 (DGEMMA_ENGINE_TIMEOUT_S)."
  default     = 120
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

variable "gcs_fuse_mount_options" {
  type        = list(string)
  description = "Cloud Storage FUSE options of the weights volume (gcs_fuse mode): buffered, parallel-friendly reads of large immutable files, metadata cached for the instance's life."
  default     = ["implicit-dirs", "enable-buffered-read=true", "metadata-cache-ttl-secs=-1", "stat-cache-max-size-mb=32"]
}

// access

variable "invokers" {
  type        = list(string)
  description = "Principals allowed to invoke the service (`user:...`, `serviceAccount:...`, `group:...`): the operator running `dgemma deploy` (for the smoke call and the gate) and the callers, such as the alert router's service account. Never public."
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
