"""Deprecated home of the client's retry policy: it is :mod:`a2a.core.retry`, shared by
every caller that tries again (the names stay importable from here)."""

from a2a.core.retry import NO_RETRIES, RetryPolicy, retry_after

__all__ = ["NO_RETRIES", "RetryPolicy", "retry_after"]
