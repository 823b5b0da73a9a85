"""Push notifications: delivery of task updates to webhooks, and the SSRF guard.

The configs (created by :mod:`a2a.service.push_configs`) are dicts::

    {"taskId", "id", "url", "token"?, "authentication"?: {"schemes": [...], "credentials"?},
     "dialect": "0.3" | "1.0" | "1.1", "createdAt"}

``dialect`` is the protocol version the config was created in; its deliveries are
rendered in that version (spec 4.3.3): v1.0 POSTs a ``StreamResponse``
(``{"task": {...}}``, ``Content-Type: application/a2a+json``), 1.1 the same with the
Task's ``generation`` (the draft's spec 3.2.7), v0.3 POSTs the Task.
Each delivery carries ``Authorization: <scheme> <credentials>`` when the config's
``authentication`` brings credentials (spec 4.3.3, the specification's pull request 1793)
and ``X-A2A-Notification-Token`` with the config's token (a v0.3 convention the v1.0 text
no longer names, kept for the receivers that read it); when the agent has a signing
key, each attempt also carries a JWT signed with it (:mod:`a2a.push.tokens`: the claims,
the agent's JWK Set, and :func:`verify_notification` for receivers). Configs live in the
push-config store of the task store (``TaskStore.push_configs``).

The package holds two ideas: :mod:`a2a.push.guard` (the SSRF guard: which webhook URLs
are called, and where the request goes; push-config checks import it alone) and
:mod:`a2a.push.delivery` (the background loop that sends each saved task version to its
webhooks, with retries). This module re-exports both's public names.
"""

from a2a.push import tokens as tokens
from a2a.push.delivery import MAX_QUEUED as MAX_QUEUED
from a2a.push.delivery import MAX_RETRY_DELAY as MAX_RETRY_DELAY
from a2a.push.delivery import USER_AGENT as USER_AGENT
from a2a.push.delivery import forget as forget
from a2a.push.delivery import install as install
from a2a.push.delivery import on_task_saved as on_task_saved
from a2a.push.delivery import payload as payload
from a2a.push.delivery import shutdown as shutdown
from a2a.push.delivery import wait_idle as wait_idle
from a2a.push.guard import Target as Target
from a2a.push.guard import UnsafeURLError as UnsafeURLError
from a2a.push.guard import check_form as check_form
from a2a.push.guard import check_url as check_url
from a2a.push.guard import literal_address as literal_address
from a2a.push.guard import resolve as resolve
from a2a.push.tokens import NotificationVerificationError as NotificationVerificationError  # for receivers
from a2a.push.tokens import verify_notification as verify_notification
