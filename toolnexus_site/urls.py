from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("a2a.urls")),
    path("agents/", include("a2a.urls.agents")),
]
