"""Handlers for the benchmarks (``A2A_HANDLER=bench.handlers.ticker``)."""

from __future__ import annotations

import time

from a2a.handlers import HandlerRequest


def ticker(request: HandlerRequest) -> str:
    """The streaming benchmark's handler: ``request.text`` is ``"<events> <interval s>"``.
    Saves ``events`` progress updates, each carrying the wall-clock time it was made
    (``time.time()``, as text), ``interval`` seconds apart; the client subtracts it
    from the time it receives the event."""
    events, interval = request.text.split()
    for _ in range(int(events)):
        request.progress(f"{time.time():.6f}")
        time.sleep(float(interval))
    return "done"
