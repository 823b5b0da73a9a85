"""Test settings: the example site's, on the memory store, with an optional second
database on PostgreSQL (alias "postgres") when A2A_TEST_POSTGRES_URL is set."""

import os
import tempfile

import environ

from toolnexus_site.settings import *  # noqa: F403

TASK_STORE = "memory"
A2A_HANDLER = "a2a.handlers.echo"
A2A_BLOCKING_TIMEOUT = 10.0
A2A_SHUTDOWN_GRACE = 2.0
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# A file, not ":memory:": the shared in-memory database locks whole tables, while a
# file in WAL mode lets the runner's threads wait their turn as in production.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",  # noqa: F405
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        "TEST": {"NAME": os.path.join(tempfile.gettempdir(), f"a2a-test-{os.getpid()}.sqlite3")},
    }
}
POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "")
if POSTGRES_URL:
    DATABASES["postgres"] = {**environ.Env.db_url_config(POSTGRES_URL), "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True}
