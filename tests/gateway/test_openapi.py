"""The OpenAPI document describes the Jev body and every status (schemathesis fuzzes from it later)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from openapi_spec_validator import validate

from app.gateway.main import create_app
from app.gateway.routes import systemone
from app.jev.wire import SystemOneRequest
from tests.helpers.gateway import ScriptedEngine, decision, gateway_settings, in_process

pytestmark = pytest.mark.inprocess


def _doc() -> dict[str, Any]:
    app: FastAPI = create_app(gateway_settings(), engine=ScriptedEngine())
    return app.openapi()


def test_the_document_is_valid_openapi() -> None:
    validate(_doc())  # raises on any schema or $ref error


def test_systemone_documents_its_body_and_every_status() -> None:
    doc = _doc()
    op = doc["paths"]["/v1/systemone"]["post"]
    ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    name = ref.rsplit("/", 1)[1]
    schema = doc["components"]["schemas"][name]
    assert set(schema["required"]) == {"model", "state", "questions"}
    assert set(schema["properties"]) == set(SystemOneRequest.model_fields)
    assert set(op["responses"]) == {"200", "400", "401", "404", "413", "415", "422", "429", "502", "503"}
    ok = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ok.endswith("/SystemOneResponse")
    for status, response in op["responses"].items():
        if status != "200":
            assert response["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody"), status


def test_question_types_are_a_discriminated_union() -> None:
    schemas = _doc()["components"]["schemas"]
    questions = schemas["SystemOneRequest"]["properties"]["questions"]["additionalProperties"]
    assert questions["discriminator"]["propertyName"] == "type"
    assert {"NoulQuestion", "ChoiceQuestion", "ScoreQuestion", "BoxQuestion"} <= set(schemas)


def test_v1_declares_its_bearer_key_and_the_probes_do_not() -> None:
    doc = create_app(gateway_settings()).openapi()
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key of the deployment.",
    }
    for path, operations in doc["paths"].items():
        for operation in operations.values():
            assert ("security" in operation) == path.startswith("/v1/"), path


def test_the_declared_decision_route_has_no_dependency_that_would_never_run() -> None:
    """POST /v1/systemone is served past FastAPI's router (`DecisionRoute`): a `Depends` added to
    the declared route would show in the document and never run, so there must be none."""
    route = next(
        r for r in systemone.router.routes if isinstance(r, APIRoute) and r.path.endswith("/systemone")
    )
    assert route.dependencies == [] and route.dependant.dependencies == []
    assert [p.name for p in route.dependant.query_params + route.dependant.header_params] == []
    assert route.methods == {"POST"}


async def test_the_decision_route_is_served_by_the_handler_create_app_built() -> None:
    app: FastAPI = create_app(gateway_settings(), engine=ScriptedEngine())
    built = app.state.decide
    served = []

    async def spy(request: Any) -> Any:
        served.append(request.url.path)
        return await built(request)

    app.state.decide = spy  # the declared route reads it; the bypass was given `built` itself
    async with in_process(app) as client:
        r = await client.post("/v1/systemone", json=decision({"p": {"type": "noul", "instructions": "?"}}))
    assert r.status_code == 200 and served == [], "the bypass answered, not the declared route"
    assert (await in_process(app).get("/v1/systemone")).status_code == 405
