"""The example site with a project's typical extra middleware, for ``bench.middleware``:
CORS headers and a request id, written the way projects write them (``MiddlewareMixin``,
sync) and declared not to block (``loop_safe``: the chain stays on the event loop), before
the site's own seven. ``DJANGO_SETTINGS_MODULE=bench.extra_middleware``."""

from __future__ import annotations

import uuid

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from toolnexus_site.settings import *  # noqa: F403  (the site's settings, then the extras)
from toolnexus_site.settings import MIDDLEWARE as SITE_MIDDLEWARE


class RequestIdMiddleware(MiddlewareMixin):
    """A request id from the proxy's ``X-Request-ID`` (or a new one), on the request and the response."""

    loop_safe = True

    def process_request(self, request: HttpRequest) -> None:
        request.request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex  # type: ignore[attr-defined]

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response["X-Request-ID"] = getattr(request, "request_id", "")
        return response


class CorsMiddleware(MiddlewareMixin):
    """CORS for any origin, as django-cors-headers answers with ``CORS_ALLOW_ALL_ORIGINS``."""

    loop_safe = True

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if request.method == "OPTIONS" and "access-control-request-method" in request.headers:
            return HttpResponse(status=200)
        return None

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "origin" in request.headers:
            response["Access-Control-Allow-Origin"] = "*"
            response["Vary"] = "Origin"
        return response


MIDDLEWARE = [
    "bench.extra_middleware.RequestIdMiddleware",
    "bench.extra_middleware.CorsMiddleware",
    *SITE_MIDDLEWARE,
]
