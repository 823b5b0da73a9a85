"""The limits on what one request may carry (a2a/protocol/limits.py)."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Limits on what a request may carry (answered with -32600/-32602 naming the setting)"

DECLARED: dict[str, Setting] = {
    "A2A_MAX_BODY_BYTES": Setting(
        int,
        10 * 1024 * 1024,
        min=1,
        doc="Bytes of a request body, checked by both bindings before parsing and read no further (-32600 "
        "with HTTP 413 beyond). The A2A endpoints' own limit: Django's DATA_UPLOAD_MAX_MEMORY_SIZE (for "
        "form posts) does not apply to them.",
    ),
    "A2A_MAX_PARTS": Setting(int, 100, min=1, doc="Parts of one message."),
    "A2A_MAX_TEXT_LENGTH": Setting(int, 1_000_000, min=1, doc="Characters of one text part."),
    # The ids this agent makes are UUIDs (36 characters): a lower limit would refuse them.
    "A2A_MAX_ID_LENGTH": Setting(int, 255, min=36, doc="Characters of a task, context, message or push config id."),
    "A2A_MAX_PAGE_SIZE": Setting(
        int,
        100,
        min=1,
        doc="Largest ListTasks pageSize; at most 100, the task stores' own ceiling (the default page is 50, "
        "or this when smaller).",
    ),
    "A2A_MAX_BATCH_SIZE": Setting(
        int, 100, min=1, doc="Requests in one JSON-RPC batch; a longer batch is answered with one -32600 error."
    ),
    "A2A_MAX_HISTORY": Setting(
        int,
        100,
        min=1,
        doc="Messages kept in a task's history: when a follow-up or an agent message would make it longer, "
        "the oldest are dropped.",
    ),
}
