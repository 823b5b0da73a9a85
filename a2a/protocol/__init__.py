"""The A2A protocol: canonical model, errors, and the dialects spoken at the edge.

Which dialect a request speaks comes from its ``A2A-Version`` (header or query
parameter): empty or ``0.3`` is v0.3 (and the toolnexus dialect, which is v0.3
payloads under v1.0 method names), ``1.0`` is v1.0, ``1.1`` the 1.1 draft (v1.0 and the
task's ``generation``: :mod:`a2a.protocol.v11`). The HTTP+JSON binding's v0.3 is
another wire format (the ProtoJSON of v0.3's gRPC messages): :func:`rest_dialect_for`.
"""

from __future__ import annotations

from a2a.protocol.errors import VersionNotSupportedError
from a2a.protocol.model import shown
from a2a.protocol.v03 import V03Dialect, v10_parts_v03_role, v10_shaped
from a2a.protocol.v03rest import V03RestDialect
from a2a.protocol.v10 import V10Dialect, V10ObjectsV03Names
from a2a.protocol.v11 import V11Dialect

V03 = V03Dialect()
V10 = V10Dialect()
V11 = V11Dialect()
V03_REST = V03RestDialect()
V10_V03_NAMES = V10ObjectsV03Names()  # fasta2a's: never named by a version, only by a payload
DIALECTS = {"": V03, "0.3": V03, "1.0": V10, "1.1": V11}
SUPPORTED_VERSIONS = ("0.3", "1.0", "1.1")
#: The versions whose objects are v1.0's (1.1 adds fields to them).
V1_VERSIONS = frozenset({"1.0", "1.1"})

Dialect = V03Dialect


def dialect_for(version: str | None, method: str | None = None, params: object = None) -> V03Dialect:
    """The dialect for an ``A2A-Version`` value; VersionNotSupportedError otherwise.

    With no version (v0.3) and a JSON-RPC request's ``method`` and ``params``: v1.0
    when the method is a v0.3 one whose params are v1.0-shaped
    (:func:`~a2a.protocol.v03.v10_shaped`), v1.0's objects under v0.3's names when its
    message is (:func:`~a2a.protocol.v03.v10_parts_v03_role`), so the answer takes the
    shape the payload used. An explicit ``A2A-Version: 0.3`` is v0.3 whatever the payload."""
    try:
        dialect = DIALECTS[(version or "").strip()]
    except KeyError:
        raise VersionNotSupportedError(
            f"A2A version {shown(version)} is not supported; this agent speaks {', '.join(SUPPORTED_VERSIONS)} "
            "(an empty A2A-Version means 0.3)",
            metadata={"requestedVersion": version, "supportedVersions": ",".join(SUPPORTED_VERSIONS)},
        ) from None
    if method is not None and not (version or "").strip():
        if v10_shaped(method, params):
            return V10
        if v10_parts_v03_role(method, params):
            return V10_V03_NAMES
    return dialect


def rest_dialect_for(version: str | None) -> V03Dialect:
    """The HTTP+JSON binding's dialect for an ``A2A-Version`` value: v0.3's ProtoJSON
    where :func:`dialect_for` says v0.3, v1.0 otherwise."""
    dialect = dialect_for(version)
    return V03_REST if dialect is V03 else dialect
