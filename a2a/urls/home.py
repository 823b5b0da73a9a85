"""A front page at the project's ``/``, for a project that wants one (``/`` is the
project's otherwise): ``path("", include("a2a.urls.home"))`` beside ``a2a.urls``."""

from django.urls import URLPattern, path

from a2a.http.home import home

urlpatterns: list[URLPattern] = [path("", home, name="home")]
