"""Handlers for the benchmarks (``A2A_HANDLER=bench.handlers.ticker``)."""

from __future__ import annotations

import os
import time

from a2a.handlers import HandlerRequest


def ticker(request: HandlerRequest) -> str:
    """The streaming benchmarks' handler: ``request.text`` is ``"<events> <interval s>"``
    (and optionally a gate file to wait for).
    Saves ``events`` progress updates, each carrying the wall-clock time it was made
    (``time.time()``, as text), ``interval`` seconds apart; the client subtracts it
    from the time it receives the event."""
    events, interval, *gate = request.text.split()
    while gate and not os.path.exists(gate[0]) and not request.cancelled.wait(0.005):
        pass  # "<events> <interval> <path>": start once the file <path> exists (bench/events.py)
    for _ in range(int(events)):
        request.progress(f"{time.time():.6f}")
        time.sleep(float(interval))
    return "done"
