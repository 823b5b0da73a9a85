"""A project module whose agent is an OpenAI Agents SDK one (the missing-framework check imports it)."""

from agents import Agent

agent = Agent(name="needs-openai-agents")
