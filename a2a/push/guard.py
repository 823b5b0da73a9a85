"""The SSRF guard: which webhook URLs this agent will call, and where the request goes.

A webhook URL must be http(s), and its host must resolve only to
public addresses. When the config is created only what needs no DNS is checked: the
URL's form, and a host that is an address literal (in any form ``getaddrinfo`` reads:
``127.1``, ``2130706433``, ``[::ffff:7f00:1]``) or a ``localhost`` name; so creating a
config does not depend on DNS answering at that moment. Each delivery attempt resolves
the name and checks every address it answers; the request then goes to the address
that was checked (one lookup per attempt, the connection pinned to the first one), so
DNS rebinding reaches nothing. An IPv6 address that carries an IPv4 one (IPv4-mapped,
-translated or -compatible, NAT64, 6to4, Teredo, ISATAP) is judged by that IPv4 address too. Set
``A2A_PUSH_ALLOW_PRIVATE_URLS`` to allow loopback, private and link-local targets.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from a2a.conf import a2a_settings
from a2a.protocol.errors import InvalidParamsError


class UnsafeURLError(ValueError):
    """A webhook URL this agent will not call."""


@dataclass(frozen=True)
class Target:
    """Where to send a request for a webhook URL: the checked address, pinned."""

    url: str  # the webhook URL with its host replaced by the checked address
    host_header: str
    sni_hostname: str | None


#: IPv6 ranges that carry an IPv4 address the packets end up at, and where it sits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix: the last 32 bits
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use: a private translator
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 SIIT "IPv4-translated"
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291 deprecated "IPv4-compatible"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries (and by which mechanism): traffic to
    it may end up at them (a 6to4 relay, a NAT64 gateway, a Teredo or ISATAP tunnel)."""
    value = int(address)
    low = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    if address in _TRANSLATED:
        found.append(("IPv4-translated", low))
    if address in _COMPATIBLE and value > 1:
        found.append(("IPv4-compatible", low))
    if address in _NAT64:
        found.append(("NAT64", low))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    if (value >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id (RFC 5214), u bit either way
        found.append(("ISATAP", low))
    return found


def _flag_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why Python's classification says an address is not public, or None."""
    for label, flag in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return label
    return None if address.is_global else "not public"


def _refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not a public one, or None when it is. An IPv6 address that
    embeds an IPv4 one (IPv4-mapped, -translated or -compatible, NAT64, 6to4, Teredo,
    ISATAP) is refused when the embedded address is; a mapped, translated or well-known
    NAT64 one is then judged by its IPv4 address alone (that is where it goes)."""
    if isinstance(address, ipaddress.IPv4Address):
        return _flag_refusal(address)
    if address in _LOCAL_NAT64:
        return "local-use NAT64 (RFC 8215)"
    embedded = _embedded_ipv4(address)
    for label, ipv4 in embedded:
        reason = _flag_refusal(ipv4)
        if reason:
            return f"{reason} (as the {label} form of {ipv4})"
    if embedded and (address.ipv4_mapped is not None or address in _TRANSLATED or address in _NAT64):
        return None  # translated to its IPv4 address, which is public
    return _flag_refusal(address)


def _split(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsafeURLError("only http and https URLs are allowed")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise UnsafeURLError(f"is not a valid URL ({exc})") from None
    if not host:
        raise UnsafeURLError("has no host")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def resolve(url: str) -> Target:
    """Resolve the webhook host and check every address it has (unless private URLs
    are allowed). UnsafeURLError for a URL to refuse; OSError when the name does not
    resolve (now)."""
    scheme, host, port = _split(url)
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise OSError(f"{host} has no address")
    if not a2a_settings.PUSH_ALLOW_PRIVATE_URLS:
        for address in addresses:
            reason = _refusal(ipaddress.ip_address(address))
            if reason:
                raise UnsafeURLError(
                    f"resolves to {address}, a {reason} address; webhooks must be public "
                    f"(A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
                )
    parts = urlsplit(url)
    port_suffix = f":{parts.port}" if parts.port is not None else ""
    userinfo = parts.netloc.rpartition("@")[0]
    address = addresses[0]
    netloc = (f"[{address}]" if ":" in address else address) + port_suffix
    try:
        ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError as exc:
        raise UnsafeURLError(f"has a host name that cannot be encoded ({exc})") from None
    return Target(
        url=urlunsplit((scheme, f"{userinfo}@{netloc}" if userinfo else netloc, parts.path or "/", parts.query, "")),
        host_header=(f"[{ascii_host}]" if ":" in ascii_host else ascii_host) + port_suffix,
        sni_hostname=ascii_host if scheme == "https" else None,
    )


#: A host ``inet_aton`` (so ``getaddrinfo``) may read as an IPv4 address: ``127.1``,
#: ``0x7f.1``, ``0177.0.0.1``, ``2130706433``.
_IPV4_LIKE = re.compile(r"[0-9a-fA-FxX.]+")


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host written as an address literal stands for (in every form the
    resolver reads it), None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _IPV4_LIKE.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _is_localhost(host: str) -> bool:
    """``localhost`` and its subdomains, which resolve to loopback (RFC 6761 6.3)."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def check_form(url: str) -> None:
    """UnsafeURLError for a webhook URL refused without looking its host up: not
    http(s), no host, a host that cannot be encoded, or (unless private URLs are
    allowed) an address literal or ``localhost`` name that is not public. A name is
    resolved and checked when delivering (:func:`resolve`), never here."""
    _scheme, host, _port = _split(url)
    try:
        host.encode("idna")
    except UnicodeError as exc:
        raise UnsafeURLError(f"has a host name that cannot be encoded ({exc})") from None
    if a2a_settings.PUSH_ALLOW_PRIVATE_URLS:
        return
    address = literal_address(host)
    if address is None:
        if _is_localhost(host):
            raise UnsafeURLError(
                f"names {host}, a loopback address; webhooks must be public (A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
            )
        return
    reason = _refusal(address)
    if reason:
        raise UnsafeURLError(
            f"is {address}, a {reason} address; webhooks must be public (A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
        )


async def check_url(url: str) -> None:
    """InvalidParamsError (naming the URL) for a webhook URL this agent will not call,
    judged by its form and literal address (:func:`check_form`): no DNS lookup, so a
    config can be created whatever DNS answers now; delivery resolves and checks."""
    try:
        check_form(url)
    except UnsafeURLError as exc:
        raise InvalidParamsError(f"webhook URL {url!r} is refused: {exc}") from None
