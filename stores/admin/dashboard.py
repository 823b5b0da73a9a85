"""The task admin's dashboard: what the tasks of the configured store look like, as
numbers (:func:`collect`) and as pictures drawn on the server as inline SVG
(:func:`hbar_chart`, :func:`column_chart`, :func:`line_chart`: no JavaScript).

Bounded work, whatever the store:

- The ORM store asks the database for aggregates: a count per state and per agent
  (the start of the scope key) over the table, a count per day of creation, the
  failure reasons (the first text of a failed task's status message) grouped
  and counted, and the p50/p95 time from creation to a terminal state per day, with
  ``percentile_cont`` on PostgreSQL; on another database (SQLite has no percentile
  function) the durations of at most :data:`SCAN_LIMIT` of
  the window's newest terminal tasks are read and ranked here.
- Any other store (memory, file, custom) is read: the :data:`SCAN_LIMIT` most recently
  updated tasks, newest first through ``list``, and the numbers are those of that
  sample (the page says so when the limit cut it). A task's creation time is its
  ``_created`` (stamped when the A2A server creates it), else its status time.

The per-day charts cover the last :data:`DAYS` days, in the current time zone.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.db.models import Aggregate, Case, CharField, Count, F, FloatField, Func, QuerySet, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Left, StrIndex, TruncDate
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from stores.base import MAX_PAGE_SIZE, STATES, TERMINAL_STATES, Task, TaskQuery, TaskStore, list_all
from stores.fields import CREATED, joined_parts, task_state, task_updated
from stores.models import TaskRecord
from stores.orm import OrmTaskStore
from stores.scope import AGENT_SEPARATOR, DEFAULT_AGENT, agent_name
from stores.timestamps import parse_timestamp

#: How many days the per-day charts cover.
DAYS = 30
#: At most this many tasks are read for the dashboard of a store that is not the ORM
#: one (and at most this many durations on a database without ``percentile_cont``).
SCAN_LIMIT = 5000
#: How many failure reasons are shown.
TOP_REASONS = 8

#: The badge colours of admin/stores/task_styles.html, per state.
STATE_COLOURS = {
    "submitted": "#5b6b7f",
    "working": "#1f6fd1",
    "input-required": "#b7791f",
    "auth-required": "#b7791f",
    "completed": "#2f855a",
    "failed": "#c53030",
    "rejected": "#c53030",
    "canceled": "#718096",
    "unknown": "#718096",
}


@dataclass
class Stats:
    """What the dashboard shows. ``days`` are the last :data:`DAYS` local dates, oldest
    first; ``p50``/``p95`` are seconds (None on a day without a finished task)."""

    days: list[dt.date]
    per_state: dict[str, int] = field(default_factory=dict)
    per_day: list[int] = field(default_factory=list)
    p50: list[float | None] = field(default_factory=list)
    p95: list[float | None] = field(default_factory=list)
    reasons: list[tuple[str, int]] = field(default_factory=list)
    #: Tasks per agent, by the agent's name ("default" for the single-agent settings').
    per_agent: dict[str, int] = field(default_factory=dict)
    #: Tasks read (a store that is not the ORM one), and whether SCAN_LIMIT cut the read.
    scanned: int | None = None
    truncated: bool = False


def _window(now: dt.datetime | None = None) -> tuple[list[dt.date], dt.datetime]:
    """The last DAYS local dates and the aware moment the first one starts."""
    today = timezone.localdate(now or timezone.now())
    days = [today - dt.timedelta(days=DAYS - 1 - i) for i in range(DAYS)]
    start = timezone.make_aware(dt.datetime.combine(days[0], dt.time.min))
    return days, start


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The ``fraction`` percentile of ``values`` with linear interpolation (as
    PostgreSQL's ``percentile_cont``); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = fraction * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def reason_of(task: Task) -> str:
    """Why a task failed, as its status message says (its first text, consecutive text
    parts joined: :func:`~stores.fields.joined_parts`), else ""."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    message = status.get("message") if isinstance(status, dict) else None
    return _first_text(message.get("parts") if isinstance(message, dict) else None)


def _first_text(parts: Any) -> str:
    for _, part in joined_parts(parts):
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"].strip():
            return part["text"].strip()
    return ""


def _when(value: Any) -> dt.datetime | None:
    try:
        return parse_timestamp(value) if isinstance(value, str) and value else None
    except ValueError:
        return None


