"""File parts through Django's storage (docs/files.md): a file part whose content is over
``A2A_FILES_OFFLOAD_BYTES`` is written to the ``STORAGES`` alias ``A2A_FILES_STORAGE``
under its task's prefix (``a2a-files/<task id>/``) and the stored task keeps a ``uri`` part in
its place: the agent's download route (:mod:`a2a.http.files`), which serves it to the
task's owner only, or the storage's own signed, expiring URL where it signs them
(django-storages' ``querystring_auth``). The base64 content is decoded into the storage
in chunks; ``A2A_FILES_MAX_PART_BYTES`` and ``A2A_FILES_MAX_TASK_BYTES`` refuse a message
with -32600 (HTTP 413). The files of a deleted task go with it (:func:`install`).

A stored file is its task's alone: :func:`open_part` (what a handler reads) and the
download route open only the task's own files, and :func:`check_references` refuses a
message naming another task's stored file before anything is written (a client could name
another caller's file otherwise, and read it through the handler).

A file is written whole before the task that references it is saved, so a task never
references a partial file, and the download route serves only a file its task references
(:func:`referenced`). A crash between the two, or a message refused after its files were
written, leaves a file no task references: :mod:`a2a.core.file_orphans` finds and removes
those once older than ``A2A_FILES_ORPHAN_GRACE``."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from django.core.files import File
from django.core.files.storage import Storage, storages
from django.utils.text import get_valid_filename

from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.protocol import timeline
from a2a.protocol.errors import InvalidParamsError, PayloadTooLargeError
from a2a.protocol.model import Artifact, Message, Part, Task
from stores.fields import FILE_BYTES
from stores.retention import tasks_deleted
from stores.scope import task_tenant

#: Base64 characters decoded at a time (a multiple of 4): 1 MiB of content.
_CHUNK = 4 * 256 * 1024
#: The key :func:`offload` gives a file: 32 random hex digits, then its (valid) filename.
_KEY = re.compile(r"[0-9a-f]{32}-[^/\\]+")


def storage() -> Storage:
    """The storage offloaded file parts live in (``STORAGES[A2A_FILES_STORAGE]``)."""
    return storages[a2a_settings.FILES_STORAGE]


def prefix(task_id: str) -> str:
    """The storage directory of one task's files."""
    return f"a2a-files/{task_id}"


def content_size(encoded: str) -> int:
    """Bytes of a base64 string's content, without decoding it."""
    return len(encoded) * 3 // 4 - encoded[-2:].count("=") if encoded else 0


class _Base64Reader(io.RawIOBase):
    """A file reading the content of a base64 string, decoded a chunk at a time."""

    def __init__(self, encoded: str) -> None:
        self._encoded, self._at, self._pending = encoded, 0, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending and self._at < len(self._encoded):
            self._pending = base64.b64decode(self._encoded[self._at : self._at + _CHUNK])
            self._at += _CHUNK
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count


def _check_size(size: int, total: int) -> None:
    part_limit, task_limit = a2a_settings.FILES_MAX_PART_BYTES, a2a_settings.FILES_MAX_TASK_BYTES
    if part_limit is not None and size > part_limit:
        raise PayloadTooLargeError(f"A file part of {size} bytes is over A2A_FILES_MAX_PART_BYTES ({part_limit})")
    if task_limit is not None and total > task_limit:
        raise PayloadTooLargeError(
            f"The task's file parts, {total} bytes, are over A2A_FILES_MAX_TASK_BYTES ({task_limit})"
        )


def _url(name: str, base: str, tenant: str) -> str:
    store = storage()
    if getattr(store, "querystring_auth", False):  # the storage signs its own, expiring URLs
        return store.url(name)
    return f"{base}files/{name.removeprefix('a2a-files/')}" + (f"?tenant={tenant}" if tenant else "")


def carries_bytes(parts: Iterable[Part]) -> bool:
    """Whether any of ``parts`` is a file part with its content inline (what :func:`offload`
    may write to the storage): the cheap test that spares every other message the work."""
    return any(p.get("kind") == "file" and "bytes" in (p.get("file") or {}) for p in parts)


