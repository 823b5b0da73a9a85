"""``manage.py a2a_agents [NAME ...]``: the remote agents of ``A2A_REMOTE_AGENTS``, each checked.

For each agent (or the ones named): its card is fetched, the interface the client will
speak picked (binding and A2A version) from those the card offers, and its signature
verified when the entry requires one. One line per agent; the exit status is non-zero
when a check fails (``--list``: print the entries without contacting them)::

    manage.py a2a_agents
    billing  ok    Billing: JSONRPC 1.0 at https://billing.example/a2a/ (offers ...); signature verified (kid k1)
    search   FAIL  Cannot reach https://search.internal/.well-known/agent-card.json (search): ...

``--own`` lists this project's agents instead (``A2A_AGENTS``): each one's card and, when it
serves MCP, its MCP endpoint (absolute with ``A2A_PUBLIC_URL``, else the path)::

    manage.py a2a_agents --own
    default  card /.well-known/agent-card.json  mcp /mcp
    billing  card /agents/billing/.well-known/agent-card.json  mcp /agents/billing/mcp
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a.agents import agents
from a2a.client import ClientError, remote
from a2a.client.card import interfaces
from a2a.client.sync import Client
from a2a.conf import a2a_settings
from a2a.core.retry import RetryPolicy
from a2a.service.mcp_endpoint import mcp_url


class Command(BaseCommand):
    help = (
        "List the remote agents of A2A_REMOTE_AGENTS and check each (card, version and bindings, signature);"
        " --own: this project's agents and their MCP endpoints."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="only these agents (default: all)")
        parser.add_argument("--list", action="store_true", help="only list the entries; contact no agent")
        parser.add_argument("--own", action="store_true", help="list this project's agents and their MCP endpoints")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["own"]:
            self.list_own(options["names"])
            return
        problems = remote.check_setting(a2a_settings.REMOTE_AGENTS)
        if problems:
            raise CommandError("A2A_REMOTE_AGENTS is not valid:\n  " + "\n  ".join(problems))
        agents = remote.remote_agents()
        if not agents:
            self.stdout.write("No remote agents (A2A_REMOTE_AGENTS is empty).")
            return
        unknown = [name for name in options["names"] if name not in agents]
        if unknown:
            raise CommandError(f"Not in A2A_REMOTE_AGENTS: {', '.join(unknown)} (configured: {', '.join(agents)})")
        chosen = [agents[name] for name in options["names"] or agents]
        width = max(len(agent.name) for agent in chosen)
        failed = 0
        for agent in chosen:
            if options["list"]:
                self.stdout.write(f"{agent.name:<{width}}  {agent.url}")
                continue
            ok, line = self.check_agent(agent)
            failed += not ok
            status = self.style.SUCCESS("ok  ") if ok else self.style.ERROR("FAIL")
            self.stdout.write(f"{agent.name:<{width}}  {status}  {line}")
        if failed:
            raise CommandError(f"{failed} of {len(chosen)} remote agents failed the check.")

    def check_agent(self, agent: remote.RemoteAgent) -> tuple[bool, str]:
        """(passed, what was found) for one agent: a fresh client, one attempt per request."""
        try:
            options = {**agent.client_options(), "retry": RetryPolicy(attempts=1)}
            with Client(agent.url, **options) as client:
                card = client.fetch_card()
        except (ClientError, ValueError) as exc:
            return False, str(exc)
        offered = ", ".join(f"{i.binding} {i.version}" for i in interfaces(card))
        signature = "signature not required"
        if client.verified is not None:
            signature = (
                f"signature verified (kid {client.verified.header.get('kid')!r}, over the {client.verified.covers})"
            )
        if not client.verify_signature and card.get("signatures"):
            signature = "signed (not verified: VERIFY_SIGNATURE is off)"
        return True, f"{card.get('name', '?')}: {client.interface} (offers {offered}); {signature}"

    def list_own(self, names: list[str]) -> None:
        """This project's agents (those of ``names``): the card's URL and the MCP endpoint."""
        own = agents()
        unknown = [name for name in names if name not in own]
        if unknown:
            raise CommandError(f"Not in A2A_AGENTS: {', '.join(unknown)} (configured: {', '.join(own)})")
        chosen = [own[name] for name in names or own]
        width = max(len(agent.name) for agent in chosen)
        for agent in chosen:
            base = a2a_settings.PUBLIC_URL.rstrip("/") if a2a_settings.PUBLIC_URL else ""
            card = base + agent.path("agent-card")
            mcp = mcp_url(agent) or "off (A2A_MCP)"
            self.stdout.write(f"{agent.name:<{width}}  card {card}  mcp {mcp}")
