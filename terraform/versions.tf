terraform {
  # Cross-variable references in validation blocks (max_instance_count against the quota) need 1.9.
  required_version = ">= 1.9"

  required_providers {
    google = {
      source = "hashicorp/google"
      # The offline schema check runs against provider 8.7.0 (tests/terraform); a major version may
      # break the module. `dgemma deploy` takes the newest in range once, at a workdir's first init,
      # and its .terraform.lock.hcl keeps that one between deploys (deploy/cloud/terraform.py).
      version = ">= 8.7, < 9"
    }
  }

  provider_meta "google" {
    module_name = "dgemma-kit/cloud-run-l4/v0.1.0"
  }
}
