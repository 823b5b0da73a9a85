"""The example site with its seven middleware on the one-hop chain (a2a.http.chain), as
before the chain ran on the event loop: one more middleware that says nothing about
blocking, and has no hooks. ``DJANGO_SETTINGS_MODULE=bench.hop_middleware``."""

from __future__ import annotations

from django.utils.deprecation import MiddlewareMixin

from toolnexus_site.settings import *  # noqa: F403  (the site's settings, then the extra)
from toolnexus_site.settings import MIDDLEWARE as SITE_MIDDLEWARE


class UndeclaredMiddleware(MiddlewareMixin):
    """Does nothing, and does not declare ``loop_safe``: the chain takes the thread hop."""


MIDDLEWARE = [*SITE_MIDDLEWARE, "bench.hop_middleware.UndeclaredMiddleware"]
