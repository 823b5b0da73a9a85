"""Settings of the example deployment. Every value can come from the environment
(or a ``.env`` file beside ``manage.py``), under the setting's own name."""

from pathlib import Path

import environ

from a2a.conf import from_environment
from toolnexus_site.framework_agents import installed as framework_agents

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("SECRET_KEY", default="insecure-development-key-set-SECRET_KEY-in-production")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",  # tokens for a2a.auth's bearer / API-key authentication
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
# Django's FallbackStorage, built on a message's first use rather than for every request
# (an A2A call never uses one): docs/deployment.md, "Middleware and the fast path".
MESSAGE_STORAGE = "a2a.http.messages.LazyFallbackStorage"

ROOT_URLCONF = "toolnexus_site.urls"
ASGI_APPLICATION = "toolnexus_site.asgi.application"
WSGI_APPLICATION = "toolnexus_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "toolnexus_site" / "templates"],  # the front page's
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

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Keep connections open between uses (the task store's worker threads reuse theirs),
# checked before reuse so a restarted database costs one reconnect, not an error.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock up front
    # instead of failing with "database is locked" halfway through a transaction.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        transaction_mode="IMMEDIATE",
        timeout=20,
    )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Where the default storage keeps uploads, offloaded file parts among them (a2a.core.files).
MEDIA_ROOT = env("MEDIA_ROOT", default=str(BASE_DIR / "media"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "a2a": {"handlers": ["console"], "level": env("A2A_LOG_LEVEL", default="INFO")},
        "stores": {"handlers": ["console"], "level": env("A2A_LOG_LEVEL", default="INFO")},
    },
}

# --- The A2A agent (defaults in a2a/conf/declarations.py; each overridable by an env var)
TASK_STORE = "file:./tasks"
# Every agent an MCP server too, at <agent>/mcp (a2a/mcp/, docs/mcp.md).
A2A_MCP = True
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
# A second agent (docs/agents.md), served at /agents/shout/ (toolnexus_site/urls.py): its
# own card, handler and skills; listed with the first in /.well-known/ai-catalog.json.
A2A_AGENTS = {
    "shout": {
        "AGENT_NAME": "toolnexus-shout",
        "AGENT_DESCRIPTION": "Replies with the text it was sent, in capitals.",
        "HANDLER": "a2a.handlers.upper",
        "SKILLS": [
            {
                "id": "shout",
                "name": "Shout",
                "description": "Replies in capitals; a second agent beside the first, with its own tasks.",
                "tags": ["upper", "demo"],
                "examples": ["hello"],
            }
        ],
    }
}
# One agent per framework whose extra is installed (toolnexus_site/agents/), served at
# /agents/pydantic-ai/, /agents/langgraph/, /agents/openai-agents/; offline by default.
# FRAMEWORK_AGENTS=false leaves them out where the extras are installed for other reasons
# (the benchmarks serve the site as `make run` does, without them).
if env.bool("FRAMEWORK_AGENTS", default=True):
    A2A_AGENTS.update(framework_agents())
globals().update(from_environment())

# A2A_EXECUTOR=tasks: tasks are fulfilled by queue workers (docs/deployment.md). The queue is
# TASKS_BACKEND: in this database by default (django-tasks-db, `manage.py db_worker`), or on
# RQ ("django_tasks_rq.RQBackend": `manage.py rqworker --job-class django_tasks_rq.Job default`)
# or Celery ("django_tasks_fennel.CeleryBackend": `celery -A django_tasks_fennel.app worker`),
# both with Redis at TASKS_BROKER_URL as the broker.
if str(globals().get("A2A_EXECUTOR", "thread")).startswith("tasks"):
    TASKS_BACKEND = env("TASKS_BACKEND", default="django_tasks_db.DatabaseBackend")
    TASKS = {"default": {"BACKEND": TASKS_BACKEND}}
    TASKS_BROKER_URL = env("TASKS_BROKER_URL", default="redis://127.0.0.1:6379/0")
    if TASKS_BACKEND.startswith("django_tasks_rq."):
        INSTALLED_APPS.append("django_rq")
        # DEFAULT_TIMEOUT: a job runs its task to the end; RQ stops a longer one (the task fails, saying so).
        RQ_QUEUES = {"default": {"URL": TASKS_BROKER_URL, "DEFAULT_TIMEOUT": env.int("TASKS_JOB_TIMEOUT", 3600)}}
    elif TASKS_BACKEND.startswith("django_tasks_fennel."):
        INSTALLED_APPS.append("django_tasks_fennel")
        CELERY_BROKER_URL = CELERY_RESULT_BACKEND = TASKS_BROKER_URL
        CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # a child holds no job while it runs a long task
        CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
    else:
        INSTALLED_APPS.append("django_tasks_db")
