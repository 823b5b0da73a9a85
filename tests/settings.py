"""The suite's own settings: the least a project needs to run the two apps, on the
memory store, with an optional second database on PostgreSQL (alias "postgres") when
A2A_TEST_POSTGRES_URL is set. Nothing is read from the environment but the test
services' URLs, so a developer's A2A_* variables cannot change what the tests see.
(Tests that start a real server run the example site, toolnexus_site, instead.)"""

import os
import tempfile
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "tests-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "a2a",
    "stores",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
# A file, not ":memory:": the shared in-memory database locks whole tables, while a
# file in WAL mode lets the runner's threads wait their turn as in production.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
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
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- The agent under test ------------------------------------------------------------------
TASK_STORE = "memory"
A2A_HANDLER = "a2a.handlers.echo"
A2A_AGENT_NAME = "toolnexus-agent"
A2A_SKILLS = [
    {
        "id": "echo",
        "name": "Echo",
        "description": "Replies with the text it was sent; replace A2A_HANDLER with your own.",
        "tags": ["echo", "demo"],
        "examples": ["hello"],
    }
]
A2A_BLOCKING_TIMEOUT = 10.0
A2A_SHUTDOWN_GRACE = 2.0
# Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE before any view sees it: let
# A2A_MAX_BODY_BYTES (10 MB by default) be the A2A endpoints' limit, as the example site does.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# The apps log at INFO (as the example site does); pytest captures what propagates to the root.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"a2a": {"level": "INFO"}, "stores": {"level": "INFO"}},
}
