"""Agents built with a framework, served as handlers: ``A2A_HANDLER`` (or an agent's
``HANDLER``) may name a PydanticAI ``Agent``, a compiled LangGraph graph or an OpenAI
Agents SDK ``Agent`` directly, and :func:`as_handler` wraps it in its framework's adapter
(:mod:`.pydantic_ai`, :mod:`.langgraph`, :mod:`.openai_agents`: each a
:class:`~.adapter.FrameworkHandler`, the run skeleton they share, and the modules beside
it: :mod:`.answer`, :mod:`.progress`, :mod:`.awaiting`, :mod:`.usage`, :mod:`.history`,
:mod:`.message`, :mod:`.remote`). Nothing here imports a framework: an adapter module is
imported only for an object of its framework, which the project's own module imported already.
docs/frameworks.md has the mapping table."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Framework:
    """One framework: its name, the extra that installs it and that extra's requirements
    (pyproject.toml's), the top-level modules its objects come from, and the adapter
    module that serves them."""

    name: str
    extra: str
    requirements: tuple[str, ...]
    modules: tuple[str, ...]
    adapter: str

    @property
    def install(self) -> str:
        """What installs it, wherever the package came from: the package is on no index,
        so ``pip install 'django-a2a-agent[extra]'`` would find nothing; the extra's own
        requirements are on PyPI."""
        packages = " ".join(f'"{requirement}"' for requirement in self.requirements)
        return f"Install it: pip install {packages} (the {self.extra} extra; docs/getting-started.md, Installing)."


FRAMEWORKS = (
    Framework(
        "PydanticAI",
        "pydantic-ai",
        ("pydantic-ai-slim>=2.68,<3",),
        ("pydantic_ai", "pydantic_graph"),
        f"{__name__}.pydantic_ai",
    ),
    Framework(
        "LangGraph",
        "langgraph",
        ("langgraph>=1.2.22,<2", "langchain-core>=1.8.1,<2"),
        ("langgraph", "langchain_core"),
        f"{__name__}.langgraph",
    ),
    Framework(
        "the OpenAI Agents SDK",
        "openai-agents",
        ("openai-agents>=0.24,<0.25",),
        ("agents",),
        f"{__name__}.openai_agents",
    ),
)


def framework_of(obj: Any) -> Framework | None:
    """The framework whose class (or a base of it) ``obj`` is an instance of, by module name."""
    roots = {cls.__module__.split(".")[0] for cls in type(obj).__mro__}
    return next((f for f in FRAMEWORKS if roots & set(f.modules)), None)


def as_handler(obj: Any) -> Any:
    """``obj`` served as a handler: a framework's agent wrapped in its adapter (the
    adapter's ``serves(obj)``), anything else as it is."""
    framework = framework_of(obj)
    if framework is None:
        return obj
    try:
        adapter = importlib.import_module(framework.adapter)
    except ImportError:  # a module of the same name that is not the framework (a project's own `agents`)
        return obj
    served = adapter.serves(obj)
    return obj if served is None else served


def missing_framework(exc: BaseException, path: str = "") -> Framework | None:
    """The framework whose absence ``exc`` (raised importing the handler ``path``) reports,
    if any (a project's own package of the same name as a framework's, missing, is not)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    root = exc.name.split(".")[0]
    if root == path.split(".")[0]:
        return None
    return next((f for f in FRAMEWORKS if root in f.modules), None)


def unusable_handler(path: str, exc: BaseException) -> tuple[str, str]:
    """Why the handler ``path`` cannot be used (``exc``, raised loading it), and the hint:
    for an agent of a framework that is not installed, the extra to install."""
    framework = missing_framework(exc, path)
    if framework is not None:
        return f"A2A_HANDLER {path!r} needs {framework.name}, which is not installed ({exc})", framework.install
    hint = "Name a callable or a framework's agent by its dotted path, e.g. 'myproject.agent.handle'."
    return f"A2A_HANDLER {path!r} cannot be used: {exc}", hint
