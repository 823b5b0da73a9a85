"""``manage.py a2a_tasks`` on every store: list, show, cancel, fail-stale, prune,
export/import (JSON lines and toolnexus task directories) and copy between stores."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys

import pytest
from django.core.management import CommandError, call_command

from a2a.ops.bulk import parse_age
from stores.file import FileTaskStore
from stores.orm import OrmTaskStore
from stores.timestamps import format_timestamp

pytestmark = pytest.mark.django_db(databases="__all__")

NOW = dt.datetime.now(dt.UTC)


def make_task(task_id: str, state: str = "completed", *, age: dt.timedelta = dt.timedelta(0), context: str = "ctx-a"):
    return {
        "kind": "task",
        "id": task_id,
        "contextId": context,
        "status": {"state": state, "timestamp": format_timestamp(NOW - age)},
        "history": [{"kind": "message", "role": "user", "messageId": f"m-{task_id}", "parts": [{"text": "question"}]}],
        "artifacts": [{"artifactId": "a", "name": "answer", "parts": [{"kind": "text", "text": f"answer {task_id}"}]}],
    }


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("a2a_tasks", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


DAY = dt.timedelta(days=1)
HOUR = dt.timedelta(hours=1)


@pytest.fixture
def filled(use_store):
    for task in (
        make_task("old-done", "completed", age=40 * DAY),
        make_task("old-failed", "failed", age=35 * DAY, context="ctx-b"),
        make_task("new-done", "completed", age=HOUR),
        make_task("stuck", "working", age=3 * HOUR),
        make_task("busy", "working", age=dt.timedelta(seconds=5)),
        make_task("waiting", "input-required", age=5 * HOUR),
    ):
        use_store.save(task)
    return use_store


def listed(*args: str) -> list[str]:
    out, _ = run("list", "--json", *args)
    return [json.loads(line)["id"] for line in out.splitlines()]


def test_parse_age():
    assert parse_age("30d") == dt.timedelta(days=30)
    assert parse_age("1h30m") == dt.timedelta(minutes=90)
    assert parse_age("2w") == dt.timedelta(weeks=2)
    assert parse_age("45s") == dt.timedelta(seconds=45)
    for bad in ("", "30", "soon", "3x", "1h and a bit"):
        with pytest.raises(ValueError, match="not an age"):
            parse_age(bad)


def test_list_filters(filled):
    assert listed() == ["busy", "new-done", "stuck", "waiting", "old-failed", "old-done"]
    assert listed("--state", "completed") == ["new-done", "old-done"]
    assert listed("--state", "completed", "--state", "failed") == ["new-done", "old-failed", "old-done"]
    assert listed("--context", "ctx-b") == ["old-failed"]
    assert listed("--older-than", "30d") == ["old-failed", "old-done"]
    assert listed("--newer-than", "2h") == ["busy", "new-done"]
    assert listed("--limit", "2") == ["busy", "new-done"]


def test_list_table_and_bad_input(filled):
    out, _ = run("list", "--state", "working")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "STATE", "UPDATED", "CONTEXT"]
    assert lines[1].startswith("busy ") and "ago" in lines[1] and lines[1].endswith("ctx-a")
    assert lines[2].startswith("stuck") and "3\xa0hours ago" in lines[2]
    with pytest.raises(CommandError, match="not an age"):
        run("list", "--older-than", "soon")
    with pytest.raises(CommandError):
        run("list", "--state", "exploded")
    _, err = run("list", "--context", "nobody")
    assert "No tasks." in err


def test_show(filled):
    out, _ = run("show", "old-failed")
    assert "old-failed" in out and "ctx-b" in out and "failed" in out
    assert "[user] question" in out
    assert "[answer]\nanswer old-failed" in out
    raw, _ = run("show", "old-failed", "--json")
    assert json.loads(raw) == filled.get("old-failed")
    with pytest.raises(CommandError, match="No task 'nope'"):
        run("show", "nope")


def test_cancel_goes_through_the_lifecycle(filled, heard):
    out, _ = run("cancel", "stuck")
    assert "stuck: canceled" in out
    task = filled.get("stuck")
    assert task["status"]["state"] == "canceled"
    assert task["status"]["message"]["parts"][0]["text"] == "Canceled by manage.py a2a_tasks."
    assert [t["id"] for t in heard] == ["stuck"]  # subscribers heard it
    with pytest.raises(CommandError, match="2 of 3 task"):
        run("cancel", "busy", "new-done", "missing")
    assert filled.get("busy")["status"]["state"] == "canceled"
    assert filled.get("new-done")["status"]["state"] == "completed"  # a terminal state is final


def test_fail_stale(filled, heard, settings):
    out, err = run("fail-stale", "--older-than", "1h", "--dry-run")
    assert out.split() == ["stuck"] and "Would fail 1 stale task" in err
    assert filled.get("stuck")["status"]["state"] == "working"
    assert heard == []
    settings.A2A_STALE_AFTER = 2 * 3600  # the default --older-than
    out, err = run("fail-stale")
    assert "stuck: failed (stale)" in out and "Failed 1 stale task" in err
    task = filled.get("stuck")
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"][0]["text"].startswith("No progress since ")
    assert [t["id"] for t in heard] == ["stuck"]
    assert filled.get("busy")["status"]["state"] == "working"  # recently updated
    assert filled.get("waiting")["status"]["state"] == "input-required"  # waiting for the user, not stale


def test_prune(filled):

    configs = filled.push_configs
    for task_id in ("old-done", "old-failed"):
        configs.save_push_config({"taskId": task_id, "id": "hook", "url": "https://hooks.example.com/a2a"})
    with pytest.raises(CommandError, match="--older-than"):
        run("prune")
    _, err = run("prune", "--older-than", "30d", "--dry-run")
    assert "Would delete 2 tasks" in err and filled.get("old-done") is not None
    assert len(configs.list_push_configs("old-done")) == 1
    _, err = run("prune", "--older-than", "30d", "--state", "completed")
    assert "Deleted 1 task" in err
    assert filled.get("old-done") is None and filled.get("old-failed") is not None
    assert configs.list_push_configs("old-done") == []  # a pruned task leaves no configs
    assert len(configs.list_push_configs("old-failed")) == 1
    run("prune", "--older-than", "2h")  # default: finished tasks only
    assert listed() == ["busy", "new-done", "stuck", "waiting"]
    run("prune", "--older-than", "2h", "--state", "working")
    assert listed() == ["busy", "new-done", "waiting"]


def test_export_and_import_round_trip(filled, tmp_path, file_syscalls):
    path = tmp_path / "tasks.jsonl"
    _, err = run("export", "--state", "completed", "-o", str(path))
    assert "Exported 2 tasks" in err
    lines = path.read_bytes().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["new-done", "old-done"]
    other = f"file:{tmp_path / 'other'}"
    _, err = run("import", str(path), "--store", other)
    assert "Imported 2 tasks" in err
    assert FileTaskStore(tmp_path / "other", syscalls=file_syscalls).get("old-done") == filled.get("old-done")
    _, err = run("import", str(path), "--store", other)
    assert "Imported 0 tasks, 2 skipped" in err and "--overwrite" in err
    _, err = run("import", str(path), "--store", other, "--overwrite")
    assert "Imported 2 tasks" in err
    out, _ = run("export", "--context", "ctx-b")  # to standard output
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["old-failed"]


def test_import_reports_bad_lines_and_keeps_the_good(use_store, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(make_task("good")) + "\n\nnot json\n" + json.dumps({"no": "id"}) + "\n")
    with pytest.raises(CommandError, match="2 line"):
        run("import", str(path))
    assert use_store.get("good") is not None


def test_import_from_standard_input(use_store, monkeypatch):
    data = (json.dumps(make_task("piped")) + "\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    _, err = run("import", "-")
    assert "Imported 1 task" in err
    assert use_store.get("piped")["id"] == "piped"


def test_toolnexus_directory_into_the_orm_and_back(tmp_path, settings):
    """The seeds' FileTaskStore layout: <id>.json, no timestamp or context needed."""
    source = tmp_path / "toolnexus-tasks"
    source.mkdir()
    for i in range(3):
        task = {"id": f"tn-{i}", "status": {"state": "completed"}, "artifacts": [{"parts": [{"text": f"r{i}"}]}]}
        (source / f"tn-{i}.json").write_text(json.dumps(task))
    (source / "broken.json").write_text("{")  # a corrupt file reads as missing, as in toolnexus
    settings.TASK_STORE = "orm"
    _, err = run("import", str(source), "--progress")
    assert "Imported 3 tasks" in err
    assert "3/3" in err and "100%" in err  # the progress bar
    assert OrmTaskStore().get("tn-1")["artifacts"][0]["parts"][0]["text"] == "r1"
    back = tmp_path / "back"
    _, err = run("copy", "--from", "orm", "--to", f"file:{back}", "--progress")
    assert "Copied 3 tasks" in err and "3/3" in err
    assert json.loads((back / "tn-2.json").read_text()) == json.loads((source / "tn-2.json").read_text())


