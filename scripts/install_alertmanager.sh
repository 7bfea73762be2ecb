#!/usr/bin/env bash
# Install Prometheus Alertmanager (Debian's `prometheus-alertmanager`, 0.25 on bookworm) for the alert
# router's tests, unless it is already on PATH; print its version. Idempotent: safe to run every time.
# The package's attempt to start a system service is refused by policy-rc.d in containers; that is
# harmless, the tests start their own Alertmanager (devtools/harness/alertmanager.py).
set -euo pipefail

PKG=${PKG:-prometheus-alertmanager}  # or PKG=prometheus BIN=promtool: Prometheus 2.42 and promtool
BIN=${BIN:-prometheus-alertmanager}

version() {
  # Alertmanager prints its version on stderr.
  "$BIN" --version 2>&1 | head -n 1
}

if command -v "$BIN" >/dev/null 2>&1; then
  version
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "$BIN is not on PATH and apt-get is unavailable: install Alertmanager 0.25 yourself" \
    "(Debian/Ubuntu package $PKG, or the release binary from" \
    "https://github.com/prometheus/alertmanager/releases, renamed to $BIN)" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "$BIN is not on PATH and installing $PKG needs root (or password-less sudo)" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
# Wait for a concurrent apt/dpkg (another test session installing the same thing) instead of failing.
APT=("${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)

candidate() {
  apt-cache policy "$PKG" 2>/dev/null | awk '/Candidate:/ {print $2}'
}

updated=0
# A clean machine has no package lists (or lists without this package): fetch them only then.
case "$(candidate)" in
  "" | "(none)")
    "${APT[@]}" update -q
    updated=1
    ;;
esac

install() {
  "${APT[@]}" install -y -q --no-install-recommends "$PKG"
}

if ! install; then
  # Stale lists point at versions the mirror no longer has: refresh once and retry.
  if [ "$updated" -eq 1 ]; then
    exit 1
  fi
  "${APT[@]}" update -q
  install
fi

if ! command -v "$BIN" >/dev/null 2>&1; then
  echo "$PKG installed but $BIN is not on PATH" >&2
  exit 1
fi
version
