"""The download route of offloaded file parts (:mod:`a2a.core.files`):
``a2a/files/<task id>/<key>`` streams the file to the task's owner, the caller the A2A
endpoints authenticate; anyone else, and an unknown file, gets a 404 (like an unknown task).
Only a file the task references is served: one is referenced once it is written whole,
so a file being written, or left partial by a crash, is never served."""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import AsyncIterator
from typing import IO

from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header

from a2a import auth
from a2a.core import files
from a2a.http.common import call_context, request_agent
from a2a.protocol.errors import A2AError
from a2a.service import operations
from a2a.service.context import CallContext, check_tenant

#: Bytes read from the storage at a time.
CHUNK = 1 << 20


async def _chunks(handle: IO[bytes]) -> AsyncIterator[bytes]:
    """The file a chunk at a time, read off the event loop (an async iterator: Django's ASGI
    handler would read a sync one whole into memory first)."""
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK):
            yield chunk
    finally:
        await asyncio.to_thread(handle.close)


async def download(request: HttpRequest, task_id: str, key: str) -> StreamingHttpResponse:
    """The file ``key`` of task ``task_id``, streamed from the storage, as an attachment."""
    try:
        caller = await auth.authenticate(request, request_agent(request))
        ctx = call_context(request, caller, "rest", tenant=check_tenant(request.GET.get("tenant")))
    except A2AError:
        raise Http404("No such file") from None
    return await serve(request, ctx, task_id, key)


async def serve(request: HttpRequest, ctx: CallContext, task_id: str, key: str) -> StreamingHttpResponse:
    """The file ``key`` of task ``task_id`` to the caller of ``ctx`` (404 unless it owns the
    task): for the A2A route above and the agent page's links (its visitor's context)."""
    if request.method not in ("GET", "HEAD") or key in (".", "..") or "/" in key or "\\" in key:
        raise Http404("No such file")
    try:
        task = await operations.load_task(task_id, ctx)
    except A2AError:
        raise Http404("No such file") from None
    name = f"{files.prefix(task_id)}/{key}"
    store = files.storage()
    if name not in files.referenced(task) or not await asyncio.to_thread(store.exists, name):
        raise Http404("No such file")
    size = await asyncio.to_thread(store.size, name)
    handle = await asyncio.to_thread(store.open, name, "rb")
    filename = key.split("-", 1)[-1]
    media_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    response = StreamingHttpResponse(_chunks(handle), content_type=media_type)
    response["Content-Length"] = str(size)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    response["X-Content-Type-Options"] = "nosniff"
    return response
