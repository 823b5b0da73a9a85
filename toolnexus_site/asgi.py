"""ASGI entry point: ``uvicorn toolnexus_site.asgi:application``.

Static files (the admin's) are served from STATIC_ROOT by Django's own ASGI static
handler, which leaves every other request to the fully async stack (a sync-only
static middleware would push every A2A request through a thread hop).

Once the application is built, the objects of the start-up (Django, the apps, the URL
conf, the handlers) are frozen out of the garbage collector's way (``gc.freeze()``): they
live as long as the process, and a full collection no longer scans them all, which
stalled the event loop for as long (docs/deployment.md, "Middleware and the fast path").
"""

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from a2a.asgi import get_asgi_application

application = ASGIStaticFilesHandler(get_asgi_application())
gc.collect()  # what the start-up left as garbage is freed, not kept for the process's life
gc.freeze()