def collect(store: TaskStore, now: dt.datetime | None = None) -> Stats:
    """The dashboard's numbers for ``store`` (see the module's docstring for the bounds)."""
    if isinstance(store, OrmTaskStore):
        return _collect_orm(TaskRecord.objects.using(store.using), now)
    return collect_tasks(list_all(store, TaskQuery(all_owners=True, page_size=MAX_PAGE_SIZE)), now)


def collect_tasks(tasks: Iterable[Task], now: dt.datetime | None = None) -> Stats:
    """The numbers of at most SCAN_LIMIT tasks of ``tasks`` (newest first)."""
    days, start = _window(now)
    stats = Stats(days=days, scanned=0)
    per_day: Counter[dt.date] = Counter()
    durations: defaultdict[dt.date, list[float]] = defaultdict(list)
    reasons: Counter[str] = Counter()
    for task in tasks:
        if stats.scanned == SCAN_LIMIT:
            stats.truncated = True
            break
        stats.scanned = (stats.scanned or 0) + 1
        state = task_state(task)
        stats.per_state[state] = stats.per_state.get(state, 0) + 1
        agent = agent_name(task)
        stats.per_agent[agent] = stats.per_agent.get(agent, 0) + 1
        updated = _when(task_updated(task))
        created = _when(task.get(CREATED)) or updated
        if created is not None and created >= start:
            per_day[timezone.localdate(created)] += 1
        if updated is None or updated < start:
            continue
        if state in TERMINAL_STATES and _when(task.get(CREATED)) is not None and created is not None:
            durations[timezone.localdate(updated)].append(max(0.0, (updated - created).total_seconds()))
        if state == "failed":
            reasons[reason_of(task)] += 1
    stats.per_day = [per_day[d] for d in days]
    stats.p50 = [percentile(durations[d], 0.5) for d in days]
    stats.p95 = [percentile(durations[d], 0.95) for d in days]
    stats.reasons = _top(reasons)
    return stats


class Percentile(Aggregate):
    """``percentile_cont(fraction) WITHIN GROUP (ORDER BY expression)`` (PostgreSQL)."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float) -> None:
        super().__init__(expression, fraction=float(fraction))


def _collect_orm(rows: QuerySet, now: dt.datetime | None = None) -> Stats:
    days, start = _window(now)
    stats = Stats(days=days)
    stats.per_state = {row["state"]: row["n"] for row in rows.order_by().values("state").annotate(n=Count("id"))}
    stats.per_agent = _orm_per_agent(rows)
    recent = rows.filter(created_at__gte=start).order_by()
    counts = dict(recent.annotate(day=TruncDate("created_at")).values_list("day").annotate(n=Count("id")))
    stats.per_day = [counts.get(d, 0) for d in days]
    finished = rows.filter(state__in=TERMINAL_STATES, updated_at__gte=start).order_by()
    if connections[rows.db].vendor == "postgresql":
        seconds = Func(F("updated_at") - F("created_at"), template="EXTRACT(EPOCH FROM %(expressions)s)")
        by_day = {
            day: (p50, p95)
            for day, p50, p95 in finished.annotate(day=TruncDate("updated_at"))
            .values("day")
            .annotate(p50=Percentile(seconds, 0.5), p95=Percentile(seconds, 0.95))
            .values_list("day", "p50", "p95")
        }
    else:
        durations: defaultdict[dt.date, list[float]] = defaultdict(list)
        newest = finished.order_by("-updated_at").values_list("created_at", "updated_at")[:SCAN_LIMIT]
        for created, updated in newest:
            durations[timezone.localdate(updated)].append(max(0.0, (updated - created).total_seconds()))
        by_day = {d: (percentile(v, 0.5), percentile(v, 0.95)) for d, v in durations.items()}
    stats.p50 = [by_day[d][0] if d in by_day else None for d in days]
    stats.p95 = [by_day[d][1] if d in by_day else None for d in days]
    failed = rows.filter(state="failed", updated_at__gte=start).order_by()
    # Grouped by the message's parts in the database, joined here (a reason in several
    # text parts reads as one): the most frequent groups, a bounded read.
    grouped = (
        failed.annotate(parts=KT("task__status__message__parts"))
        .values_list("parts")
        .annotate(n=Count("id"))
        .order_by("-n", "parts")
        .values_list("parts", "n")[: TOP_REASONS * 8]
    )
    reasons: Counter[str] = Counter()
    for parts, n in grouped:
        reasons[_first_text(_json(parts))] += n
    stats.reasons = _top(reasons)
    return stats


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _top(reasons: Counter[str]) -> list[tuple[str, int]]:
    """The most frequent reasons, the same order on every store (then by text)."""
    return sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:TOP_REASONS]


def _orm_per_agent(rows: QuerySet) -> dict[str, int]:
    """Tasks per agent in the table: the agent is the scope key's start (the ``owner``
    column up to :data:`~stores.scope.AGENT_SEPARATOR`), none for the default agent."""
    cut = StrIndex("owner", Value(AGENT_SEPARATOR))
    agent = Case(When(cut__gt=0, then=Left("owner", cut - 1)), default=Value(DEFAULT_AGENT), output_field=CharField())
    per_agent: Counter[str] = Counter()
    for name, n in rows.order_by().annotate(cut=cut, agent=agent).values_list("agent").annotate(n=Count("id")):
        per_agent[name] += n
    return dict(per_agent)


# --- Pictures: inline SVG -------------------------------------------------------------------

WIDTH = 720
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def human_seconds(seconds: float) -> str:
    """``850 ms``, ``4.2 s``, ``3.5 min``, ``2.1 h``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _svg(height: int, title: str, body: str) -> SafeString:
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="task-chart" role="img" aria-label="{}" '
        'viewBox="0 0 {} {}" width="{}" height="{}" {}><title>{}</title>{}</svg>',
        title,
        WIDTH,
        height,
        WIDTH,
        height,
        mark_safe(FONT),
        title,
        mark_safe(body),
    )


