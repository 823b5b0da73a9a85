"""Where one ``GetTask``'s instructions go on the default path (``MIDDLEWARE`` on the event
loop), piece by piece, counted by valgrind's callgrind.

    python -m bench.request_cost [-n 200]     # needs valgrind

In process, on the example site's settings (memory store): each piece of the request is
called ``n`` times on its own after a warm-up, with one callgrind dump each, and reported
as instructions per call: the whole request on the default path and on the direct path
(``A2A_DIRECT_ASGI``), the body read, ``ASGIRequest``, the two request signals, the route,
each middleware's hooks (counted as the chain calls them, each one added to those before
it: ``process_request`` and ``process_view`` down, ``process_response`` up, on a new
request each time), the view, and the response sent. What the pieces leave of the whole
is the chain's own work (each level's wrappers, the disconnect listener, the body limit).
Instructions, not time: the machine is shared and a count does not move with its load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.callgrind import measure  # noqa: E402
from bench.lifecycle import asgi_call, rpc_scope  # noqa: E402
from tests.server import site_env  # noqa: E402

ON_A_NEW_REQUEST = ("route (resolve_request)", "the chain (get_response_async)", "view (jsonrpc_endpoint)")


def _pieces(n: int) -> dict[str, Callable[[], Any]]:
    """Each piece's ``n`` calls, by name (an ``async`` piece returns its coroutine)."""
    from django.conf import settings
    from django.core import signals
    from django.core.handlers.asgi import ASGIRequest
    from django.http import HttpResponse
    from django.test import override_settings
    from django.utils.module_loading import import_string

    from a2a.asgi import A2AASGIHandler, get_asgi_application
    from a2a.http import views

    app = get_asgi_application()
    handler = A2AASGIHandler()
    chain = handler.loop_chain
    assert chain is not None, "the site's MIDDLEWARE is not on the loop"
    loop = asyncio.get_event_loop()
    sent = orjson.loads(loop.run_until_complete(asgi_call(app, orjson.dumps(_rpc("SendMessage")), "1.0")))
    body = orjson.dumps(_rpc("GetTask", {"id": sent["result"]["task"]["id"]}))
    scope = rpc_scope(body, "1.0")

    def request() -> ASGIRequest:
        return ASGIRequest(scope, io.BytesIO(body))

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        pass

    def times(call: Callable[[], Any], awaited: bool = False) -> Callable[[], Any]:
        async def many() -> None:  # on the loop, as the chain calls each piece
            for _ in range(n):
                if awaited:
                    await call()
                else:
                    call()

        return lambda: loop.run_until_complete(many())

    def direct() -> None:
        with override_settings(A2A_DIRECT_ASGI=True):
            times(lambda: asgi_call(app, body, "1.0"), awaited=True)()

    response = HttpResponse(b"{}", content_type="application/json")
    started, finished = signals.request_started, signals.request_finished
    pieces: dict[str, Callable[[], Any]] = {
        "nothing (the count's own error)": times(lambda: None),
        "whole request, default path": times(lambda: asgi_call(app, body, "1.0"), awaited=True),
        "whole request, direct path": direct,
        "body read (SpooledTemporaryFile)": times(lambda: handler.read_body(receive), awaited=True),
        "ASGIRequest": times(request),
        "request_started.send": times(lambda: started.send(sender=A2AASGIHandler, scope=scope)),
        "request_finished.send": times(lambda: finished.send(sender=A2AASGIHandler)),
        "route (resolve_request)": times(lambda: chain.resolve_request(request())),
        "the chain (get_response_async)": times(lambda: chain.get_response_async(request()), awaited=True),
        "view (jsonrpc_endpoint)": times(lambda: views.jsonrpc_endpoint(request()), awaited=True),
        "HttpResponse (JSON)": times(lambda: HttpResponse(b"{}", content_type="application/json")),
        "response sent (send_response)": times(lambda: handler.send_response(response, send), awaited=True),
    }
    pieces.update(_mechanics(handler, scope, receive, send, times))
    for signal in (started, finished):
        for receiver in signal._live_receivers(A2AASGIHandler)[0]:
            pieces[f"receiver {receiver.__name__}"] = times(
                lambda receiver=receiver, signal=signal: receiver(signal=signal, sender=A2AASGIHandler)
            )
    middleware = [import_string(path)(lambda request: None) for path in settings.MIDDLEWARE]
    for depth in range(len(middleware) + 1):
        pieces[f"hooks of {depth} middleware"] = times(lambda depth=depth: _hooks(middleware[:depth], request()))
    return pieces