def offload(
    parts: list[Part],
    task_id: str,
    *,
    base: str,
    tenant: str = "",
    total: int = 0,
    check: bool = True,
    written: list[str] | None = None,
) -> int:
    """Write each file part of ``parts`` over ``A2A_FILES_OFFLOAD_BYTES`` to the storage,
    replacing it (in place) with a ``uri`` part under ``base`` (the agent's JSON-RPC URL);
    returns ``total`` plus the bytes of file content the parts carry; ``written`` gets the
    storage name of each file written. PayloadTooLargeError (-32600, HTTP 413) over a
    limit, before anything is written."""
    inline = [p["file"]["bytes"] for p in parts if p.get("kind") == "file" and "bytes" in p.get("file", {})]
    for encoded in inline:
        total += content_size(encoded)
        if check:
            _check_size(content_size(encoded), total)
    for part in parts:
        file = part.get("file") or {}
        if part.get("kind") != "file" or "bytes" not in file:
            continue
        if content_size(file["bytes"]) <= a2a_settings.FILES_OFFLOAD_BYTES:
            continue
        key = f"{uuid.uuid4().hex}-{get_valid_filename(file.get('name') or 'file')[-100:]}"
        content = File(io.BufferedReader(_Base64Reader(file["bytes"])), name=key)
        content.size = content_size(file["bytes"])
        name = storage().save(f"{prefix(task_id)}/{key}", content)
        if written is not None:
            written.append(name)
        part["file"] = {k: v for k, v in file.items() if k != "bytes"} | {"uri": _url(name, base, tenant)}
    return total


def offload_message(message: Message, task: Task, *, base: str) -> list[str]:
    """:func:`offload` for one message of ``task``, counting its file bytes in the task;
    the storage names of the files written (for :func:`discard` when the message is refused)."""
    written: list[str] = []
    total = offload(
        message.get("parts") or [],
        task["id"],
        base=base,
        tenant=task_tenant(task),
        total=int(task.get(FILE_BYTES) or 0),
        written=written,
    )
    if total:
        task[FILE_BYTES] = total
    return written


def offload_artifacts(artifacts: list[Artifact], task_id: str, agent: Agent) -> bool:
    """:func:`offload` for a handler's artifacts (no limits: the handler's own output);
    their ``uri`` parts under ``A2A_PUBLIC_URL`` (a path when it is not set). Whether any
    part was offloaded."""
    if not carries_bytes(p for a in artifacts for p in a.get("parts") or ()):
        return False
    base = (a2a_settings.PUBLIC_URL or "").rstrip("/") + agent.path("jsonrpc")
    before = [p.get("file", {}).get("uri") for a in artifacts for p in a.get("parts") or ()]
    for artifact in artifacts:
        offload(artifact.get("parts") or [], task_id, base=base, check=False)
    return before != [p.get("file", {}).get("uri") for a in artifacts for p in a.get("parts") or ()]


def marked(change: Callable[[Task], Task | None]) -> Callable[[Task], Task | None]:
    """``change``, marking the task as one with stored files (deleted with it)."""

    def mark(task: Task) -> Task | None:
        changed = change(task)
        if changed is not None:
            changed[FILE_BYTES] = int(changed.get(FILE_BYTES) or 0) or 1
        return changed

    return mark


def stored_name(part: Part) -> str | None:
    """The storage name a file part's URI names, of any task: its path ends with
    ``files/<task id>/<key>`` (the download routes) or ``a2a-files/<task id>/<key>`` (the
    storage's own URL), the key as :func:`offload` makes it; None for another part."""
    uri = (part.get("file") or {}).get("uri") if part.get("kind") == "file" else None
    if not uri:
        return None
    segments = unquote(urlsplit(uri).path).rstrip("/").split("/")
    if len(segments) < 3 or segments[-3] not in ("files", "a2a-files"):
        return None
    task_id, key = segments[-2:]
    if task_id in ("", ".", "..") or "\\" in task_id or not _KEY.fullmatch(key):
        return None
    return f"{prefix(task_id)}/{key}"


def task_file(part: Part, task_id: str) -> str | None:
    """The storage name of a file part's stored file if it is one of task ``task_id``'s;
    None for any other part, and for one naming another task's file."""
    name = stored_name(part)
    return name if name is not None and name.startswith(prefix(task_id) + "/") else None


