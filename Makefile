# The two commands of the contract: `make dev` (local stack) and `make test` (everything CI runs).
# Both set up what they need on a fresh machine; the real work lives in scripts/, deploy/, devtools/.
PYTHON ?= python3.11
VENV := .venv
ENGINE_VENV := .venv-engine

.PHONY: dev test test-fast lint checkov docs bench bench-cost reliability bench-alerts bench-ledger bench-weights eval-toy calibrate-toy toy-model lock env engine-env alertmanager prometheus clean

dev: env engine-env  ## local stack: vLLM (CPU) on the trained toy model + gateway on 127.0.0.1:$${PORT:-8080}
	$(VENV)/bin/dgemma dev

test: env engine-env alertmanager prometheus  ## lint, type checks, docs check, then every tier, the real engine included
	bash scripts/test.sh

test-fast: env alertmanager prometheus  ## lint, then the tiers that need no engine (pure functions, the app in process, emulator)
	bash scripts/test.sh -m "not engine"

lint: env
	bash scripts/lint.sh

checkov:  ## checkov over terraform/ with this project's checks, offline (its own venv, created on first use)
	bash scripts/checkov.sh terraform

docs: env  ## regenerate the generated docs: settings and cold-start tables, terraform/README.md
	$(VENV)/bin/python scripts/gen_docs.py

bench: env engine-env  ## gateway overhead against the raw engine, side by side, on a local stack
	$(VENV)/bin/python -m devtools.bench

bench-cost: env  ## the gateway's own CPU and added latency per decision, before/after side by side (instant stand-in of vLLM)
	$(VENV)/bin/python -m devtools.bench.cost $(BENCH_ARGS)

reliability: env engine-env  ## hostile input, overload, faults, leaked secrets and the gateway's cost, on the local stack: reports/reliability/report.md (about 40 min)
	$(VENV)/bin/python -m devtools.bench.reliability $(RELIABILITY_ARGS)

bench-alerts: env engine-env  ## the alert router's overhead and time to page (service up, slow, down), side by side
	$(VENV)/bin/python -m devtools.bench.alerts

bench-ledger: env  ## the durable ledger's added latency per delivery (GCS emulator vs memory), side by side
	$(VENV)/bin/python -m devtools.bench.ledger

bench-weights: env  ## GCS download paths against the emulator, and the baked-weights check (stamp vs sha256), side by side
	$(VENV)/bin/python -m devtools.bench.weights
	$(VENV)/bin/python -m devtools.bench.verify

eval-toy: env engine-env  ## `dgemma eval` of the toy model on its 300-alert test split, every policy (about 27 min on 2 cores)
	$(VENV)/bin/python -m devtools.lab.eval_toy

calibrate-toy: env engine-env  ## `dgemma calibrate` of the toy model on its test split, under POLICY (default single; a few minutes)
	$(VENV)/bin/python -m devtools.lab.eval_toy calibrate --policy $${POLICY:-single} --out reports/calibrate-toy/$${POLICY:-single}.json

toy-model: env engine-env  ## retrain the shipped toy model (about 27 min on 2 cores; the same weights on the same thread count)
	$(VENV)/bin/dgemma toy train deploy/models/dgemma-toy-alerts

lock: env  ## regenerate the image's hashed lock of the gateway's dependencies (Python 3.12, x86_64)
	$(VENV)/bin/uv pip compile pyproject.toml --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
		--generate-hashes --no-header --quiet -o requirements/gateway.lock

env: $(VENV)/.ready
$(VENV)/.ready: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --progress-bar off -q -e '.[loadtest,test]' 2>&1 | { grep -v "is ignored: it is neither" || true; }
	$(VENV)/bin/python -c "import app, deploy, loadtest, typesafe_sdk, locust"
	touch $@

engine-env:
	bash deploy/devstack/engine/setup_engine.sh $(ENGINE_VENV)

alertmanager:  ## Prometheus Alertmanager 0.25 (Debian package): the real sender in the router's tests
	bash scripts/install_alertmanager.sh

prometheus:  ## Prometheus 2.42 and promtool (Debian package): the kit's rules tested (monitoring/)
	PKG=prometheus BIN=promtool bash scripts/install_alertmanager.sh

clean:
	rm -rf $(VENV) $(ENGINE_VENV) .venv-checkov .cache .build .pytest_cache .mypy_cache .ruff_cache
