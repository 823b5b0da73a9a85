from django.apps import AppConfig


class A2AConfig(AppConfig):
    name = "a2a"
    label = "a2a"
    verbose_name = "A2A agent"

    def ready(self) -> None:
        # Imported once the app registry is ready (they reach models and other apps).
        from a2a import push
        from a2a.core import files
        from a2a.ops import bulk, checks, observability  # noqa: F401  (registers the checks)
        from stores.admin import register_stored_files, register_task_actions

        register_task_actions(bulk.AdminActions())
        register_stored_files(files.AdminFiles())  # the admin downloads offloaded file parts
        observability.install()  # transition logs and metrics for every saved task version
        files.install()  # a deleted task's stored files go with it
        push.install()  # push notifications for every saved task version
