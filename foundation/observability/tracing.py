"""OpenTelemetry traces, on only when the standard OTEL_EXPORTER_OTLP_ENDPOINT is set.

Without it the OpenTelemetry API's no-op tracer is used, and `span()` costs next to nothing.
The exporter (OTLP over HTTP/protobuf) reads the usual OTEL_* variables itself; spans follow the
asyncio context, so every span of one question lands in the trace of its Slack event.
"""
from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace

_TRACER = trace.get_tracer("docsbot")
_provider: Any = None


def setup_tracing(service_name: str) -> bool:
    """Install the SDK tracer provider with an OTLP exporter; False (no-op) when not configured."""
    global _provider
    if _provider is not None or not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return _provider is not None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)})
    _provider = TracerProvider(resource=resource)
    _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(_provider)
    atexit.register(shutdown_tracing)
    return True


def shutdown_tracing() -> None:
    """Export what is buffered (called on shutdown; safe to call twice)."""
    global _provider
    provider, _provider = _provider, None
    if provider is not None:
        provider.shutdown()


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span named `name`, the child of the current one; attributes must hold no user text."""
    with _TRACER.start_as_current_span(name, attributes=attributes) as current:
        yield current