def test_copy_and_move_between_stores(filled, tmp_path, file_syscalls):

    configs = filled.push_configs
    for task_id in ("old-done", "new-done"):
        configs.save_push_config({"taskId": task_id, "id": "hook", "url": "https://hooks.example.com/a2a"})
    target = f"file:{tmp_path / 'archive'}"
    _, err = run("copy", "--to", target, "--older-than", "30d")
    assert "Copied 2 tasks" in err
    archive = FileTaskStore(tmp_path / "archive", syscalls=file_syscalls)
    archived = archive.push_configs
    assert sorted(t["id"] for t in archive.list().tasks) == ["old-done", "old-failed"]
    assert archived.list_push_configs("old-done") == configs.list_push_configs("old-done")  # copied along
    assert archived.list_push_configs("old-failed") == []
    _, err = run("copy", "--to", target, "--state", "completed", "--move")
    assert "Moved 1 task, 1 skipped" in err  # old-done is in the archive already
    assert filled.get("new-done") is None and archive.get("new-done") is not None
    assert [c["id"] for c in archived.list_push_configs("new-done")] == ["hook"]  # moved along
    assert configs.list_push_configs("new-done") == []
    assert filled.get("old-done") is not None  # skipped, so not deleted
    with pytest.raises(CommandError, match="--from and/or --to"):
        run("copy")
