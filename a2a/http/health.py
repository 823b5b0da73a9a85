"""Operations endpoints: ``/healthz`` (is this process able to serve?) and ``/metrics``
(Prometheus text). Both are GET-only and carry no task data; put them behind your
proxy's access rules if the counts are not for everyone."""

from __future__ import annotations

import asyncio

import orjson
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

from a2a.conf import a2a_settings
from a2a.ops import observability


async def healthz(request: HttpRequest) -> HttpResponse:
    """200 ``{"status": "ok", "checks": {...}}`` when the store (and every added check)
    answers, else 503 with the failing check's error."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    report = await observability.health(a2a_settings.HEALTH_TIMEOUT)
    return HttpResponse(
        orjson.dumps(report),
        content_type="application/json",
        status=200 if report["status"] == "ok" else 503,
        headers={"Cache-Control": "no-store"},
    )


async def metrics(request: HttpRequest) -> HttpResponse:
    """Task and model counters and timings in the Prometheus text format."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    body, content_type = await asyncio.to_thread(observability.render_metrics)
    return HttpResponse(body, content_type=content_type, headers={"Cache-Control": "no-store"})
