"""tests.urls with the front page a project may add at "/" (a2a.urls.home)."""

from django.urls import include, path

from tests.urls import urlpatterns as project

urlpatterns = [path("", include("a2a.urls.home")), *project]
