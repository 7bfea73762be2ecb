project_id = "my-gpu-project"
operator   = "user:sre@example.com"
# image    = "europe-west4-docker.pkg.dev/my-gpu-project/dgemma/dgemma@sha256:..."
# router_image = "europe-west4-docker.pkg.dev/my-gpu-project/dgemma/dgemma-router@sha256:..."
