"""Custom checkov checks (CKV_DGEMMA_*), loaded by `checkov --external-checks-dir` (scripts/checkov.sh)
with checkov's own Python in .venv-checkov, never imported by the test suite.

checkov requires this file to exist and then executes every other .py here itself, one module per
file named after it (hence the dgemma_ prefixes: no clash with stdlib, checkov or another check).
`__all__` is the form checkov's docs give; nothing here imports checkov.
"""

from pathlib import Path

__all__ = sorted(p.stem for p in Path(__file__).parent.glob("*.py") if p.stem != "__init__")