def _mechanics(handler: Any, scope: dict[str, Any], receive: Any, send: Any, times: Any) -> dict[str, Any]:
    """The pieces of the path's own machinery, each on its own."""
    from asgiref.sync import ThreadSensitiveContext
    from django.core import signals
    from django.core.handlers.asgi import get_script_prefix
    from django.urls import set_script_prefix

    from a2a.asgi import LimitedBody
    from a2a.http.loop_chain import _loop_receivers

    async def context() -> None:
        async with ThreadSensitiveContext():
            pass

    async def listener() -> None:  # _serve's disconnect listener, made and cancelled
        task = asyncio.ensure_future(handler.listen_for_disconnect(asyncio.Event().wait))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    return {
        "the harness (asgi_call of an app that answers at once)": times(lambda: asgi_call(answer, b"{}", "1.0"), True),
        "LimitedBody": times(lambda: LimitedBody(scope, receive, send)),
        "set_script_prefix": times(lambda: set_script_prefix(get_script_prefix(scope))),
        "ThreadSensitiveContext": times(context, True),
        "disconnect listener (made, cancelled)": times(listener, True),
        "receivers' lookup (_loop_receivers)": times(lambda: _loop_receivers(signals.request_started, type(handler))),
    }


def _hooks(middleware: list[Any], request: Any) -> None:
    """The hooks of ``middleware`` as the chain calls them, on a new response (no view:
    ``process_view`` is given the view it would get, which is ``csrf_exempt``)."""
    from django.http import HttpResponse

    from a2a.http.views import jsonrpc_endpoint

    for instance in middleware:
        if hasattr(instance, "process_request"):
            instance.process_request(request)
    for instance in middleware:
        if hasattr(instance, "process_view"):
            instance.process_view(request, jsonrpc_endpoint, (), {})
    response = HttpResponse(b"{}", content_type="application/json")
    for instance in reversed(middleware):
        if hasattr(instance, "process_response"):
            response = instance.process_response(request, response)


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {"message": message}}


def counted(n: int) -> dict[str, float]:
    """In this process (under callgrind, instrumentation off): each piece's instructions per call."""
    import django

    django.setup()
    asyncio.set_event_loop(asyncio.new_event_loop())
    pieces = _pieces(n)
    for run in pieces.values():
        run()  # warm-up: n calls each
    return {name: count / n for name, count in measure(pieces).items()}


def report(counts: dict[str, float]) -> str:
    """The pieces as a markdown table, each middleware's hooks as the difference it adds."""
    from django.conf import settings

    lines = ["| piece | instructions per request |", "|---|---:|"]
    # a piece called on a new request: its own count, the request's taken off
    rows = {
        name: count - counts["ASGIRequest"] * (name in ON_A_NEW_REQUEST)
        for name, count in counts.items()
        if not name.startswith("hooks of ")
    }
    hooks = [counts[f"hooks of {depth} middleware"] for depth in range(len(settings.MIDDLEWARE) + 1)]
    for depth, path in enumerate(settings.MIDDLEWARE, start=1):
        rows[f"hooks: {path.rsplit('.', 1)[1]}"] = hooks[depth] - hooks[depth - 1]
    for name, count in rows.items():
        lines.append(f"| {name} | {count:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="calls of each piece")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(orjson.dumps(counted(args.worker)).decode())
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-request-cost-") as tmp:
        env = site_env(TASK_STORE="memory", A2A_HANDLER="a2a.handlers.echo", A2A_DIRECT_ASGI="false")
        out = Path(tmp) / "out.callgrind"
        env.update(CALLGRIND_OUT=str(out), A2A_LOG_LEVEL="WARNING")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        command += [sys.executable, "-m", "bench.request_cost", "--worker", str(args.n)]
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            sys.exit(done.stderr[-3000:])
        counts = orjson.loads(done.stdout.splitlines()[-1])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolnexus_site.settings")
    import django

    django.setup()
    print(f"Instructions per GetTask (JSON-RPC v1.0, memory store), {args.n} calls of each piece:")
    print(report(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