def _shorten(text: str, size: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def hbar_chart(title: str, rows: Sequence[tuple[str, int, str]], empty: str = "Nothing yet.") -> SafeString:
    """Horizontal bars: one ``(label, value, colour)`` per row, the value written at the end."""
    label_w, bar_x, row_h = 230, 240, 24
    if not rows:
        return _svg(40, title, f'<text x="10" y="24" fill="#666">{escape(empty)}</text>')
    top = max(value for _, value, _ in rows) or 1
    scale = (WIDTH - bar_x - 60) / top
    # Labels start at the left edge and are clipped at the bars: a label wider than its
    # column loses its end (the whole is the tooltip), never its first letters.
    clip = "hbar-labels-" + hashlib.sha1(title.encode()).hexdigest()[:10]  # one per chart of the page
    parts = [f'<clipPath id="{clip}"><rect x="0" y="0" width="{label_w}" height="{8 + len(rows) * row_h}"/></clipPath>']
    for i, (label, value, colour) in enumerate(rows):
        y = 8 + i * row_h
        w = max(1.0, value * scale) if value else 0.0
        parts.append(
            f'<text x="0" y="{y + 15}" clip-path="url(#{clip})" fill="currentColor">'
            f"<title>{escape(label)}</title>{escape(_shorten(label, 34))}</text>"
            f'<rect x="{bar_x}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" rx="3" fill="{colour}"/>'
            f'<text x="{bar_x + w + 6:.1f}" y="{y + 15}" fill="currentColor">{value}</text>'
        )
    return _svg(16 + len(rows) * row_h, title, "".join(parts))


_LEFT, _RIGHT, _TOP, _PLOT_H = 64, 16, 28, 150


def _axes(days: Sequence[dt.date], top_label: str, unit_label: str) -> str:
    """The frame of a per-day chart: baseline, a top gridline with its value, a date every week."""
    plot_w = WIDTH - _LEFT - _RIGHT
    step = plot_w / len(days)
    bottom = _TOP + _PLOT_H
    out = [
        f'<line x1="{_LEFT}" y1="{bottom}" x2="{WIDTH - _RIGHT}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{WIDTH - _RIGHT}" y2="{_TOP}" stroke="#ddd" stroke-dasharray="4 3"/>',
        f'<text x="{_LEFT - 6}" y="{_TOP + 4}" text-anchor="end" fill="currentColor">{escape(top_label)}</text>',
        f'<text x="{_LEFT - 6}" y="{bottom + 4}" text-anchor="end" fill="currentColor">0</text>',
        f'<text x="{_LEFT}" y="16" fill="#666">{escape(unit_label)}</text>',
    ]
    for i, day in enumerate(days):
        if (len(days) - 1 - i) % 7 == 0:
            x = _LEFT + step * (i + 0.5)
            out.append(
                f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle" fill="currentColor">{day:%b %d}</text>'
            )
    return "".join(out)


def column_chart(title: str, days: Sequence[dt.date], values: Sequence[int], colour: str = "#417690") -> SafeString:
    """One column per day (tasks created that day), with the day's number as a tooltip."""
    top = max(values, default=0) or 1
    step = (WIDTH - _LEFT - _RIGHT) / len(days)
    bottom = _TOP + _PLOT_H
    parts = [_axes(days, str(top), "tasks per day")]
    for i, (day, value) in enumerate(zip(days, values, strict=True)):
        h = value / top * _PLOT_H
        x = _LEFT + step * i + step * 0.15
        parts.append(
            f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}" fill="{colour}">'
            f"<title>{day:%Y-%m-%d}: {value} task{'' if value == 1 else 's'}</title></rect>"
        )
    return _svg(bottom + 28, title, "".join(parts))


