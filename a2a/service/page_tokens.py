"""Page tokens as a client sees them: a store's cursor, sealed to the listing it pages.

A store pages with a plain cursor (:mod:`stores.cursors`: the last item's timestamp and
id). A client is given it sealed (:func:`seal`): encrypted, so the token shows nothing
(no task id, no timestamp), and authenticated together with the listing (:func:`listing`:
the operation, the agent, the tenant, the caller, the filters). :func:`unseal` refuses a
token another caller replays, one sent with other filters, and a forged or altered one,
as invalid params; the same for every binding and every store, since the stores only
ever see the cursor. No count travels in a token: each page's ``totalSize`` is the store's.

The sealing is deterministic authenticated encryption built from HMAC-SHA256 alone, on
the SIV pattern (RFC 5297): the tag, an HMAC of the listing and the cursor, is also the
nonce of an HMAC-SHA256 counter-mode keystream the cursor is XORed with. Both keys are
derived from ``SECRET_KEY`` (and, to read, each of ``SECRET_KEY_FALLBACKS``: rotating the
key does not break a client halfway through its pages). ``django.core.signing`` would
authenticate but leave the cursor readable (its payload is base64 JSON); AES would need
``cryptography``, which the app does not depend on.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
from collections.abc import Sequence

import orjson
from django.conf import settings
from django.utils.crypto import salted_hmac

from a2a.protocol.errors import InvalidParamsError
from a2a.protocol.model import ListParams
from a2a.service.context import CallContext

#: Bytes of the tag (and keystream nonce) that starts every token.
TAG_BYTES = 16
_SALT = "a2a.service.page_tokens"
_BLOCK = hashlib.sha256().digest_size


def listing(operation: str, ctx: CallContext, *filters: str | None) -> tuple[str | None, ...]:
    """What a token is bound to: ``operation``, the call's agent, tenant and caller, and
    the listing's ``filters`` (a page size or how much of each item is shown may change
    from one page to the next; what is listed may not)."""
    return (operation, ctx.agent_name, ctx.tenant, ctx.caller, *filters)


def task_listing(params: ListParams, ctx: CallContext) -> tuple[str | None, ...]:
    """The listing of a ListTasks call: its caller's, with its context, state and time filters."""
    after = params.updated_after.isoformat() if params.updated_after else None
    return listing("ListTasks", ctx, params.context_id, params.state, after)


def seal(cursor: str, bound: Sequence[str | None]) -> str:
    """The token a client is given for a store's ``cursor`` ("" stays "": the last page)."""
    if not cursor:
        return ""
    plain = cursor.encode()
    encrypt, authenticate = _keys(settings.SECRET_KEY)
    tag = _tag(authenticate, bound, plain)
    return base64.urlsafe_b64encode(tag + _xor(plain, encrypt, tag)).decode().rstrip("=")


def unseal(token: str, bound: Sequence[str | None]) -> str:
    """The cursor ``token`` seals for this listing; InvalidParamsError (``pageToken``) for
    a token that is not one of this listing's (another caller's, other filters, forged)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) > TAG_BYTES:
        tag, body = raw[:TAG_BYTES], raw[TAG_BYTES:]
        for secret in (settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())):
            encrypt, authenticate = _keys(secret)
            plain = _xor(body, encrypt, tag)
            if hmac.compare_digest(_tag(authenticate, bound, plain), tag):
                return plain.decode()
    raise InvalidParamsError("is not a token of an earlier page of this listing", field="pageToken")


@functools.lru_cache(maxsize=8)
def _keys(secret: str | bytes) -> tuple[bytes, bytes]:
    """The encryption key and the authentication key derived from ``secret`` (kept: a
    listing's every page derives them again otherwise)."""
    return (
        salted_hmac(_SALT, "encrypt", secret=secret, algorithm="sha256").digest(),
        salted_hmac(_SALT, "authenticate", secret=secret, algorithm="sha256").digest(),
    )


def _tag(key: bytes, bound: Sequence[str | None], plain: bytes) -> bytes:
    associated = orjson.dumps(list(bound))  # JSON: no two listings encode alike
    message = len(associated).to_bytes(4, "big") + associated + plain
    return hmac.new(key, message, hashlib.sha256).digest()[:TAG_BYTES]


def _xor(data: bytes, key: bytes, nonce: bytes) -> bytes:
    """``data`` XOR the keystream HMAC(key, nonce || counter), block after block."""
    blocks = (len(data) + _BLOCK - 1) // _BLOCK
    stream = b"".join(hmac.new(key, nonce + i.to_bytes(4, "big"), hashlib.sha256).digest() for i in range(blocks))
    size = len(data)
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream[:size], "big")).to_bytes(size, "big")
