from django.apps import AppConfig


class A2AConfig(AppConfig):
    name = "a2a"
    label = "a2a"
    verbose_name = "A2A agent"

    def ready(self) -> None:
        from a2a import push
        from a2a.ops import checks, deployment, observability  # noqa: F401  (importing registers the system checks)

        observability.install()  # transition logs and metrics for every saved task version
        push.install()  # push notifications for every saved task version
