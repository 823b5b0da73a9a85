"""Include in the project's root URLconf: ``path("", include("a2a.urls"))``."""

from django.urls import path, re_path

from a2a.http import health as ops_views
from a2a.http import rest, views

app_name = "a2a"

urlpatterns = [
    # Operations: health (200/503 JSON) and Prometheus metrics (a2a/http/health.py).
    path("healthz", ops_views.healthz, name="healthz"),
    path("metrics", ops_views.metrics, name="metrics"),
    path(".well-known/agent-card.json", views.agent_card, name="agent-card"),
    path(".well-known/agent.json", views.agent_card),  # the pre-0.3 location
    path("a2a/", views.jsonrpc_endpoint, name="jsonrpc"),
    path("a2a", views.jsonrpc_endpoint),
    # HTTP+JSON (REST), spec section 11; v0.3 clients put "/v1" before each path.
    path("a2a/rest", rest.get_extended_card, name="rest"),  # the interface URL the card names
    re_path(r"^a2a/rest/(?:v1/)?message:send$", rest.send_message, name="rest-send"),
    re_path(r"^a2a/rest/(?:v1/)?message:stream$", rest.stream_message, name="rest-stream"),
    re_path(r"^a2a/rest/(?:v1/)?tasks$", rest.list_tasks, name="rest-list"),
    re_path(r"^a2a/rest/(?:v1/)?tasks/(?P<task_id>[^/]+):cancel$", rest.cancel_task, name="rest-cancel"),
    re_path(r"^a2a/rest/(?:v1/)?tasks/(?P<task_id>[^/]+):subscribe$", rest.subscribe_to_task, name="rest-subscribe"),
    re_path(r"^a2a/rest/(?:v1/)?tasks/(?P<task_id>[^/:]+)$", rest.get_task, name="rest-get"),
    re_path(
        r"^a2a/rest/(?:v1/)?tasks/(?P<task_id>[^/:]+)/pushNotificationConfigs$", rest.push_configs, name="rest-push"
    ),
    re_path(
        r"^a2a/rest/(?:v1/)?tasks/(?P<task_id>[^/:]+)/pushNotificationConfigs/(?P<config_id>[^/]+)$",
        rest.push_config,
        name="rest-push-config",
    ),
    re_path(r"^a2a/rest/(?:v1/)?(?:extendedAgentCard|card)$", rest.get_extended_card, name="rest-extended-card"),
]

# v1.0 tenant-scoped paths (a2a.proto: "/{tenant}/tasks/{id}", ...): the same views, the
# tenant scoping the request's tasks. Tried after the paths above, so "v1" and the
# first segments of those paths ("tasks", "message:send", ...) are never a tenant.
_TENANT = r"^a2a/rest/(?P<tenant>[^/:]+)/"
urlpatterns += [
    re_path(_TENANT + r"message:send$", rest.send_message),
    re_path(_TENANT + r"message:stream$", rest.stream_message),
    re_path(_TENANT + r"tasks$", rest.list_tasks),
    re_path(_TENANT + r"tasks/(?P<task_id>[^/]+):cancel$", rest.cancel_task),
    re_path(_TENANT + r"tasks/(?P<task_id>[^/]+):subscribe$", rest.subscribe_to_task),
    re_path(_TENANT + r"tasks/(?P<task_id>[^/:]+)$", rest.get_task),
    re_path(_TENANT + r"tasks/(?P<task_id>[^/:]+)/pushNotificationConfigs$", rest.push_configs),
    re_path(_TENANT + r"tasks/(?P<task_id>[^/:]+)/pushNotificationConfigs/(?P<config_id>[^/]+)$", rest.push_config),
    re_path(_TENANT + r"extendedAgentCard$", rest.get_extended_card),
]
