"""Include in the project's root URLconf: ``path("", include("a2a.urls"))``."""

from django.urls import path

from . import views

app_name = "a2a"

urlpatterns = [
    path(".well-known/agent-card.json", views.agent_card, name="agent-card"),
    path(".well-known/agent.json", views.agent_card),  # the pre-0.3 location
    path("a2a/", views.jsonrpc_endpoint, name="jsonrpc"),
    path("a2a", views.jsonrpc_endpoint),
]
