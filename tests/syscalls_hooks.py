"""A file-store system-call backend that runs a test's hooks around another backend's
calls: a test watches or fails the store's calls on either backend (the ``file_syscalls``
fixture), without replacing ``os`` functions the C companion never calls."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from stores.file.syscalls import Syscalls

#: A hook: called with the real method and its arguments, in its place.
Hook = Callable[..., Any]


class Hooked:
    """``inner``, with ``hooks[name](real method, *args)`` run in place of each method named."""

    def __init__(self, inner: Syscalls, **hooks: Hook) -> None:
        self.inner, self.hooks = inner, hooks
        self.name, self.description = inner.name, inner.description

    def _call(self, name: str, *args: Any) -> Any:
        real = getattr(self.inner, name)
        hook = self.hooks.get(name)
        return real(*args) if hook is None else hook(real, *args)

    def write_replace(self, temp: str, target: str, data: bytes, fsync: bool, /) -> int | None:
        return self._call("write_replace", temp, target, data, fsync)

    def read(self, path: str | os.PathLike[str], size: int, to_end: bool, /) -> bytes:
        return self._call("read", path, size, to_end)

    def append(self, fd: int, line: bytes, path: str | os.PathLike[str], /) -> tuple[int, int, int] | None:
        return self._call("append", fd, line, path)

    def fsync_if_same(self, path: str | os.PathLike[str], fd: int, device: int, inode: int, /) -> bool:
        return self._call("fsync_if_same", path, fd, device, inode)


def failing(exc: OSError) -> Hook:
    """A hook that fails the call with ``exc`` (nothing done)."""

    def fail(real: Callable[..., Any], *args: Any) -> Any:
        raise exc

    return fail
