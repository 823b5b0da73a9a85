"""``manage.py a2a_send URL "text"``: send a message to any A2A agent and print the answer.

``URL`` is the agent's base URL (its card is read from ``/.well-known/agent-card.json``
to find the JSON-RPC endpoint), the card's own URL, or the JSON-RPC endpoint itself.
The message goes out non-blocking (through :mod:`a2a.client`); the task is then polled
with ``GetTask`` (long-polled when the agent speaks A2A 1.1: ``Client.poll``) until it
finishes or asks for input, each state change (and progress message) shown on stderr.
The answer's artifacts go to stdout (``--json``: the final task, in the project's
canonical shape whatever the agent's version). The exit status is
non-zero when the task failed, was canceled or rejected, or did not finish within
``--timeout``::

    manage.py a2a_send http://127.0.0.1:8000 "hello"
    manage.py a2a_send https://agent.example.com "Summarize: ..." --skill summarize -H "Authorization: Bearer $TOKEN"
    manage.py a2a_send http://old-agent:9000 "hi" --v03   # an agent speaking A2A v0.3
    manage.py a2a_send http://127.0.0.1:8000 "hi" --agent billing   # one of this project's agents

``--agent NAME`` sends to one of this project's agents (``A2A_AGENTS``): ``URL`` is then
the project's base URL, and the agent's card is read from its own route
(``<URL>/agents/billing/.well-known/agent-card.json`` with ``path("agents/",
include("a2a.urls.agents"))``; ``default`` is the project's own card).
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.agents import UnknownAgent, get_agent
from a2a.client import CardNotFoundError, Client, ClientError, Interface, user_message
from a2a.protocol.model import INTERRUPTED_STATES, TERMINAL_STATES, Message, Part, Task


def part_text(part: Part) -> str:
    """A (canonical) part as a person reads it."""
    if part.get("kind") == "text":
        return str(part.get("text", ""))
    if part.get("kind") == "data":
        return json.dumps(part.get("data"), indent=2, ensure_ascii=False)
    file: dict[str, Any] = part.get("file") or {}
    name = file.get("name") or "file"
    where = file.get("uri") or ("(inline bytes)" if file.get("bytes") else "")
    media = file.get("mimeType") or ""
    return f"[{name}{f' ({media})' if media else ''}] {where}".rstrip()


def message_text(message: Message | None) -> str:
    if not isinstance(message, dict):
        return ""
    return "\n".join(part_text(p) for p in message.get("parts") or () if isinstance(p, dict))


class Command(BaseCommand):
    help = "Send a message to an A2A agent (ours or any other), wait for the task, print the answer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="the agent's base URL, its card URL, or its JSON-RPC endpoint")
        parser.add_argument("text", help="the message text")
        parser.add_argument("--agent", metavar="NAME", help="one of this project's agents, URL being the project's")
        parser.add_argument("--v03", action="store_true", help="speak A2A v0.3 (default: v1.0)")
        parser.add_argument("--skill", help='target this skill (sent as message metadata {"skill": ...})')
        parser.add_argument("--context", metavar="CONTEXT_ID", help="continue this conversation")
        parser.add_argument("--task", metavar="TASK_ID", help="answer this task (one waiting for input)")
        parser.add_argument("--data", metavar="JSON", help="also send this JSON value as a data part")
        parser.add_argument(
            "-H", "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header (repeatable)"
        )
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the task (default 120)")
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls (default 0.5)")
        parser.add_argument("--no-wait", action="store_true", help="print the task id once sent; do not poll")
        parser.add_argument("--json", action="store_true", help="print the final task (or message) as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        version = "0.3" if options["v03"] else "1.0"
        headers = {"User-Agent": "django-a2a-agent a2a_send"}
        for header in options["header"]:
            name, sep, value = header.partition(":")
            if not sep or not name.strip():
                raise CommandError(f"--header {header!r} is not 'Name: value'.")
            headers[name.strip()] = value.strip()
        parts: list[Part] = [{"kind": "text", "text": options["text"]}]
        if options["data"] is not None:
            try:
                parts.append({"kind": "data", "data": json.loads(options["data"])})
            except ValueError as exc:
                raise CommandError(f"--data is not JSON: {exc}") from None
        message = user_message(
            parts,
            context_id=options["context"],
            task_id=options["task"],
            metadata={"skill": options["skill"]} if options["skill"] else None,
        )
        url = options["url"]
        if options["agent"]:
            try:
                url = url.strip().rstrip("/") + get_agent(options["agent"]).path("agent-card")
            except UnknownAgent as exc:
                raise CommandError(str(exc)) from None
        try:
            with self.connect(url, version, headers) as client:
                self.converse(client, message, options)
        except ClientError as exc:
            raise CommandError(str(exc)) from None

    def connect(self, url: str, version: str, headers: dict[str, str]) -> Client:
        """A client of the agent's JSON-RPC interface: from its card when there is one, else ``url``."""
        url = url.strip()
        if not urlsplit(url).scheme:
            url = "http://" + url
        client = Client(url, headers=headers, timeout=30.0, binding="JSONRPC", version=version)
        try:
            client.connect()
        except CardNotFoundError:
            if urlsplit(url).path.endswith(".json"):
                raise CommandError(f"{url} is not an Agent Card.") from None
            self.stderr.write(f"→ {url} (no Agent Card found; using it as the JSON-RPC endpoint)")
            client.close()
            return Client(Interface(url, "JSONRPC", version), headers=headers, timeout=30.0)
        card = client.card or {}
        self.stderr.write(
            f"→ {card.get('name', 'agent')} at {client.interface and client.interface.url} (A2A {version})"
        )
        return client

    def converse(self, client: Client, message: Message, options: dict[str, Any]) -> None:
        started = time.monotonic()
        result = client.send(message, blocking=False)
        if result.get("kind") == "message":
            self.stderr.write(f"  answered with a message ({time.monotonic() - started:.1f}s)")
            self.print_result(result, options["json"], message=True)
            return
        if options["no_wait"]:
            self.stdout.write(result["id"])
            return
        task = self.poll(client, result, started, options["timeout"], options["interval"])
        self.print_result(task, options["json"])

    def poll(self, client: Client, task: Task, started: float, timeout: float, interval: float) -> Task:
        """GetTask until the task finishes or waits for input, showing each change."""
        seen: tuple[str, str] | None = None
        while True:
            status = task.get("status") or {}
            state = status.get("state", "unknown")
            note = message_text(status.get("message"))
            if (state, note) != seen:
                seen = (state, note)
                line = f"  {state:<15} {time.monotonic() - started:6.1f}s"
                short = note.splitlines()[0][:100] if note and state not in TERMINAL_STATES else ""
                self.stderr.write(line + (f"  {short}" if short else ""))
            if state in TERMINAL_STATES or state in INTERRUPTED_STATES:
                return task
            if time.monotonic() - started > timeout:
                raise CommandError(f"Task {task.get('id')} is still {state} after {timeout:g}s.")
            task = client.poll(task, interval=interval)  # a long-poll when the agent numbers its tasks (1.1)

    def print_result(self, item: dict[str, Any], as_json: bool, *, message: bool = False) -> None:
        if as_json:
            self.stdout.write(json.dumps(item, indent=2, ensure_ascii=False))
        if message:
            if not as_json:
                self.stdout.write(message_text(item))
            return
        state = (item.get("status") or {}).get("state", "unknown")
        note = message_text((item.get("status") or {}).get("message"))
        if not as_json:
            for artifact in item.get("artifacts") or ():
                if len(item.get("artifacts") or ()) > 1 and artifact.get("name"):
                    self.stdout.write(f"# {artifact['name']}")
                self.stdout.write(message_text(artifact))
        ids = f"task {item.get('id')}, context {item.get('contextId')}"
        if state == "completed":
            if not as_json and note and not item.get("artifacts"):
                self.stdout.write(note)
            self.stderr.write(self.style.SUCCESS(f"completed ({ids})"))
        elif state in INTERRUPTED_STATES:
            if not as_json:
                self.stdout.write(note)
            self.stderr.write(
                self.style.WARNING(f'{state} ({ids}); answer with: --task {item.get("id")} "your answer"')
            )
        else:
            raise CommandError(f"Task {state}" + (f": {note}" if note else "") + f" ({ids})")
