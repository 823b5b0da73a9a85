"""The project's own Python functions as the model's tools (``A2A_LLM_TOOLS``: their
dotted paths), beside the remote agents of :mod:`a2a.handlers.tools`.

A function's name is the tool's (as the providers allow it), the first paragraph of its
docstring the description, and its parameters, read from the type hints, the JSON
schema (``str``, ``int``, ``float``, ``bool``, ``list[...]``, ``dict``, ``Literal[...]``,
``X | None``; a parameter with a default is optional)::

    def order_status(order: str, verbose: bool = False) -> str:
        \"\"\"The status of an order, by its number.\"\"\"
        ...

A sync function runs on a worker thread (never on the event loop), an ``async def`` on
the loop. What it returns is what the model reads (text as it is, anything else as JSON);
an exception is an error the model reads (its type and text), and is logged."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

_F = TypeVar("_F", bound=Callable[..., Any])
_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


@dataclass(frozen=True)
class FunctionTool:
    """One of the project's functions as a tool the model calls."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any]
    #: A person approves each call first (:func:`requires_approval`).
    approval: bool = False

    def spec(self, style: str) -> dict[str, Any]:
        """The tool as the request's ``tools`` lists it, in ``style``."""
        if style == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": self.parameters}
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": function}

    async def call(self, arguments: Any) -> tuple[str, bool]:
        """Run the function on the model's ``arguments`` (JSON text or an object): what
        the model reads, and whether it is an error."""
        kwargs, problem = self.arguments(arguments)
        if problem:
            return problem, True
        try:
            if inspect.iscoroutinefunction(self.function):
                result = await self.function(**kwargs)
            else:
                result = await asyncio.to_thread(functools.partial(self.function, **kwargs))
        except Exception as exc:
            logger.info("tool %s raised %s", self.name, type(exc).__name__, exc_info=exc)
            return f"{type(exc).__name__}: {exc}"[:1000], True
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str), False

    def arguments(self, arguments: Any) -> tuple[dict[str, Any], str]:
        """The keyword arguments of a call, or what is wrong with them."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                arguments = None
        if not isinstance(arguments, dict):
            return {}, f"The arguments of {self.name!r} must be a JSON object, not {str(arguments)[:200]}."
        known = self.parameters["properties"]
        unknown = sorted(set(arguments) - set(known))
        missing = [name for name in self.parameters["required"] if name not in arguments]
        if unknown or missing:
            said = [f"unknown: {', '.join(unknown)}"] * bool(unknown) + [f"missing: {', '.join(missing)}"] * bool(
                missing
            )
            return {}, f"The arguments of {self.name!r} are wrong ({'; '.join(said)}); it takes {', '.join(known)}."
        return arguments, ""


def function_tool(function: Callable[..., Any], name: str | None = None) -> FunctionTool:
    """``function`` as a tool: its schema from its signature and type hints."""
    hints = typing.get_type_hints(function)
    properties: dict[str, Any] = {}
    required = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        properties[parameter.name] = schema_of(hints.get(parameter.name, str))
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    doc = inspect.getdoc(function) or ""
    description = doc.split("\n\n")[0].replace("\n", " ").strip() or function.__name__
    parameters = {"type": "object", "properties": properties, "required": required}
    approval = bool(getattr(function, "requires_approval", False))
    return FunctionTool(name or function.__name__, description[:1024], parameters, function, approval)


def requires_approval(function: _F) -> _F:
    """Mark a function whose every call a person approves first: the task waits in
    ``input-required`` (the conversation kept on it) until the client answers yes or no."""
    function.requires_approval = True  # type: ignore[attr-defined]
    return function


def schema_of(hint: Any) -> dict[str, Any]:
    """The JSON schema of a type hint (a string for anything it cannot say better)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return schema_of(options[0]) if len(options) == 1 else {"anyOf": [schema_of(a) for a in options]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set):
        return {"type": "array", "items": schema_of(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object"}
    return {"type": _SIMPLE.get(hint, "string")}


@functools.cache
def load_function_tool(path: str) -> FunctionTool:
    """The tool of the function at ``path`` (imported once per path)."""
    function = import_string(path)
    if not callable(function):
        raise TypeError(f"{path} is not callable")
    return function_tool(function)


def unusable_tools(paths: list[str]) -> str:
    """Why one of ``paths`` (``A2A_LLM_TOOLS``) cannot be a tool; "" when each can."""
    for path in paths:
        try:
            load_function_tool(str(path))
        except Exception as exc:
            return f"A2A_LLM_TOOLS names {path!r}, which cannot be a tool ({exc}): name a function by its dotted path."
    return ""
