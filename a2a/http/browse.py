"""The browsable agent: the Agent Card as a page, and a form to talk to the agent.

In the spirit of Django REST framework's browsable API. ``A2A_BROWSABLE_AGENT`` opens
it to staff (the default), to anyone, or not at all. Every call goes through the same
operations as any client (:mod:`a2a.service.operations`), with a
:class:`~a2a.service.context.CallContext` whose caller is the signed-in user as the A2A
authentication names them (their primary key; ``""`` on an agent without
authentication) and whose binding is ``"browser"``.

Progressive enhancement: without JavaScript the form POSTs to the page, which sends the
message blocking and renders the task; with ``a2a/agent.js`` the same form goes to
:func:`stream`, whose SSE events (v1.0 JSON, as ``SendStreamingMessage`` answers) the
script shows as they arrive. The views go through the project's middleware (sessions,
CSRF) even under ``A2A_DIRECT_ASGI``: their URLs are in a namespace of their own.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote as url_quote

import orjson
from django.conf import settings
from django.contrib.admin.utils import quote as admin_quote
from django.contrib.auth.models import AnonymousUser
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from a2a import auth
from a2a.conf import a2a_settings
from a2a.core.files import stored_name
from a2a.http import files
from a2a.http.common import event_stream, origin, public_url, request_agent
from a2a.http.sse import sse_stream
from a2a.protocol import V10
from a2a.protocol.errors import A2AError, ContentTypeNotSupportedError, InvalidParamsError
from a2a.protocol.model import CancelParams, GetParams, Message, SendParams, Task, new_id, task_state
from a2a.service import card, operations
from a2a.service.context import CallContext
from a2a.service.mcp_endpoint import mcp_url
from stores.fields import joined_parts, task_binding, task_delegations
from stores.timeline import Step, in_order

#: The states after which the conversation with a task is over.
FINAL = frozenset({"completed", "canceled", "failed", "rejected"})
#: The states in which the task waits on the user (its status message a question).
ANSWERABLE = frozenset({"input-required", "auth-required"})


View = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


class _Refused(Exception):
    """The visitor may not use the page: ``response`` says why (a login redirect, 403, 404)."""

    def __init__(self, response: HttpResponseBase) -> None:
        self.response = response


def _sending(view: Callable[[HttpRequest, CallContext], Awaitable[HttpResponseBase]]) -> View:
    """``view`` as a POST-only page view that sends: called with the visitor's call
    context, or not at all (405 for another method, the visitor's refusal)."""

    @functools.wraps(view)
    async def posted(request: HttpRequest) -> HttpResponseBase:
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        try:
            ctx = await _visitor(request, sending=True)
        except _Refused as refused:
            return refused.response
        assert ctx is not None  # a sending visitor has a context, or is refused
        return await view(request, ctx)

    return posted


def _login_redirect(request: HttpRequest) -> HttpResponseRedirect:
    try:
        login = reverse("admin:login")
    except NoReverseMatch:  # no admin: Django's LOGIN_URL
        login = str(settings.LOGIN_URL)
    return HttpResponseRedirect(f"{login}?next={url_quote(request.get_full_path())}")


def browsable_mode() -> str:
    """``A2A_BROWSABLE_AGENT`` as ``"staff"``, ``"public"`` or ``""`` (off: False, or
    "false"/"off"/"0"/"no" from the environment); any other value is ``"staff"``."""
    value = a2a_settings.BROWSABLE_AGENT
    text = str(value).strip().lower() if value not in (None, False) else ""
    if text in ("", "false", "off", "0", "no", "none"):
        return ""
    return "public" if text == "public" else "staff"


async def _visitor(request: HttpRequest, *, sending: bool) -> CallContext | None:
    """The call context the visitor sends with (None: they may only look at the card).

    Raises :class:`_Refused` when the page is off, or when it is for staff and the
    visitor is not."""
    mode = browsable_mode()
    if not mode:
        raise _Refused(HttpResponse("Not found", status=404, content_type="text/plain"))
    user = await request.auser() if hasattr(request, "auser") else AnonymousUser()
    staff = bool(user.is_authenticated and user.is_active and user.is_staff)
    if mode != "public" and not staff:
        if sending and user.is_authenticated:
            raise _Refused(HttpResponse("Staff only", status=403, content_type="text/plain"))
        raise _Refused(_login_redirect(request))
    agent = request_agent(request)
    authenticated_agent = bool(auth.authenticators(agent))
    if authenticated_agent and not staff:
        # A public page on an agent with authentication: anyone sees the card; only
        # staff send (an anonymous visitor has no principal to own the task).
        if sending:
            raise _Refused(HttpResponse("Sign in as staff to talk to this agent", status=403))
        return None
    caller = str(user.pk) if authenticated_agent else ""
    return CallContext(caller=caller, version="1.0", binding="browser", origin=origin(request), agent_name=agent.name)


# --- Reading the form --------------------------------------------------------------------


def _message(request: HttpRequest) -> Message:
    """The message the form describes: its text, its attached file (bytes, base64) and,
    when it answers a task (``input-required``), that task's ids; checked as a v1.0
    client's message is (``A2A_MAX_PARTS``, ``A2A_MAX_TEXT_LENGTH``...)."""
    parts: list[dict[str, Any]] = []
    text = request.POST.get("text", "")
    if text.strip():
        parts.append({"text": text})
    upload = request.FILES.get("file")
    if isinstance(upload, UploadedFile) and upload.size:
        if upload.size > a2a_settings.MAX_BODY_BYTES:
            raise InvalidParamsError(f"The file is larger than {a2a_settings.MAX_BODY_BYTES} bytes")
        parts.append(
            {
                "raw": base64.b64encode(upload.read()).decode("ascii"),
                "mediaType": upload.content_type or "application/octet-stream",
                "filename": upload.name or "upload",
            }
        )
    if not parts:
        raise InvalidParamsError("Type a message or attach a file")
    raw: dict[str, Any] = {"role": "ROLE_USER", "messageId": new_id(), "parts": parts}
    for key in ("taskId", "contextId"):
        if request.POST.get(key, "").strip():
            raw[key] = request.POST[key].strip()
    return V10.parse_message(raw)


#: Media types named in words on the page; any other ``type/sub`` is "SUB files (type/sub)".
_MEDIA_WORDS = {"text/plain": "text", "application/json": "JSON data", "*/*": "any file"}


def _media_words(media: str) -> str:
    """``text/csv`` as a person reads it: "CSV files (text/csv)"."""
    major, _, minor = media.partition("/")
    if media in _MEDIA_WORDS:
        words = _MEDIA_WORDS[media]
    elif minor == "*":
        words = f"{major} files"
    elif minor.isalnum() and len(minor) <= 5:
        words = f"{minor.upper()} files"
    else:
        return f"files of type {media}"
    return f"{words} ({media})"


def _in_words(exc: A2AError, ctx: CallContext) -> A2AError:
    """The page's refusal of ``exc``: a part of a type the agent does not take said in
    words, with what it takes (the protocol's own wording names ``message.parts[i]``);
    any other error as it is."""
    if not isinstance(exc, ContentTypeNotSupportedError) or "mediaType" not in exc.metadata:
        return exc
    accepted = ctx.agent.settings.INPUT_MODES
    accepted = a2a_settings.INPUT_MODES if accepted is None else accepted
    takes = ", ".join(_media_words(m) for m in accepted) or "nothing"
    said = f"This agent does not accept {_media_words(str(exc.metadata['mediaType']))}. It accepts: {takes}."
    return ContentTypeNotSupportedError(said, metadata=exc.metadata)


# --- Showing a task ------------------------------------------------------------------------


def _part_view(part: dict[str, Any]) -> dict[str, str]:
    kind = part.get("kind", "text")
    if kind == "text":
        return {"kind": "text", "text": str(part.get("text", ""))}
    if kind == "file":
        file = part.get("file") or {}
        name = file.get("name") or file.get("uri") or "file"
        size = f", {len(base64.b64decode(file['bytes'], validate=False))} bytes" if file.get("bytes") else ""
        shown = {"kind": "file", "text": f"{name} ({file.get('mimeType') or 'unknown type'}{size})"}
        stored = stored_name(part)
        if stored is not None:  # an offloaded part: the page's own link (its sign-in, not A2A's)
            shown["url"] = "files/" + stored.removeprefix("a2a-files/")
        return shown
    return {"kind": "data", "text": json.dumps(part.get("data"), indent=2, ensure_ascii=False)}


def admin_url(task_id: str) -> str:
    """The task's page in the admin ("" when the admin is not installed)."""
    try:
        return reverse("admin:stores_taskrecord_change", args=[admin_quote(task_id)])
    except NoReverseMatch:
        return ""


def _said(role: str, parts: list[dict[str, Any]], *, extra: str = "", artifact: dict | None = None) -> dict[str, Any]:
    """One line of the conversation: who says it (``user``, ``agent``, or ``status`` for a
    status message that is no question), its parts as the page shows them, more classes
    (``artifact``, ``question``), and for an artifact its name and id (the script grows
    the reply of that id when more chunks come)."""
    return {
        "role": role,
        "classes": f"{role} {extra}".strip(),
        "name": (artifact or {}).get("name") or "",
        "artifact": (artifact or {}).get("artifactId") or "",
        "parts": [_part_view(p) for _, p in joined_parts(parts)],  # a streamed reply's chunks as one text
    }


def conversation(task: Task) -> list[dict[str, Any]]:
    """The task as a conversation: its timeline in order (the user's messages, the agent's
    statuses, each artifact where it began; :func:`stores.timeline.in_order`), or for a
    task kept without one its history, then its artifacts; then its status message when
    not yet shown (why it failed, what it waits for). An artifact's streamed chunks are
    one reply; no line for a status without a message."""
    message = (task.get("status") or {}).get("message")
    answerable = task_state(task) in ANSWERABLE
    asked = message.get("messageId") if message and answerable else None
    ordered: list[Step] | None = in_order(task)
    if ordered is None:
        ordered = [("message", i, m) for i, m in enumerate(task.get("history") or ())]
        ordered += [("artifact", i, a) for i, a in enumerate(task.get("artifacts") or ())]
    lines: list[dict[str, Any]] = []
    shown: set[Any] = set()
    for kind, _, item in ordered:
        said = item if kind == "message" else item.get("message")
        if kind == "artifact":
            lines.append(_said("agent", item.get("parts", []), extra="artifact", artifact=item))
        elif isinstance(said, dict) and not (said.get("messageId") and said["messageId"] in shown):
            shown.add(said.get("messageId"))
            state = task_state(task) if kind == "message" else str(item.get("state") or "")
            lines.append(_line(said, asked, kind == "message" or state in ANSWERABLE, state))
    if message and message.get("messageId") not in shown:
        lines.append(_line(message, asked, answerable, task_state(task)))
    return lines


def _line(message: Message, asked: str | None, spoken: bool, state: str) -> dict[str, Any]:
    """A message's line: the user's, the agent's (a question when it is the one the task
    waits on), or, for an agent status message no question (progress, a failure), a
    status line naming the ``state`` it came with."""
    if message.get("role") == "user":
        return _said("user", message.get("parts", []))
    if asked and message.get("messageId") == asked:
        return _said("agent", message.get("parts", []), extra="question")
    return {**_said("agent" if spoken else "status", message.get("parts", [])), "state": state}


def task_view(task: Task | Message, sent: Message | None = None) -> dict[str, Any]:
    """What the template shows of a task (or of the direct reply Message that stands for
    one, after the message ``sent``)."""
    if task.get("kind") == "message":
        asked = [_said("user", sent.get("parts", []))] if sent else []
        return {"conversation": [*asked, _said("agent", task.get("parts", []))], "state": "completed", "final": True}
    state = task_state(task)
    return {
        "id": task["id"],
        "contextId": task.get("contextId", ""),
        "state": state,
        "final": state in FINAL,
        "answerable": state in ANSWERABLE,
        "conversation": conversation(task),
        "admin_url": admin_url(task["id"]),
        "delegations": task_delegations(task),  # the remote tasks its handler started
        "binding": task_binding(task),  # where its latest message came from (MCP, an A2A binding)
    }


def _card_view(request: HttpRequest) -> dict[str, Any]:
    agent = card.build_card(
        public_url(request, "jsonrpc"), version="1.0", rest=public_url(request, "rest"), agent=request_agent(request)
    )
    return {
        **agent,
        "capability_list": sorted((agent.get("capabilities") or {}).items()),
        "security_list": [
            (name, json.dumps(scheme, indent=2)) for name, scheme in (agent.get("securitySchemes") or {}).items()
        ],
    }


def _page(
    request: HttpRequest,
    ctx: CallContext | None,
    *,
    task: Task | Message | None = None,
    sent: Message | None = None,
    error: str = "",
    typed: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "typed": typed,
        "card": _card_view(request),
        "can_send": ctx is not None,
        "caller": ctx.caller if ctx else "",
        "task": task_view(task, sent) if task is not None else None,
        "error": error,
        "stream_url": request_agent(request).path("browse:stream"),
        "cancel_url": request_agent(request).path("browse:cancel"),
        "admin_url_template": admin_url("TASKID"),
        "card_url": request_agent(request).path("agent-card"),
        "mcp_url": mcp_url(request_agent(request), request),
    }
    return render(request, "a2a/agent.html", context, status=status)


# --- Views ----------------------------------------------------------------------------------


async def agent(request: HttpRequest) -> HttpResponseBase:
    """GET: the card and the form (``?task=<id>`` shows that task). POST: send the form's
    message blocking and show the task (the page without JavaScript)."""
    try:
        ctx = await _visitor(request, sending=request.method == "POST")
    except _Refused as refused:
        return refused.response
    if request.method == "POST":
        assert ctx is not None
        try:
            sent = _message(request)
            answer = await operations.send_message(SendParams(message=sent, blocking=True), ctx)
        except A2AError as exc:  # the visitor's text stays in the form, to fix and send again
            typed = request.POST.get("text", "")
            return _page(request, ctx, error=_in_words(exc, ctx).message, typed=typed, status=400)
        return _page(request, ctx, task=answer, sent=sent)
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD, POST"})
    task_id = request.GET.get("task", "")
    if task_id and ctx is not None:
        try:
            return _page(request, ctx, task=await operations.get_task(GetParams(id=task_id), ctx))
        except A2AError as exc:
            return _page(request, ctx, error=exc.message, status=404)
    return _page(request, ctx)


def _json_error(error: A2AError, status: int = 400) -> HttpResponse:
    return HttpResponse(
        orjson.dumps({"error": V10.render_error(error)}), content_type="application/json", status=status
    )


async def file(request: HttpRequest, task_id: str, key: str) -> HttpResponseBase:
    """An offloaded file part of a task the visitor owns (the task view's links): 404 for
    anyone else, as on the A2A route (:func:`a2a.http.files.serve`)."""
    try:
        ctx = await _visitor(request, sending=False)
    except _Refused as refused:
        return refused.response
    if ctx is None:
        raise Http404("No such file")
    return await files.serve(request, ctx, task_id, key)


@_sending
async def stream(request: HttpRequest, ctx: CallContext) -> HttpResponseBase:
    """POST the form here: SSE events of ``SendStreamingMessage`` in v1.0 JSON (``task``,
    ``statusUpdate``, ``artifactUpdate``, ``message``); an error before the first event
    is a JSON ``{"error": ...}`` with status 400."""
    try:
        items = operations.stream_message(SendParams(message=_message(request)), ctx)
        first = await anext(items)
    except A2AError as exc:
        return _json_error(_in_words(exc, ctx))
    return event_stream(
        sse_stream(
            first,
            items,
            lambda item: orjson.dumps(V10.render_stream_item(item)),
            lambda error: orjson.dumps({"error": V10.render_error(error)}),
        )
    )


@_sending
async def cancel(request: HttpRequest, ctx: CallContext) -> HttpResponseBase:
    """POST ``taskId``: cancel the task. The script gets the task as v1.0 JSON (it sends
    ``Accept: application/json``); a plain form gets the page showing the task."""
    wants_json = "application/json" in request.headers.get("Accept", "")
    task_id = request.POST.get("taskId", "")
    try:
        task = await operations.cancel_task(CancelParams(id=task_id), ctx)
    except A2AError as exc:
        if wants_json:
            return _json_error(exc, exc.http_status)
        return _page(request, ctx, error=exc.message, status=exc.http_status)
    if wants_json:
        return JsonResponse({"task": V10.render_task(task)})
    return _page(request, ctx, task=task)
