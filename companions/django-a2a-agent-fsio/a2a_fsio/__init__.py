"""The file store's system calls in C (``a2a_fsio._syscalls``): the opt-in companion of
django-a2a-agent, whose file store (``stores.file.syscalls``) uses it when it is installed."""

__version__ = "0.1.0"
