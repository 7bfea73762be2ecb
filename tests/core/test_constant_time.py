"""Credentials are compared in constant time: `app.core.secrets.matches` compares every kept digest,
whatever it is given, and no other code in app/ compares credential material with `==`."""

from __future__ import annotations

import ast
import hmac
import re
from pathlib import Path

import pytest

from app.core import secrets as auth

pytestmark = pytest.mark.unit

APP = Path(__file__).resolve().parents[2] / "app"
KEPT = tuple(auth.digest(k) for k in ("alpha-key", "bravo-key", "charlie-key"))
CREDENTIAL = re.compile(r"token|secret|password|api_?key|credential|bearer|basic", re.IGNORECASE)


@pytest.mark.parametrize("given", ["alpha-key", "charlie-key", "wrong-key", "", None])
def test_every_kept_digest_is_compared_whatever_is_given(
    monkeypatch: pytest.MonkeyPatch, given: str | None
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)  # what secrets.py calls
    result = auth.matches(given, KEPT)
    assert result == (given in ("alpha-key", "charlie-key"))
    assert [kept for _, kept in compared] == list(KEPT), "all of them, in order, with no early exit"
    assert {len(a) for a, _ in compared} == {32}, "digests of one length, never the raw secret"


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)] + [
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    ]


def test_no_credential_is_compared_with_equality_in_app() -> None:
    offenders = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Constant) and isinstance(o.value, str) for o in operands):
                    continue  # `scheme == "bearer"`: a keyword, not a secret
                names = [n for o in operands for n in _names(o)]
                if any(CREDENTIAL.search(n) for n in names):
                    offenders.append(f"{path.relative_to(APP.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == [], "compare credentials with app.core.secrets.matches (constant time)"
