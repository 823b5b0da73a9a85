"""Tracing: OpenTelemetry spans."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Tracing (a2a/core/tracing.py)"

DECLARED: dict[str, Setting] = {
    "A2A_TRACING": Setting(
        bool,
        False,
        doc="OpenTelemetry spans for each operation, the handler run, store calls and push delivery, joined "
        "to an incoming `traceparent` (docs/operations.md). Needs the `otel` extra (opentelemetry-api); "
        "the project sets up the SDK and an exporter. Off: no cost.",
    ),
}
