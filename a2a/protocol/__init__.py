"""The A2A protocol: canonical model, errors, and the dialects spoken at the edge.

Which dialect a request speaks comes from its ``A2A-Version`` (header or query
parameter): empty or ``0.3`` is v0.3 (and the toolnexus dialect, which is v0.3
payloads under v1.0 method names), ``1.0`` is v1.0.
"""

from __future__ import annotations

from .errors import VersionNotSupportedError
from .model import shown
from .v03 import V03Dialect
from .v10 import V10Dialect

V03 = V03Dialect()
V10 = V10Dialect()
DIALECTS = {"": V03, "0.3": V03, "1.0": V10}
SUPPORTED_VERSIONS = ("0.3", "1.0")

Dialect = V03Dialect


def dialect_for(version: str | None) -> V03Dialect:
    """The dialect for an ``A2A-Version`` value; VersionNotSupportedError otherwise."""
    try:
        return DIALECTS[(version or "").strip()]
    except KeyError:
        raise VersionNotSupportedError(
            f"A2A version {shown(version)} is not supported; this agent speaks {', '.join(SUPPORTED_VERSIONS)} "
            "(an empty A2A-Version means 0.3)",
            metadata={"requestedVersion": version, "supportedVersions": ",".join(SUPPORTED_VERSIONS)},
        ) from None
