"""A2A (Agent2Agent protocol) for Django: Agent Card, JSON-RPC, background fulfilment."""

__version__ = "0.2.0"
