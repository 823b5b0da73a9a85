"""What tracing costs: a blocking SendMessage then a GetTask through the service layer
(memory store, echo handler), in µs per pair, with A2A_TRACING off and on.

    python -m bench.tracing --compare /path/to/a/checkout/before/tracing

runs each configuration in its own process, in turns (``--rounds``), and prints the
median of each: ``before`` (the other checkout, which has no tracing), ``off`` and
``on`` (the SDK's TracerProvider with a span processor that drops every span, so the
cost measured is making spans, not exporting them). One configuration alone:
``python -m bench.tracing --one off``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def one(mode: str, pairs: int) -> tuple[float, float]:
    """µs per send+get pair in this process, wall-clock and CPU (all of the process's
    threads: the runner's too), ``mode`` "off", "on" or "before"."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django
    from django.conf import settings

    if mode == "on":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

        class Drop(SpanExporter):
            def export(self, spans):  # type: ignore[no-untyped-def]
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Drop()))
        trace.set_tracer_provider(provider)
    django.setup()
    logging.disable(logging.INFO)  # the test settings log each transition: not what is measured
    settings.TASK_STORE = "memory"
    settings.A2A_HANDLER = "a2a.handlers.echo"
    if mode != "before":
        settings.A2A_TRACING = mode == "on"
    from a2a.conf import a2a_settings
    from a2a.protocol.model import GetParams, SendParams
    from a2a.service import operations

    a2a_settings.reload()

    async def run(n: int) -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            message = {
                "kind": "message",
                "messageId": f"m{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": "hi"}],
            }
            task = await operations.send_message(SendParams(message=message))
            await operations.get_task(GetParams(id=task["id"]))
        return (time.perf_counter() - start) / n * 1e6, (time.process_time() - cpu) / n * 1e6

    asyncio.run(run(200))  # warm up
    return asyncio.run(run(pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", choices=["off", "on", "before"])
    parser.add_argument("--compare", type=Path, help="a checkout of the code before tracing (run as 'before')")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.pairs)))
        return
    here = Path(__file__).resolve().parent.parent
    modes = [("off", here), ("on", here)] + ([("before", args.compare)] if args.compare else [])
    results: dict[str, list[list[float]]] = {mode: [] for mode, _ in modes}
    script = Path(__file__).resolve()
    for _ in range(args.rounds):
        for mode, tree in modes:
            out = subprocess.run(
                [sys.executable, str(script), "--one", mode, "--pairs", str(args.pairs)],
                cwd=tree,
                env={**os.environ, "PYTHONPATH": str(tree)},
                capture_output=True,
                text=True,
                check=True,
            )
            results[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("µs per send+get pair: wall-clock median, min | CPU of the process median, min (runs)")
    for mode, values in results.items():
        wall, cpu = [v[0] for v in values], [v[1] for v in values]
        print(
            f"{mode:7s} {statistics.median(wall):7.1f} {min(wall):7.1f} | {statistics.median(cpu):7.1f} {min(cpu):7.1f}"
            f"  (wall {' '.join(f'{v:.0f}' for v in wall)}; cpu {' '.join(f'{v:.0f}' for v in cpu)})"
        )


if __name__ == "__main__":
    main()
