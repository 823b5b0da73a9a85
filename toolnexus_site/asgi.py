"""ASGI entry point: ``uvicorn toolnexus_site.asgi:application``."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")

from a2a.asgi import get_asgi_application

application = get_asgi_application()
