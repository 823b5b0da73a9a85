"""The example site with a middleware that reads (and may write) the session and the user,
for the tests of the A2A routes' chain with sessions (tests/test_loop_chain_sessions.py):
``DJANGO_SETTINGS_MODULE=tests.session_site``. From the environment: ``LOOP_SAFE`` (the
middleware declares it does not block), ``SESSION_SAVE_EVERY_REQUEST``, ``CSRF_USE_SESSIONS``,
``MESSAGE_STORAGE``."""

from __future__ import annotations

import secrets
import threading

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from toolnexus_site.settings import *  # noqa: F403  (the site's settings, then these)
from toolnexus_site.settings import MIDDLEWARE as SITE_MIDDLEWARE
from toolnexus_site.settings import env

SESSION_SAVE_EVERY_REQUEST = env.bool("SESSION_SAVE_EVERY_REQUEST", default=False)
CSRF_USE_SESSIONS = env.bool("CSRF_USE_SESSIONS", default=False)
MESSAGE_STORAGE = env("MESSAGE_STORAGE", default="django.contrib.messages.storage.session.SessionStorage")


class SessionReadingMiddleware(MiddlewareMixin):
    """Reads the session and the user; on ``X-Visit`` counts the visit in the session, on
    ``X-Message`` adds a message (``big``: one too large for a cookie). Answers which thread it ran on
    (``X-Middleware-Thread``) and who the user is (``X-User``)."""

    loop_safe = env.bool("LOOP_SAFE", default=False)

    def process_request(self, request: HttpRequest) -> None:
        request.visits = request.session.get("visits", 0)  # type: ignore[attr-defined]
        if request.headers.get("X-Visit"):
            request.session["visits"] = request.visits + 1  # type: ignore[attr-defined]
        if request.headers.get("X-Message"):  # "big": more than a cookie holds
            big = request.headers["X-Message"] == "big"  # (random: the cookie storage compresses)
            messages.info(request, secrets.token_urlsafe(3000) if big else "seen")

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response["X-Middleware-Thread"] = threading.current_thread().name
        response["X-User"] = str(request.user) if request.user.is_authenticated else ""
        response["X-Visits"] = str(request.visits)  # type: ignore[attr-defined]
        return response


MIDDLEWARE = [*SITE_MIDDLEWARE, "tests.session_site.SessionReadingMiddleware"]
