"""``manage.py a2a_send URL "text"``: send a message to any A2A agent and print the answer.

``URL`` is the agent's base URL (its card is read from ``/.well-known/agent-card.json``
to find the JSON-RPC endpoint), the card's own URL, or the JSON-RPC endpoint itself.
The message goes out non-blocking; the task is then polled with ``GetTask`` until it
finishes or asks for input, each state change (and progress message) shown on
stderr. The answer's artifacts go to stdout (``--json``: the final task as the agent
sent it). The exit status is non-zero when the task failed, was canceled or rejected,
or did not finish within ``--timeout``::

    manage.py a2a_send http://127.0.0.1:8000 "hello"
    manage.py a2a_send https://agent.example.com "Summarize: ..." --skill summarize -H "Authorization: Bearer $TOKEN"
    manage.py a2a_send http://old-agent:9000 "hi" --v03   # an agent speaking A2A v0.3
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.core.management.base import BaseCommand, CommandError, CommandParser

TERMINAL = {"completed", "failed", "canceled", "rejected"}
INTERRUPTED = {"input-required", "auth-required"}
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


def state_name(value: Any) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` (v1.0) or ``input-required`` (v0.3) -> ``input-required``."""
    text = str(value or "unknown").lower()
    text = text.removeprefix("task_state_")
    return text.replace("_", "-")


def part_text(part: dict[str, Any]) -> str:
    """A part of either generation as a person reads it."""
    if isinstance(part.get("text"), str):
        return part["text"]
    if "data" in part:
        return json.dumps(part["data"], indent=2, ensure_ascii=False)
    file: dict[str, Any] = part["file"] if isinstance(part.get("file"), dict) else part
    name = file.get("name") or file.get("filename") or "file"
    where = file.get("uri") or file.get("url") or ("(inline bytes)" if file.get("bytes") or file.get("raw") else "")
    media = file.get("mimeType") or file.get("mediaType") or ""
    return f"[{name}{f' ({media})' if media else ''}] {where}".rstrip()


def message_text(message: dict[str, Any] | None) -> str:
    if not isinstance(message, dict):
        return ""
    return "\n".join(part_text(p) for p in message.get("parts") or () if isinstance(p, dict))


