"""``manage.py a2a_grpc``: serve the gRPC binding of A2A v1.0 (``a2a.proto``'s
``A2AService``) until SIGTERM or SIGINT::

    manage.py a2a_grpc [--address HOST:PORT | --port PORT] [--grace SECONDS]
                       [--tls-cert FILE --tls-key FILE]

The address defaults to ``A2A_GRPC_ADDRESS``; ``--port`` keeps its host. Every
operation goes through the same service layer and task store as the HTTP bindings, so
this process and the web processes serve the same tasks (with a shared store and
event backend, as for several web processes). Set ``A2A_GRPC_URL`` to advertise it
on the Agent Card. Needs the ``grpc`` extra (docs/getting-started.md, Installing).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.conf import a2a_settings

try:  # the `grpc` extra: without it the command says what to install
    import grpc

    from a2a.grpc import server
except ImportError as exc:  # pragma: no cover - exercised without the extra
    server = None  # type: ignore[assignment]
    MISSING = str(exc)


class Command(BaseCommand):
    help = "Serve the A2A gRPC binding (A2A v1.0 a2a.proto) until SIGTERM or SIGINT."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--address", help="HOST:PORT to listen on (default: A2A_GRPC_ADDRESS)")
        parser.add_argument("--port", type=int, help="the port (0 picks a free one), on the address's host")
        parser.add_argument(
            "--grace", type=float, default=5.0, help="seconds calls in progress get on stop (default: 5)"
        )
        parser.add_argument("--tls-cert", metavar="FILE", help="PEM certificate chain: serve over TLS")
        parser.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")

    def handle(self, *args: Any, **options: Any) -> None:
        if server is None:
            raise CommandError(
                f'The gRPC binding needs the "grpc" extra (docs/getting-started.md, Installing) ({MISSING})'
            )
        address = options["address"] or a2a_settings.GRPC_ADDRESS
        if options["port"] is not None:
            host = address.rsplit(":", 1)[0] if ":" in address else address
            address = f"{host}:{options['port']}"
        credentials = None
        if bool(options["tls_cert"]) != bool(options["tls_key"]):
            raise CommandError("--tls-cert and --tls-key go together")
        if options["tls_cert"]:
            try:
                chain, key = Path(options["tls_cert"]).read_bytes(), Path(options["tls_key"]).read_bytes()
            except OSError as exc:
                raise CommandError(str(exc)) from None
            credentials = grpc.ssl_server_credentials([(key, chain)])

        def ready(port: int) -> None:
            host = address.rsplit(":", 1)[0]
            self.stdout.write(f"A2A gRPC binding listening on {host}:{port}", ending="\n")
            self.stdout.flush()

        try:
            asyncio.run(server.serve(address, grace=options["grace"], credentials=credentials, ready=ready))
        except server.AddressInUseError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write("A2A gRPC binding stopped")
