from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("a2a.urls")),
    path("agents/", include("a2a.urls.agents")),  # the agents of A2A_AGENTS (tests/test_agents*.py)
]
