# The C extension stores/file/_syscalls.c (optional: stores.file.fsio.SYSCALLS is None without it).
import os

def write_replace(
    temp: str | os.PathLike[str], target: str | os.PathLike[str], data: bytes, fsync: bool, /
) -> int | None: ...
def read(path: str | os.PathLike[str], size: int, to_end: bool, /) -> bytes: ...
