"""ASGI entry point: ``uvicorn toolnexus_site.asgi:application``.

Static files (the admin's) are served from STATIC_ROOT by Django's own ASGI static
handler, which leaves every other request to the fully async stack (a sync-only
static middleware would push every A2A request through a thread hop).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from a2a.asgi import get_asgi_application

application = ASGIStaticFilesHandler(get_asgi_application())
