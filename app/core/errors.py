"""The kit's one error base, and the domain errors its services answer with.

`KitError` carries the exit code and label `dgemma` reports it with (deploy/cli.py); every room
subclasses it. `ServiceError` carries the HTTP status its service answers with: the decision layer,
the engine client and the wire raise these and know nothing of HTTP (app/core/http_errors.py shapes
the responses), and a Jev client (app/jev/client.py) maps statuses back to the same classes.
"""

from __future__ import annotations

from typing import Any, ClassVar


class KitError(Exception):
    """A failure the kit reports plainly: `dgemma` exits with `exit_code` (1: the command ran and the
    answer is no; 2: refused before doing the work) after `label: message`."""

    exit_code: ClassVar[int] = 1
    label: ClassVar[str] = "error"


Detail = str | list[dict[str, Any]]


class ServiceError(KitError):
    """A request a service (the gateway, the router) cannot answer: `status` is its HTTP status
    (a subclass inherits its parent's), `detail` says why, for the client."""

    status: ClassVar[int] = 500

    def __init__(
        self, detail: Detail, *, retry_after: int | None = None, extra: dict[str, Any] | None = None
    ):
        super().__init__(detail if isinstance(detail, str) else "validation error")
        self.detail = detail
        self.retry_after = retry_after
        self.extra = extra or {}


class InvalidRequest(ServiceError):
    """The request breaks a semantic limit or rule (too many options, a noul with no text...)."""

    status = 400


class InputTooLong(InvalidRequest):
    """The prompt does not fit the engine's context; Jev marks it `max_tokens_exceeded`."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, extra={"error_type": "max_tokens_exceeded"})


class Unsupported(ServiceError):
    """Valid Jev that this deployment cannot answer (images, box questions on a text-only model)."""

    status = 400


class InvalidBody(ServiceError):
    """The body is not JSON, or does not match the schema: a FastAPI-style `detail` list."""

    status = 422


class Unauthorized(ServiceError):
    """No bearer token, or not one of the accepted keys."""

    status = 401


class ModelNotFound(ServiceError):
    """The request names a model this deployment does not serve."""

    status = 404


class BodyTooLarge(ServiceError):
    """The body exceeds the limit, before or after decompression."""

    status = 413


class UnsupportedMedia(ServiceError):
    """A content type or content coding the gateway does not read."""

    status = 415


class Saturated(ServiceError):
    """Admission is full: retry after `retry_after` seconds."""

    status = 429


class ClientClosed(ServiceError):
    """The client hung up before the answer; the decision was cancelled."""

    status = 499  # nginx's "client closed request": logged and counted, never the client's


class EngineBadAnswer(ServiceError):
    """The engine answered with an error or a body the gateway cannot read."""

    status = 502


class EngineUnavailable(ServiceError):
    """The engine is unreachable, not ready, saturated or too slow: retry after `retry_after`."""

    status = 503


class DeadlinePassed(ServiceError):
    """The decision was not answered within the timeout its client stated: its reads were cancelled
    (the client is about to give up); retry after `retry_after`."""

    status = 503


class Draining(ServiceError):
    """The service is shutting down (SIGTERM): it finishes what it started and takes nothing new;
    retry after `retry_after` (another instance answers)."""

    status = 503