class Command(BaseCommand):
    help = "Send a message to an A2A agent (ours or any other), wait for the task, print the answer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="the agent's base URL, its card URL, or its JSON-RPC endpoint")
        parser.add_argument("text", help="the message text")
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
        self.v03: bool = options["v03"]
        headers = {"User-Agent": "django-a2a-agent a2a_send"}
        for header in options["header"]:
            name, sep, value = header.partition(":")
            if not sep or not name.strip():
                raise CommandError(f"--header {header!r} is not 'Name: value'.")
            headers[name.strip()] = value.strip()
        if not self.v03:
            headers["A2A-Version"] = "1.0"
        data = None
        if options["data"] is not None:
            try:
                data = json.loads(options["data"])
            except ValueError as exc:
                raise CommandError(f"--data is not JSON: {exc}") from None
        with httpx.Client(headers=headers, timeout=30.0, follow_redirects=True) as http:
            self.http = http
            endpoint = self.endpoint(options["url"])
            started = time.monotonic()
            result = self.rpc(
                endpoint,
                "message/send" if self.v03 else "SendMessage",
                {"message": self.message(options, data), "configuration": self.configuration()},
            )
            task = result if self.v03 else result.get("task")
            if task is None or (self.v03 and result.get("kind") == "message"):
                message = result if self.v03 else result.get("message")
                self.stderr.write(f"  answered with a message ({time.monotonic() - started:.1f}s)")
                self.print_result(message or result, options["json"], message=True)
                return
            if options["no_wait"]:
                self.stdout.write(task["id"])
                return
            task = self.poll(endpoint, task, started, options["timeout"], options["interval"])
            self.print_result(task, options["json"])

    # --- Steps ------------------------------------------------------------------------------------

    def endpoint(self, url: str) -> str:
        """The JSON-RPC endpoint: from the agent's card when there is one, else ``url``."""
        url = url.strip()
        if not urlsplit(url).scheme:
            url = "http://" + url
        path = urlsplit(url).path
        candidates = [url] if path.endswith(".json") else [url.rstrip("/") + p for p in CARD_PATHS]
        for card_url in candidates:
            try:
                response = self.http.get(card_url)
            except httpx.HTTPError as exc:
                raise CommandError(f"Cannot reach {card_url}: {exc}") from None
            if response.status_code == 200:
                try:
                    card = response.json()
                except ValueError:
                    continue
                if isinstance(card, dict):
                    return self.from_card(card, card_url)
        if path.endswith(".json"):
            raise CommandError(f"{url} is not an Agent Card.")
        self.stderr.write(f"→ {url} (no Agent Card found; using it as the JSON-RPC endpoint)")
        return url

    def from_card(self, card: dict[str, Any], card_url: str) -> str:
        wanted = "0.3" if self.v03 else "1.0"
        interfaces = [i for i in card.get("supportedInterfaces") or () if isinstance(i, dict)]
        jsonrpc = [i for i in interfaces if str(i.get("protocolBinding", "")).upper() == "JSONRPC"]
        endpoint = next((i["url"] for i in jsonrpc if str(i.get("protocolVersion", "")).startswith(wanted)), None)
        if endpoint is None and self.v03:
            if card.get("url") and str(card.get("preferredTransport", "JSONRPC")).upper() == "JSONRPC":
                endpoint = card["url"]
            extra = [i for i in card.get("additionalInterfaces") or () if isinstance(i, dict)]
            endpoint = endpoint or next((i["url"] for i in extra if i.get("transport") == "JSONRPC"), None)
        if endpoint is None:
            other = "v1.0" if self.v03 else "v0.3 (try --v03)"
            raise CommandError(
                f"The card at {card_url} names no JSON-RPC endpoint for A2A {wanted}; it may speak {other}."
            )
        self.stderr.write(f"→ {card.get('name', 'agent')} at {endpoint} (A2A {wanted})")
        return endpoint

    def message(self, options: dict[str, Any], data: Any) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": options["text"]}]
        if data is not None:
            parts.append({"data": data})
        message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "parts": parts}
        if self.v03:
            message.update(kind="message", role="user")
            for part in parts:
                part["kind"] = "text" if "text" in part else "data"
        else:
            message["role"] = "ROLE_USER"
        if options["context"]:
            message["contextId"] = options["context"]
        if options["task"]:
            message["taskId"] = options["task"]
        if options["skill"]:
            message["metadata"] = {"skill": options["skill"]}
        return message

    def configuration(self) -> dict[str, Any]:
        return {"blocking": False} if self.v03 else {"returnImmediately": True}

    def rpc(self, endpoint: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        try:
            response = self.http.post(endpoint, json=body)
        except httpx.HTTPError as exc:
            raise CommandError(f"{method} to {endpoint} failed: {exc}") from None
        try:
            answer = response.json()
        except ValueError:
            raise CommandError(f"{method}: HTTP {response.status_code}, not JSON: {response.text[:200]}") from None
        if not isinstance(answer, dict):
            raise CommandError(f"{method}: not a JSON-RPC response: {str(answer)[:200]}")
        if "error" in answer:
            error = answer["error"] or {}
            raise CommandError(f"{method}: the agent answered error {error.get('code')}: {error.get('message')}")
        if not isinstance(answer.get("result"), dict):
            raise CommandError(f"{method}: HTTP {response.status_code}, no result: {str(answer)[:200]}")
        return answer["result"]

    def poll(self, endpoint: str, task: dict[str, Any], started: float, timeout: float, interval: float) -> dict:
        """GetTask until the task finishes or waits for input, showing each change."""
        seen: tuple[str, str] | None = None
        method = "tasks/get" if self.v03 else "GetTask"
        while True:
            status = task.get("status") or {}
            state = state_name(status.get("state"))
            note = message_text(status.get("message"))
            if (state, note) != seen:
                seen = (state, note)
                line = f"  {state:<15} {time.monotonic() - started:6.1f}s"
                self.stderr.write(line + (f"  {note.splitlines()[0][:100]}" if note and state not in TERMINAL else ""))
            if state in TERMINAL or state in INTERRUPTED:
                return task
            if time.monotonic() - started > timeout:
                raise CommandError(f"Task {task.get('id')} is still {state} after {timeout:g}s.")
            time.sleep(interval)
            task = self.rpc(endpoint, method, {"id": task["id"]})

    def print_result(self, item: dict[str, Any], as_json: bool, *, message: bool = False) -> None:
        if as_json:
            self.stdout.write(json.dumps(item, indent=2, ensure_ascii=False))
        if message:
            if not as_json:
                self.stdout.write(message_text(item))
            return
        state = state_name((item.get("status") or {}).get("state"))
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
        elif state in INTERRUPTED:
            if not as_json:
                self.stdout.write(note)
            self.stderr.write(
                self.style.WARNING(f'{state} ({ids}); answer with: --task {item.get("id")} "your answer"')
            )
        else:
            raise CommandError(f"Task {state}" + (f": {note}" if note else "") + f" ({ids})")
