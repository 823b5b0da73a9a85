"""The suite sends its requests through one set of helpers: the test kit's
:class:`~a2a.testing.client.WireClient` (``message``, ``send_params``, ``rpc_body``) and
``tests/helpers.py``. A test module defines no ``rpc``/``send``/``call``/``post`` helper
of its own and writes no JSON-RPC request envelope by hand, and ``free_port`` is written
once (``tests/ports.py``), so that the next test reuses what is there instead of adding
a copy. The modules that may: :data:`ALLOWED`."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Where a request helper or a hand-written envelope belongs (path prefixes), and why.
ALLOWED = {
    "tests/helpers.py": "the suite's shared helpers",
    "tests/jsonrpc/": "the JSON-RPC binding's own tests: the envelope is what they check",
    "tests/mcp/": "the MCP binding's own tests: MCP's envelopes (its _meta, its headers) are what they check",
    "tests/test_fuzz.py": "the fuzz tests send raw bodies: that is what they test",
    "tests/fuzz_": "the fuzz tests' strategies and checks",
    "tests/interop/clients/": "run by other SDKs' virtualenvs, which never import the project",
    "tests/thirdparty/run.py": "standard library only, so that any Python drives it",
    "tests/test_shape_helpers.py": "this check's own examples",
}

#: A request helper's name: one that starts with ``rpc``, ``send``, ``call`` or ``post``
#: (``postgres`` aside), after an ``a`` (async), a ``json`` or an underscore
#: (``send_message``, ``rpc10``, ``asend``, ``_jsonrpc``, ``sending``).
HELPER = re.compile(r"_?a?(json)?(rpc|send|call|post)(?!gres)\w*")


#: A free loopback port, by any of the names it went by.
PORT_HELPERS = ("free_port", "closed_port")


def allowed(path: str) -> bool:
    return path.startswith(tuple(ALLOWED))


def is_request(value: object) -> bool:
    """A JSON-RPC 2.0 request object."""
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0" and "method" in value


def literal_request(node: ast.AST) -> bool:
    """A dict display with ``"jsonrpc": "2.0"`` and ``"method"``, or a string holding one."""
    if isinstance(node, ast.Dict):
        keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
        jsonrpc = keys.get("jsonrpc")
        return isinstance(jsonrpc, ast.Constant) and jsonrpc.value == "2.0" and "method" in keys
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and _mentions_jsonrpc(node.value):
        try:
            return is_request(json.loads(node.value))
        except ValueError:
            return False  # not JSON: a deliberately broken body, sent raw
    return False


def _mentions_jsonrpc(value: str | bytes) -> bool:
    return (b"jsonrpc" if isinstance(value, bytes) else "jsonrpc") in value  # type: ignore[operator]


def findings(source: str, path: str) -> list[str]:
    """``path:line what`` for each request helper (a module-level function or a class's
    method), hand-written request envelope and ``free_port`` definition in ``source``."""
    tree = ast.parse(source)
    found = []
    scopes = [tree, *(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))]
    for scope in scopes:
        for node in scope.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and HELPER.fullmatch(node.name):
                found.append(f"{path}:{node.lineno} def {node.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in PORT_HELPERS:
            found.append(f"{path}:{node.lineno} def {node.name}")
        elif literal_request(node):
            found.append(f"{path}:{node.lineno} a JSON-RPC request written by hand")
    return found


def suite_findings() -> list[str]:
    """Every finding in ``tests/`` outside :data:`ALLOWED` (a port helper anywhere but ``tests/ports.py``)."""
    found = []
    for file in sorted((ROOT / "tests").rglob("*.py")):
        path = file.relative_to(ROOT).as_posix()
        for finding in findings(file.read_text(), path):
            port = finding.endswith(PORT_HELPERS)
            if path != "tests/ports.py" and not (allowed(path) and not port):
                found.append(finding)
    return found


def test_no_request_helper_or_hand_written_envelope_outside_the_shared_helpers():
    assert suite_findings() == []


def test_the_check_finds_what_it_looks_for():
    """Each kind of finding, written here, is found; a nested ASGI ``send`` callable, a
    response envelope and a deliberately broken raw body are not."""
    source = """
def rpc(method, params):
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}

class Session:
    async def asend_message(self): ...

    def _jsonrpc(self): ...

def free_port(): ...

def closed_port(): ...

RAW = b'{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {}}'
BROKEN = b'{"jsonrpc": "2.0", "id": 7, "method": '
ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {}}

def test_asgi():
    async def send(message): ...
"""
    assert [f.split(" ", 1)[1] for f in findings(source, "t.py")] == [
        "def rpc",
        "def asend_message",
        "def _jsonrpc",
        "def free_port",
        "def closed_port",
        "a JSON-RPC request written by hand",
        "a JSON-RPC request written by hand",
    ]
