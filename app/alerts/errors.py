"""The alert router's own errors."""

from __future__ import annotations

from app.core.errors import ServiceError


class DeliveryFailed(ServiceError):
    """The alert router could not deliver a page to a sink: the sender should retry (what was
    delivered is not delivered again)."""

    status = 502
