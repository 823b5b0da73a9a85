"""More agents served by this project."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Agents (a2a/agents.py, docs/agents.md)"

DECLARED: dict[str, Setting] = {
    "A2A_AGENTS": Setting(
        dict,
        {},
        check_id="a2a.E110",
        doc='More agents served by this project, by name: {"billing": {"AGENT_NAME": "Billing", "HANDLER": '
        '"billing.agent.handle", "SKILLS_DIR": "billing/skills", "LISTED": True, ...}}: '
        "each option is a per-agent setting without its A2A_ prefix (every one: docs/agents.md); an agent "
        "reads the settings it does not name from the project. The single-agent settings are the default "
        "agent's. Each agent's tasks live in TASK_STORE, apart from the other agents'. Checked: a2a.E110.",
    ),
}
