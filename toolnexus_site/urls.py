from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("a2a.urls.home")),  # what this site serves, linked (the admin's "View site")
    path("admin/", admin.site.urls),
    path("", include("a2a.urls")),
    path("agents/", include("a2a.urls.agents")),
]