def line_chart(
    title: str, days: Sequence[dt.date], series: Sequence[tuple[str, Sequence[float | None], str]]
) -> SafeString:
    """Lines over the days (a gap where a value is None), a dot per value with it as a
    tooltip, and a legend; values are seconds, labelled as durations."""
    known = [v for _, values, _ in series for v in values if v is not None]
    if not known:
        return _svg(40, title, '<text x="10" y="24" fill="#666">No finished tasks in these days.</text>')
    top = max(known) or 1.0
    step = (WIDTH - _LEFT - _RIGHT) / len(days)
    bottom = _TOP + _PLOT_H
    parts = [_axes(days, human_seconds(top), "time from creation to a final state")]
    for n, (name, values, colour) in enumerate(series):
        legend_x = WIDTH - _RIGHT - 150 + n * 75
        parts.append(
            f'<rect x="{legend_x}" y="6" width="12" height="12" fill="{colour}"/>'
            f'<text x="{legend_x + 16}" y="16" fill="currentColor">{escape(name)}</text>'
        )
        segment: list[str] = []
        segments: list[list[str]] = [segment]
        for i, (day, value) in enumerate(zip(days, values, strict=True)):
            if value is None:
                segment = []
                segments.append(segment)
                continue
            x, y = _LEFT + step * (i + 0.5), bottom - value / top * _PLOT_H
            segment.append(f"{x:.1f},{y:.1f}")
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{day:%Y-%m-%d} {escape(name)}: {escape(human_seconds(value))}</title></circle>"
            )
        for points in segments:
            if len(points) > 1:
                parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="2"/>')
    return _svg(bottom + 28, title, "".join(parts))


def charts(stats: Stats) -> dict[str, SafeString]:
    """The dashboard's pictures (the tasks per agent only when there are several agents)."""
    states = [(s, stats.per_state[s], STATE_COLOURS.get(s, "#718096")) for s in STATES if stats.per_state.get(s)]
    others = sorted(set(stats.per_state) - set(STATES))
    states += [(s, stats.per_state[s], STATE_COLOURS["unknown"]) for s in others]
    reasons = [(reason or "(no message)", n, STATE_COLOURS["failed"]) for reason, n in stats.reasons]
    return {
        "states": hbar_chart("Tasks per state", states, "No tasks."),
        "per_day": column_chart(f"Tasks created per day, last {DAYS} days", stats.days, stats.per_day),
        "durations": line_chart(
            f"Time to a final state per day (p50 and p95), last {DAYS} days",
            stats.days,
            [("p50", stats.p50, "#1f6fd1"), ("p95", stats.p95, "#c05621")],
        ),
        "reasons": hbar_chart(f"Why tasks failed, last {DAYS} days", reasons, "No failed tasks in these days."),
        "agents": agents_chart(stats.per_agent),
    }


def agents_chart(per_agent: dict[str, int]) -> SafeString:
    """Tasks per agent, most first, the default agent's named "default"; "" for one agent (nothing to split)."""
    if len(per_agent) < 2:
        return mark_safe("")
    rows = sorted(per_agent.items(), key=lambda item: (-item[1], item[0]))
    return hbar_chart("Tasks per agent", [(name, n, "#417690") for name, n in rows])
