"""``manage.py a2a_tasks``: list, show, cancel, fail stale, prune, export, import and
copy tasks, on any store.

Every subcommand works on the configured store (``TASK_STORE``) or on ``--store SPEC``
(any ``TASK_STORE`` value: ``file:./tasks``, ``orm``, ``orm:other``). ``--agent NAME``
works on one agent's tasks (``A2A_AGENTS``; ``default`` for the single-agent settings'). Selections take ``--state``
(repeatable), ``--context`` and ``--older-than``/``--newer-than`` ages (``30d``,
``12h``, ``90m``, ``1h30m``)::

    manage.py a2a_tasks list --state working --older-than 1h
    manage.py a2a_tasks list --agent billing
    manage.py a2a_tasks show <id>
    manage.py a2a_tasks cancel <id> [<id> ...]
    manage.py a2a_tasks fail-stale --older-than 2h --dry-run
    manage.py a2a_tasks prune --older-than 30d --state completed
    manage.py a2a_tasks prune                          # what A2A_RETENTION says has expired
    manage.py a2a_tasks export --state completed -o tasks.jsonl
    manage.py a2a_tasks import tasks.jsonl            # or a toolnexus task directory
    manage.py a2a_tasks copy --from file:./tasks --to orm [--move]
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
import time
from argparse import ArgumentParser
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import orjson
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.timesince import timesince
from tqdm import tqdm

from a2a.agents import Agent, UnknownAgent, get_agent, task_stores_in_use
from a2a.conf import a2a_settings
from a2a.handlers.tools import parts_text
from a2a.ops import bulk as maintenance
from a2a.runtime.retention import policy as retention_policy
from a2a.runtime.retention import sweep_store
from stores.backends import get_task_store, resolve_store
from stores.base import STATES, TERMINAL_STATES, Task, TaskStore
from stores.fields import FILE_BYTES
from stores.file import FileTaskStore
from stores.retention import Policy, delete_tasks
from stores.scope import agent_name
from stores.timestamps import parse_timestamp


def _selection(p: ArgumentParser, *, states_help: str = "only tasks in this state (repeatable)") -> None:
    """The options that pick tasks: state, context, age."""
    p.add_argument("--state", action="append", choices=STATES, default=[], help=states_help)
    p.add_argument("--context", metavar="CONTEXT_ID", help="only tasks of this context")
    p.add_argument("--older-than", metavar="AGE", help="last updated more than AGE ago (30d, 12h, 90m)")
    p.add_argument("--newer-than", metavar="AGE", help="last updated less than AGE ago")


def _progress(p: ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse_bool(),
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )


class Command(BaseCommand):
    help = "List, show, cancel, fail stale, prune, export, import and copy A2A tasks (any store)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

        def command(name: str, help_text: str, *, store: bool = True) -> ArgumentParser:
            p = sub.add_parser(name, help=help_text, description=help_text)
            if store:
                p.add_argument("--store", metavar="SPEC", help="a TASK_STORE value (default: the configured store)")
            p.add_argument("--agent", metavar="NAME", help="only this agent's tasks (default: every agent's)")
            return p

        p = command("list", "List tasks, newest first.")
        _selection(p)
        p.add_argument("--limit", type=int, default=100, help="at most this many (0: all; default 100)")
        p.add_argument("--json", action="store_true", help="one JSON task per line")

        p = command("show", "Show one task: status, conversation and artifacts.")
        p.add_argument("task_id")
        p.add_argument("--json", action="store_true", help="the stored JSON")

        p = command("cancel", "Cancel tasks that have not finished (a finished task stays as it is).")
        p.add_argument("task_ids", nargs="+", metavar="TASK_ID")

        p = command("fail-stale", "Save tasks stuck in submitted/working as failed.")
        p.add_argument("--state", action="append", choices=maintenance.STALE_STATES, default=[])
        p.add_argument("--context", metavar="CONTEXT_ID")
        p.add_argument("--older-than", metavar="AGE", help="not updated for AGE (default: A2A_STALE_AFTER, e.g. 1h)")
        p.add_argument("--dry-run", action="store_true", help="only list what would be failed")
        _progress(p)

        p = command(
            "prune",
            "Delete old tasks: with --older-than, finished ones unless --state says otherwise; without it, "
            "what A2A_RETENTION says has expired.",
        )
        _selection(
            p, states_help="only tasks in this state (repeatable; default: the terminal states, or the policy's)"
        )
        p.add_argument("--dry-run", action="store_true", help="only count what would be deleted")
        _progress(p)

        p = command("export", "Write tasks as JSON lines.")
        _selection(p)
        p.add_argument("-o", "--output", default="-", help="a file (default: standard output)")
        _progress(p)

        p = command("import", "Save tasks from JSON lines, or from a toolnexus-style task directory.")
        p.add_argument("source", help="a .jsonl file, '-' for standard input, or a directory of <id>.json files")
        p.add_argument("--overwrite", action="store_true", help="replace tasks the store already has")
        _progress(p)

        p = command("copy", "Copy (or --move) tasks, with their push configs, from one store to another.", store=False)
        p.add_argument("--from", dest="source", metavar="SPEC", help="default: the configured store")
        p.add_argument("--to", dest="target", metavar="SPEC", help="default: the configured store")
        _selection(p)
        p.add_argument("--overwrite", action="store_true", help="replace tasks the target has already")
        p.add_argument("--move", action="store_true", help="delete each task from the source once copied")
        _progress(p)

    # --- Plumbing ---------------------------------------------------------------------------

    def handle(self, *args: Any, **options: Any) -> None:
        self.options = options
        action = options["action"].replace("-", "_")
        getattr(self, f"do_{action}")(**options)

    def agent(self) -> Agent | None:
        """The agent ``--agent`` names (None without it); a name not configured is an error."""
        name = self.options.get("agent")
        try:
            return get_agent(name) if name else None
        except UnknownAgent as exc:
            raise CommandError(str(exc)) from None

    def store(self, spec: str | None) -> TaskStore:
        """The store ``spec`` names, else ``--agent``'s store, else the configured one."""
        agent = self.agent()
        try:
            if spec is not None:
                return resolve_store(spec)
            return agent.store if agent is not None else get_task_store()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None

    def mine(self, task: Task | None) -> Task | None:
        """``task`` unless ``--agent`` names another agent than its own (then None: no such task)."""
        agent = self.agent()
        return None if task is None or (agent is not None and agent_name(task) != agent.name) else task

    def selection(self, options: dict[str, Any], *, default_states: tuple[str, ...] = ()) -> maintenance.Selection:
        try:
            return maintenance.Selection(
                states=tuple(options.get("state") or default_states),
                context_id=options.get("context"),
                older_than=age(options.get("older_than")),
                newer_than=age(options.get("newer_than")),
                agent=options.get("agent"),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def bar(self, total: int | None, what: str) -> tqdm:
        show = self.options.get("progress")
        stream = getattr(self.stderr, "_out", sys.stderr)
        if show is None:
            show = bool(getattr(stream, "isatty", lambda: False)())
        return tqdm(total=total, desc=what, unit="task", file=stream, disable=not show, dynamic_ncols=True)

    def done(self, message: str, started: float) -> None:
        self.stderr.write(self.style.SUCCESS(f"{message} in {time.monotonic() - started:.1f}s."))

    def report_problems(self, problems: list[maintenance.Problem]) -> None:
        for problem in problems[:20]:
            self.stderr.write(self.style.WARNING(f"  {problem.where}: {problem.error}"))
        if len(problems) > 20:
            self.stderr.write(self.style.WARNING(f"  ... and {len(problems) - 20} more"))

    # --- Subcommands --------------------------------------------------------------------------

    def do_list(self, store: str | None, limit: int, json: bool, **options: Any) -> None:
        selection = self.selection(options)
        tasks = maintenance_select(self.store(store), selection, limit)
        if json:
            for task in tasks:
                self.stdout.write(orjson.dumps(task).decode())
            return
        rows = [maintenance.describe(t) for t in tasks]
        if not rows:
            self.stderr.write("No tasks.")
            return
        width = max(len(r["id"]) for r in rows)
        state_width = max(len(r["state"]) for r in rows)
        self.stdout.write(f"{'ID':<{width}}  {'STATE':<{state_width}}  {'UPDATED':<14}  CONTEXT")
        for row in rows:
            self.stdout.write(
                f"{row['id']:<{width}}  {self.style_state(row['state']):<{state_width}}  "
                f"{ago(row['updated']):<14}  {row['context_id'] or '-'}"
            )

    def style_state(self, state: str) -> str:
        padded = state
        if state == "completed":
            return self.style.SUCCESS(padded)
        if state in ("failed", "rejected"):
            return self.style.ERROR(padded)
        if state in ("input-required", "auth-required", "canceled"):
            return self.style.WARNING(padded)
        return padded

    def do_show(self, store: str | None, task_id: str, json: bool, **options: Any) -> None:
        task = self.mine(self.store(store).get(task_id))
        if task is None:
            raise CommandError(f"No task {task_id!r}.")
        if json:
            self.stdout.write(orjson.dumps(task, option=orjson.OPT_INDENT_2).decode())
            return
        row = maintenance.describe(task)
        self.stdout.write(f"Task     {row['id']}")
        self.stdout.write(f"Context  {row['context_id'] or '-'}")
        self.stdout.write(f"Agent    {row['agent']}")
        self.stdout.write(
            f"State    {self.style_state(row['state'])}  (updated {row['updated']}, {ago(row['updated'])})"
        )
        status = (task.get("status") or {}).get("message")
        if status:
            self.stdout.write(f"Status   {parts_text(status.get('parts')) or '-'}")
        if task.get("metadata"):
            self.stdout.write("Metadata " + orjson.dumps(task["metadata"]).decode())
        self.stdout.write(self.style.MIGRATE_HEADING(f"\nConversation ({len(task.get('history') or ())})"))
        for message in task.get("history") or ():
            self.stdout.write(f"[{message.get('role', '?')}] {parts_text(message.get('parts'))}")
        self.stdout.write(self.style.MIGRATE_HEADING(f"\nArtifacts ({len(task.get('artifacts') or ())})"))
        for artifact in task.get("artifacts") or ():
            self.stdout.write(f"[{artifact.get('name') or artifact.get('artifactId', '')}]")
            self.stdout.write(parts_text(artifact.get("parts")))

    def do_cancel(self, store: str | None, task_ids: list[str], **options: Any) -> None:
        target = self.store(store)
        failures = 0
        for task_id in task_ids:
            if self.mine(target.get(task_id)) is None:
                failures += 1
                self.stderr.write(f"{task_id}: no such task")
                continue
            outcome, task = maintenance.cancel(target, task_id, by="manage.py a2a_tasks")
            if outcome == "canceled":
                self.stdout.write(f"{task_id}: canceled")
            elif outcome == "final" and task is not None:
                failures += 1
                self.stderr.write(f"{task_id}: already {maintenance.describe(task)['state']}; left as it is")
            else:
                failures += 1
                self.stderr.write(f"{task_id}: no such task")
        if failures:
            raise CommandError(f"{failures} of {len(task_ids)} task(s) not canceled.")

    def do_fail_stale(self, store: str | None, dry_run: bool, **options: Any) -> None:
        target = self.store(store)
        older = age(options.get("older_than")) or dt.timedelta(seconds=a2a_settings.STALE_AFTER)
        states = tuple(options.get("state") or maintenance.STALE_STATES)
        selection = maintenance.Selection(
            states=states, context_id=options.get("context"), older_than=older, agent=options.get("agent")
        )
        started = time.monotonic()
        stale = [t["id"] for t in selection.select(target)]
        tally = maintenance.Tally()
        with self.bar(len(stale), "fail stale") as bar:
            for task_id in stale:
                if dry_run:
                    self.stdout.write(task_id)
                    tally.done += 1
                else:
                    outcome, _ = maintenance.fail_stale(target, task_id, older, by="manage.py a2a_tasks fail-stale")
                    if outcome == "failed":
                        tally.done += 1
                        self.stdout.write(f"{task_id}: failed (stale)")
                    else:
                        tally.skipped += 1  # it moved on meanwhile
                bar.update()
        verb = "Would fail" if dry_run else "Failed"
        self.done(f"{tally.summary(verb, 'stale task')} (not updated for {older})", started)

    def do_prune(self, store: str | None, dry_run: bool, **options: Any) -> None:
        """Delete what ``--older-than`` (in ``--state``, default the terminal states) selects,
        task by task; without it, what ``A2A_RETENTION`` says has expired, whole contexts
        (the sweep every server process runs: :mod:`a2a.runtime.retention`)."""
        target = self.store(store)
        older = age(options.get("older_than"))
        if older is not None:
            states = options.get("state") or sorted(TERMINAL_STATES)
            rules, whole = Policy(dict.fromkeys(states, older)), False
        else:
            rules, whole = self.policy(options.get("state")), True
        selection = self.selection(options)
        started = time.monotonic()
        with self.bar(None, "prune") as bar:
            swept = sweep_store(
                target,
                rules,
                now=selection.now,
                dry_run=dry_run,
                whole_contexts=whole,
                select=selection.matches,
                progress=lambda batch: bar.update(len(batch)),
            )
        tally = maintenance.Tally(done=swept.total, skipped=swept.spared)
        self.done(tally.summary("Would delete" if dry_run else "Deleted"), started)

    def policy(self, states: list[str] | None) -> Policy:
        """``A2A_RETENTION`` (only its ``states`` when given); CommandError when it keeps everything."""
        try:
            rules = retention_policy()
        except ValueError as exc:
            raise CommandError(f"A2A_RETENTION {exc}.") from None
        if states:
            rules = Policy({state: rules.ages[state] for state in states if state in rules.ages})
        if not rules:
            raise CommandError(
                "prune needs --older-than (e.g. --older-than 30d), or an A2A_RETENTION policy "
                "that lets tasks expire (in these states)."
            )
        return rules

    def do_export(self, store: str | None, output: str, **options: Any) -> None:
        target = self.store(store)
        selection = self.selection(options)
        started = time.monotonic()
        count = 0
        with open_output(output, self.stdout) as out, self.bar(selection.estimate(target), "export") as bar:
            for task in selection.select(target):
                out.write(maintenance.to_json_line(task))
                count += 1
                bar.update()
            bar.total = count
        self.done(
            f"Exported {count} task{'' if count == 1 else 's'}" + ("" if output == "-" else f" to {output}"), started
        )

    def do_import(self, store: str | None, source: str, overwrite: bool, **options: Any) -> None:
        target = self.store(store)
        started = time.monotonic()
        tally = maintenance.Tally()
        path = Path(source)
        if source != "-" and path.is_dir():
            tasks = list(maintenance.Selection().select(FileTaskStore(path, fsync=False)))
            items: Iterator[Task | maintenance.Problem] = iter(tasks)
            total: int | None = len(tasks)
        else:
            items, total = read_lines(source, self.stdin_bytes()), None
        with self.bar(total, "import") as bar:
            for item in items:
                if isinstance(item, maintenance.Problem):
                    tally.problems.append(item)
                elif self.mine(item) is not None:  # not another agent's (--agent)
                    tally.put(target, item, overwrite=overwrite)
                bar.update()
        self.done(f"{tally.summary('Imported')} into {target!r}", started)
        if tally.skipped:
            self.stderr.write(f"  {tally.skipped} already there (use --overwrite to replace them)")
        self.report_problems(tally.problems)
        if tally.problems:
            raise CommandError(f"{len(tally.problems)} line(s) could not be imported.")

    def stdin_bytes(self) -> Any:
        return sys.stdin.buffer

    def do_copy(self, source: str | None, target: str | None, overwrite: bool, move: bool, **options: Any) -> None:
        if source is None and target is None:
            raise CommandError("copy needs --from and/or --to (the other defaults to the configured store).")
        origin, destination = self.store(source), self.store(target)
        if origin is destination or (source or "") == (target or ""):
            raise CommandError("--from and --to name the same store.")
        selection = self.selection(options)
        started = time.monotonic()
        tally = maintenance.Tally()
        # Read the ids first: a --move deletes from the store being paged through.
        ids = [t["id"] for t in selection.select(origin)]
        with_files = changed = 0
        with self.bar(len(ids), "move" if move else "copy") as bar:
            for task_id in ids:
                task = origin.get(task_id)
                if task is None:
                    tally.skipped += 1
                elif tally.put(destination, task, overwrite=overwrite):
                    # Its webhooks go with it (a --move's delete removes them from the origin).
                    for config in origin.push_configs.list_push_configs(task_id):
                        destination.push_configs.save_push_config(config)
                    if move:  # the one delete path: what goes with a task goes, its stored files stay
                        if not delete_tasks(origin, [task], moved_to=destination):
                            changed += 1  # at another version now: the copy is older, the source keeps it
                        elif task.get(FILE_BYTES):
                            with_files += 1
                bar.update()
        self.done(f"{tally.summary('Moved' if move else 'Copied')} from {origin!r} to {destination!r}", started)
        if tally.skipped:
            self.stderr.write(f"  {tally.skipped} already in the target (use --overwrite to replace them)")
        if changed:
            self.stderr.write(f"  {changed} changed while being copied: left in the source too (copy them again)")
        if with_files and all(repr(store) != repr(destination) for store in task_stores_in_use()):
            self.stderr.write(
                f"  {with_files} moved task(s) keep their stored files; make {destination!r} a store in use "
                "(TASK_STORE, an agent's) before the next orphan sweep, or it removes them (docs/files.md)"
            )


# --- Helpers --------------------------------------------------------------------------------


def argparse_bool() -> Any:
    from argparse import BooleanOptionalAction

    return BooleanOptionalAction


def age(value: str | None) -> dt.timedelta | None:
    if not value:
        return None
    try:
        return maintenance.parse_age(value)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def ago(timestamp: str) -> str:
    try:
        when = parse_timestamp(timestamp)
    except ValueError:
        return timestamp or "-"
    seconds = (dt.datetime.now(dt.UTC) - when).total_seconds()
    if seconds < 60:
        return "just now" if seconds < 5 else f"{int(seconds)} seconds ago"
    return f"{timesince(when, depth=1)} ago"


def maintenance_select(store: TaskStore, selection: maintenance.Selection, limit: int) -> list[Task]:
    out = []
    for task in selection.select(store):
        out.append(task)
        if limit and len(out) >= limit:
            break
    return out


@contextlib.contextmanager
def open_output(path: str, stdout: Any) -> Iterator[Any]:
    if path == "-":
        stream: TextIO = getattr(stdout, "_out", sys.stdout)
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            yield buffer
            buffer.flush()
        else:  # a text stream (tests): decode
            yield _TextSink(stream)
        return
    with open(path, "wb") as handle:
        yield handle


class _TextSink:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data.decode())


def read_lines(source: str, stdin: Any) -> Iterator[Task | maintenance.Problem]:
    if source == "-":
        yield from maintenance.read_json_lines(stdin, "stdin")
        return
    try:
        handle = open(source, "rb")  # noqa: SIM115
    except OSError as exc:
        raise CommandError(f"Cannot read {source}: {exc}") from None
    with handle:
        yield from maintenance.read_json_lines(handle, source)