def referenced(task: Task) -> set[str]:
    """The storage names of the files ``task`` references: the offloaded parts of its
    history, its status message, its timeline's messages (a2a.protocol.timeline: an
    earlier status's too) and its artifacts, under its own prefix (a part naming another
    task's file is not this task's)."""
    said = [e.get("message") or (e.get("status") or {}).get("message") or {} for e in timeline.entries(task)]
    messages = [*(task.get("history") or ()), (task.get("status") or {}).get("message") or {}, *said]
    parts = [p for m in messages for p in m.get("parts") or ()]
    parts += [p for a in task.get("artifacts") or () for p in a.get("parts") or ()]
    return {name for part in parts if (name := task_file(part, task["id"])) is not None}


def check_references(parts: Iterable[Part], task_id: str, origin: str) -> None:
    """InvalidParamsError (-32602) for a part of a client's message to task ``task_id``
    (a new one's id, or the task a follow-up continues) that names a stored file of
    another task on this agent: its download route on ``origin``'s host (the request's) or
    on none, or the storage's own URL. A client names only its task's own files (a
    follow-up, the earlier turns'); another's, it sends as content. Another host's URL is an
    external one, kept as sent: :func:`open_part` reads no stored file for it either."""
    for i, part in enumerate(parts):
        name = stored_name(part)
        if name is not None and task_file(part, task_id) is None and _names_ours(part["file"]["uri"], name, origin):
            raise InvalidParamsError(
                "names a stored file of another task; send the file's content instead", field=f"message.parts[{i}]"
            )


def _names_ours(uri: str, name: str, origin: str) -> bool:
    """Whether ``uri`` (naming storage name ``name``) is on this agent's host, or the
    storage's own (signed) URL's, rather than another server's."""
    host = urlsplit(uri).netloc.lower()
    if not host or host == urlsplit(origin).netloc.lower():
        return True
    store = storage()
    return bool(getattr(store, "querystring_auth", False)) and urlsplit(store.url(name)).netloc.lower() == host


def open_part(part: Part, task_id: str) -> IO[bytes]:
    """The content of a file part of task ``task_id`` (a handler's ``request.task_id``),
    inline or offloaded, as a binary file. FileNotFoundError for any other URI: an
    external URL, or a stored file of another task (another caller's, tenant's or agent's)."""
    file = part.get("file") or {}
    if "bytes" in file:
        return io.BytesIO(base64.b64decode(file["bytes"]))
    name = task_file(part, task_id)
    if name is None:
        raise FileNotFoundError(f"Not a stored file of task {task_id}: {file.get('uri')!r}")
    return storage().open(name, "rb")


class AdminFiles:
    """The offloaded parts, for the admin's download links (stores.admin.StoredFiles)."""

    def holds(self, part: Part) -> bool:
        return "bytes" not in (part.get("file") or {}) and stored_name(part) is not None

    def open(self, task_id: str, part: Part) -> IO[bytes]:
        return open_part(part, task_id)


def delete_files(task_ids: list[str]) -> None:
    """Delete the stored files of these tasks, and their directories."""
    store = storage()
    for task_id in task_ids:
        try:
            _dirs, names = store.listdir(prefix(task_id))
        except (FileNotFoundError, NotADirectoryError):
            continue
        discard([f"{prefix(task_id)}/{name}" for name in names])


def discard(names: Iterable[str]) -> None:
    """Delete these stored files, then each directory they leave empty."""
    store, emptied = storage(), set()
    for name in names:
        store.delete(name)
        emptied.add(name.rsplit("/", 1)[0])
    for directory in emptied:
        remove_empty_directory(directory)


def remove_empty_directory(directory: str, *, older_than: float | None = None) -> bool:
    """Remove ``directory`` of the storage if it is empty (and, with ``older_than``, was last
    changed more than that many seconds ago); whether it was removed. Only a storage with
    directories (a local path: FileSystemStorage) has one to remove."""
    try:
        path = storage().path(directory)
    except NotImplementedError:  # a remote storage (S3, GCS): a prefix, not a directory
        return False
    with contextlib.suppress(OSError):  # not empty, gone already, or not a directory
        if older_than is None or os.path.getmtime(path) < time.time() - older_than:
            os.rmdir(path)
            return True
    return False


def _on_tasks_deleted(*, tasks: list[Task], moved_to: object = None, **kwargs: Any) -> None:
    if moved_to is None:  # a move keeps them: the copy references the same files
        delete_files([task["id"] for task in tasks if task.get(FILE_BYTES)])


def install() -> None:
    """Delete a task's files whenever tasks are deleted (retention, prune, the admin)."""
    tasks_deleted.connect(_on_tasks_deleted, dispatch_uid="a2a.core.files")
