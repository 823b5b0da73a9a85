from django.apps import AppConfig


class A2AConfig(AppConfig):
    name = "a2a"
    label = "a2a"
    verbose_name = "A2A agent"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
