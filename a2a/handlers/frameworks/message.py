"""The client's message as a framework takes it: its parts as :class:`Piece` s, which each
adapter turns into its framework's user content."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from a2a.handlers.tools import part_text
from a2a.protocol.model import Part


@dataclass(frozen=True)
class Piece:
    """One part of the client's message, as a framework takes it: ``text`` (text, or a
    data part as JSON), or a file's ``content`` (bytes) or ``uri``, with its media type."""

    text: str | None = None
    content: bytes | None = None
    uri: str | None = None
    media_type: str = "application/octet-stream"
    name: str = ""


def pieces(parts: list[Part]) -> list[Piece]:
    """The parts of a message as :class:`Piece` s (a file part whose bytes are not base64
    becomes its description as text)."""
    found = []
    for part in parts:
        file = part.get("file")
        if not isinstance(file, dict):
            text = part_text(part)
            if text:
                found.append(Piece(text=text))
            continue
        media_type, name = str(file.get("mimeType") or "application/octet-stream"), str(file.get("name") or "")
        if isinstance(file.get("bytes"), str):
            try:
                content = base64.b64decode(file["bytes"], validate=True)
            except (binascii.Error, ValueError):
                found.append(Piece(text=part_text(part)))
                continue
            found.append(Piece(content=content, media_type=media_type, name=name))
        elif isinstance(file.get("uri"), str):
            found.append(Piece(uri=file["uri"], media_type=media_type, name=name))
    return found
