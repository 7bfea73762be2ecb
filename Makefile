# The two commands of the contract: `make dev` (local stack) and `make test` (everything CI runs).
# Both set up what they need on a fresh machine; the real work lives in scripts/ and deploy/.
PYTHON ?= python3.11
VENV := .venv
ENGINE_VENV := .venv-engine

.PHONY: dev test lint docs bench lock env engine-env clean

dev: env engine-env  ## local stack: vLLM (CPU) on the tiny model + gateway on 127.0.0.1:$${PORT:-8080}
	$(VENV)/bin/dgemma dev

test: env engine-env  ## lint, type checks, docs check, then the tests on the real engine
	bash scripts/test.sh

lint: env
	bash scripts/lint.sh

docs: env  ## regenerate the README's settings table from app/settings.py
	$(VENV)/bin/python scripts/gen_docs.py

bench: env engine-env  ## gateway overhead against the raw engine, side by side
	$(VENV)/bin/python -m loadtest.overhead

lock: env  ## regenerate the image's hashed lock of the gateway's dependencies (Python 3.12, x86_64)
	$(VENV)/bin/uv pip compile pyproject.toml --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
		--generate-hashes --no-header --quiet -o requirements/gateway.lock

env: $(VENV)/.ready
$(VENV)/.ready: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --progress-bar off -q -e '.[test]' 2>&1 | { grep -v "is ignored: it is neither" || true; }
	$(VENV)/bin/python -c "import app, deploy, typesafe_sdk"
	touch $@

engine-env:
	bash deploy/engine/setup_engine.sh $(ENGINE_VENV)

clean:
	rm -rf $(VENV) $(ENGINE_VENV) .cache .pytest_cache .mypy_cache .ruff_cache
