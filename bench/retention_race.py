"""Follow-ups racing an aggressive retention policy (issue 29): no conversation is ever
split, and no follow-up loses what it referenced.

Two server processes of the example site (uvicorn, one worker each) share one store
(the file store in a temp directory, or a PostgreSQL database of their own) with
``A2A_RETENTION = {"completed": 1, "input-required": 1}`` and
``A2A_RETENTION_INTERVAL = 0.2``: both sweep it five times a second, and a task a
second old in either state has expired. Client threads hold conversations over
JSON-RPC, on either server at random: each starts with a task that asks for input,
then, after 0.6 to 1.4 s (around its expiry), either answers it (a continuation) or
sends a new message in the same ``contextId`` whose ``referenceTaskIds`` name the
previous task (a follow-up), a few turns each; filler threads send one-task
conversations back to back, so each sweep has many conversations to read and delete.

The handler (:func:`handler`, run by the servers) reads the earlier conversation
(``request.context_tasks()``) when it starts, works 0.3 s (several sweeps), and reads
it again: a task it saw first and not then is a **split** (the conversation lost tasks
while a follow-up was in it). A referenced task it did not see at the start means the
conversation was gone before the follow-up arrived: a **new conversation** (allowed).
A continuation of a deleted task must answer "task not found" (-32001), nothing else.

    .venv/bin/python -m bench.retention_race --store file --seconds 120
    .venv/bin/python -m bench.retention_race --store postgres --seconds 120   # $A2A_BENCH_POSTGRES_URL

PostgreSQL: ``--postgres-url`` (default ``$A2A_BENCH_POSTGRES_URL``), a database of your
own; its ``stores`` tables are emptied first.

Prints the counts as one JSON line; exits 1 when a split or an unexpected answer was found.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: Where the servers' handler appends what it saw (one JSON line per run).
LOG_VARIABLE = "RETENTION_RACE_LOG"
#: Seconds the handler works between its two reads of the conversation.
WORK = 0.3


def handler(request: Any) -> str:
    """The servers' handler: asks for input on a conversation's first message, and
    records the earlier conversation as it reads it before and after working."""
    from a2a.handlers import InputRequired

    before = [t["id"] for t in request.context_tasks(limit=50)]
    if before or request.is_continuation:  # a follow-up: works while the sweeps run
        time.sleep(WORK)
    _record(request, before, [t["id"] for t in request.context_tasks(limit=50)])
    if request.text == "ask" and not request.is_continuation:
        raise InputRequired("and then?")
    return "ok"


def _record(request: Any, before: list[str], after: list[str]) -> None:
    line = {
        "task": request.task_id,
        "context": request.context_id,
        "before": before,
        "after": after,
        "references": list(request.message.get("referenceTaskIds") or ()),
        "continuation": request.is_continuation,
    }
    fd = os.open(os.environ[LOG_VARIABLE], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())  # one short write: lines never interleave
    finally:
        os.close(fd)


# --- The client side ---------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.odd: list[Any] = []
        self.lock = threading.Lock()

    def add(self, key: str, odd: Any = None) -> None:
        with self.lock:
            self.counts[key] += 1
            if odd is not None and len(self.odd) < 20:
                self.odd.append(odd)


def _client() -> Any:
    """A keep-alive client whose idle connections expire before uvicorn's (5 s) do: a
    request on a connection the server is closing at that moment is reset."""
    import httpx

    return httpx.Client(limits=httpx.Limits(keepalive_expiry=2))


def _counted(work: Any) -> Any:
    """``work`` in a thread whose exception is counted (the run then fails), not lost."""

    def run(urls: list[str], tally: Tally, stop: threading.Event, seed: int) -> None:
        try:
            work(urls, tally, stop, seed)
        except Exception as exc:
            tally.add("client errors", repr(exc))

    return run


def _send(client: Any, url: str, message: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    return client.post(url, json=body, timeout=60).json()


def _message(text: str, **fields: Any) -> dict[str, Any]:
    parts = [{"kind": "text", "text": text}]
    return {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex, "parts": parts, **fields}


def _converse(urls: list[str], tally: Tally, stop: threading.Event, seed: int) -> None:
    """One client: conversations of a few turns each, until ``stop``."""
    rng = random.Random(seed)
    with _client() as client:
        while not stop.is_set():
            context = uuid.uuid4().hex
            answer = _send(client, rng.choice(urls), _message("ask", contextId=context))
            if "result" not in answer:
                tally.add("start failed", answer)
                continue
            tally.add("conversations")
            task = answer["result"]
            for _ in range(rng.randint(1, 4)):
                time.sleep(rng.uniform(0.6, 1.4))  # around the task's expiry
                if stop.is_set():
                    break
                waiting = task["status"]["state"] == "input-required"
                if waiting and rng.random() < 0.5:
                    answer = _send(client, rng.choice(urls), _message("yes", contextId=context, taskId=task["id"]))
                    kind = "continuation"
                else:
                    text = "ask" if rng.random() < 0.5 else "more"
                    message = _message(text, contextId=context, referenceTaskIds=[task["id"]])
                    answer = _send(client, rng.choice(urls), message)
                    kind = "follow-up"
                if "result" in answer:
                    tally.add(f"{kind}s accepted")
                    task = answer["result"] if answer["result"].get("kind") == "task" else task
                elif kind == "continuation" and answer.get("error", {}).get("code") == -32001:
                    tally.add("continuations of a deleted task: task not found")
                    break  # the conversation is gone: a new one
                else:
                    tally.add("unexpected answers", answer)


def _fill(urls: list[str], tally: Tally, stop: threading.Event, seed: int) -> None:
    """One-task conversations, back to back: every sweep has many to read and delete
    (as a busy deployment's has), which is when a sweep's read and its delete are apart."""
    rng = random.Random(seed)
    with _client() as client:
        while not stop.is_set():
            answer = _send(client, rng.choice(urls), _message("fill", contextId=uuid.uuid4().hex))
            tally.add("one-task conversations" if "result" in answer else "unexpected answers", answer.get("error"))


def _deleted(client: Any, base: str) -> float:
    """Tasks the server's sweeps deleted (its retention counter)."""
    total = 0.0
    for line in client.get(f"{base}/metrics", timeout=10).text.splitlines():
        if line.startswith("a2a_retention_deleted_tasks_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _verdict(log: Path) -> dict[str, int]:
    """What the handler saw: runs, splits (tasks seen at the start and gone before the
    end), follow-ups whose referenced task was gone on arrival (new conversations)."""
    runs = splits = anew = 0
    examples = []
    for line in log.read_text().splitlines():
        seen = json.loads(line)
        runs += 1
        lost = set(seen["before"]) - set(seen["after"])
        if lost:
            splits += 1
            examples.append(seen)
        anew += any(r not in seen["before"] for r in seen["references"])
    if examples:
        print("splits, for example:", json.dumps(examples[:3]), file=sys.stderr)
    return {"handler runs": runs, "splits": splits, "follow-ups into a conversation already gone": anew}


@contextlib.contextmanager
def _store(kind: str, tmp: Path, postgres_url: str) -> Iterator[dict[str, str]]:
    """The servers' environment for ``kind``: the file store in ``tmp``, or the ORM store
    on the PostgreSQL database ``postgres_url`` (migrated, its ``stores`` tables emptied)."""
    from tests.server import manage, site_env

    if kind == "file":
        yield {"TASK_STORE": f"file:{tmp / 'tasks'}", "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}"}
        return
    env = {"TASK_STORE": "orm", "DATABASE_URL": postgres_url}
    manage("migrate", "-v", "0", env=site_env(**env))
    code = (
        "import django; django.setup(); from django.db import connection; c = connection.cursor(); "
        "c.execute('TRUNCATE stores_taskrecord, stores_pushconfigrecord'); "
        "c.execute('UPDATE stores_taskrecord_count SET n = 0')"
    )
    subprocess.run([sys.executable, "-c", code], env=site_env(**env), cwd=ROOT, check=True)
    yield env


def run(kind: str, seconds: float, clients: int, fillers: int, postgres_url: str) -> dict[str, Any]:
    import httpx

    from tests.server import running_server, site_env

    with tempfile.TemporaryDirectory(prefix="retention-race-") as directory:
        tmp = Path(directory)
        log = tmp / "seen.jsonl"
        log.touch()
        with _store(kind, tmp, postgres_url) as store_env:
            env = site_env(
                **store_env,
                A2A_HANDLER="bench.retention_race.handler",
                A2A_RETENTION='{"completed": 1, "input-required": 1}',
                A2A_RETENTION_INTERVAL="0.2",
                A2A_LOG_LEVEL="WARNING",
                **{LOG_VARIABLE: str(log)},
            )
            with (
                running_server(env, log=tmp / "server-1.log") as one,
                running_server(env, log=tmp / "server-2.log") as two,
            ):
                urls = [httpx.get(f"{b}/.well-known/agent-card.json").json()["url"] for b in (one, two)]
                tally, stop = Tally(), threading.Event()
                work = [(_converse, n) for n in range(clients)] + [(_fill, -n) for n in range(1, fillers + 1)]
                threads = [threading.Thread(target=_counted(w), args=(urls, tally, stop, n)) for w, n in work]
                for thread in threads:
                    thread.start()
                time.sleep(seconds)
                stop.set()
                for thread in threads:
                    thread.join(120)
                with httpx.Client() as client:
                    deleted = sum(_deleted(client, b) for b in (one, two))
        result: dict[str, Any] = {"store": kind, "seconds": seconds, "clients": clients, "fillers": fillers}
        result.update(tally.counts)
        result["tasks deleted by the sweeps"] = int(deleted)
        result.update(_verdict(log))
        if tally.odd:
            result["unexpected, for example"] = tally.odd[:3]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["file", "postgres"], default="file")
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("A2A_RACE_SECONDS", "60")))
    parser.add_argument("--clients", type=int, default=8, help="threads holding conversations")
    parser.add_argument("--fillers", type=int, default=2, help="threads sending one-task conversations")
    parser.add_argument("--postgres-url", default=os.environ.get("A2A_BENCH_POSTGRES_URL", ""))
    args = parser.parse_args()
    if args.store == "postgres" and not args.postgres_url:
        parser.error("--postgres-url (or A2A_BENCH_POSTGRES_URL): a database of your own, emptied first")
    result = run(args.store, args.seconds, args.clients, args.fillers, args.postgres_url)
    print(json.dumps(result), flush=True)
    bad = result["splits"] or any(result.get(k) for k in ("unexpected answers", "start failed", "client errors"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
