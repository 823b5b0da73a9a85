"""WSGI entry point (the ASGI one is preferred: see asgi.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")

application = get_wsgi_application()
