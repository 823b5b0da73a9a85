from django.apps import AppConfig


class StoresConfig(AppConfig):
    name = "stores"
    verbose_name = "A2A task store"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from stores import checks  # noqa: F401  (registers the system checks)
