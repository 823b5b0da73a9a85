"""A project module whose agent is a PydanticAI one (the missing-framework check imports it)."""

from pydantic_ai import Agent

agent = Agent(name="needs-pydantic-ai")
