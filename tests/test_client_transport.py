"""a2a.client's HTTP behaviour against fake agents (httpx.MockTransport, a loopback socket):
retries by the safe-to-retry rule, Retry-After, OAuth2 tokens cached and refreshed on 401,
credentials and the trace context on every request, timeouts as clear errors."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest

from a2a.client import (
    AgentTimeoutError,
    AgentUnavailableError,
    APIKey,
    AsyncClient,
    AuthenticationError,
    BearerToken,
    Client,
    HeaderAuth,
    Interface,
    MethodNotFound,
    OAuth2ClientCredentials,
    RetryPolicy,
    TaskNotFound,
)
from a2a.client.auth import from_setting
from a2a.client.retry import retry_after
from a2a.testing import rpc_error, rpc_result

RPC = Interface("http://agent.test/a2a/", "JSONRPC", "1.0")
REST = Interface("http://agent.test/a2a/rest", "HTTP+JSON", "1.0")
FAST = RetryPolicy(attempts=3, backoff=0.001)
TASK = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}


def result_response(request: httpx.Request, result: object) -> httpx.Response:
    """The JSON-RPC answer to ``request`` a server gives with ``result``."""
    body = json.loads(request.content)
    return httpx.Response(200, json=rpc_result(result, body["id"]))


class Agent:
    """A scripted agent: each request gets the next of ``answers`` (a status code, an
    exception to raise, or None for a good answer); every request is kept."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, int):
            return httpx.Response(answer, headers={"Retry-After": "0"} if answer == 429 else {}, text="busy")
        method = json.loads(request.content)["method"]
        return result_response(request, {"task": TASK} if method == "SendMessage" else TASK)

    def client(self, **options) -> Client:
        return Client(RPC, transport=httpx.MockTransport(self), retry=options.pop("retry", FAST), **options)


def test_a_read_is_retried_on_503_then_succeeds():
    agent = Agent(503, 503)
    assert agent.client().get_task("t-1")["status"]["state"] == "completed"
    assert len(agent.requests) == 3


def test_429_honours_retry_after_and_the_attempts_end():
    agent = Agent(429, 429, 429)
    with pytest.raises(AgentUnavailableError, match="HTTP 429"):
        agent.client().get_task("t-1")
    assert len(agent.requests) == 3
    assert retry_after("7") == 7.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("soon") is None


def test_a_long_retry_after_is_not_waited_for():
    agent = Agent(503)
    policy = RetryPolicy(attempts=3, max_retry_after=5)
    response = httpx.Response(503, headers={"Retry-After": "3600"})
    assert policy.after_response(response, 1, write=False) is None
    assert policy.after_response(httpx.Response(503, headers={"Retry-After": "2"}), 1, write=False) == 2.0
    assert agent.client().get_task("t-1")  # 503 without Retry-After: backoff


def test_a_send_is_retried_only_when_it_cannot_have_reached_the_agent():
    refused = Agent(httpx.ConnectError("refused"), 503)
    assert refused.client().send("hi")["id"] == "t-1"
    assert len(refused.requests) == 3
    ids = {json.loads(r.content)["params"]["message"]["messageId"] for r in refused.requests}
    assert len(ids) == 1  # the same message each time

    for maybe_done in (502, 504, httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("cut")):
        agent = Agent(maybe_done)
        with pytest.raises((AgentUnavailableError, AgentTimeoutError)):
            agent.client().send("hi")
        assert len(agent.requests) == 1, maybe_done
        read = Agent(maybe_done)
        assert read.client().get_task("t-1")["id"] == "t-1"
        assert len(read.requests) == 2


def test_retry_writes_resends_the_same_message_id():
    agent = Agent(502, httpx.ReadTimeout("slow"))
    client = agent.client(retry=RetryPolicy(attempts=3, backoff=0.001, retry_writes=True))
    assert client.send("hi")["id"] == "t-1"
    ids = [json.loads(r.content)["params"]["message"]["messageId"] for r in agent.requests]
    assert len(ids) == 3 and len(set(ids)) == 1


def test_async_retries_alike():
    agent = Agent(503, httpx.ConnectError("refused"))

    async def go():
        async with AsyncClient(RPC, transport=httpx.MockTransport(agent), retry=FAST) as client:
            return await client.send("hi")

    assert asyncio.run(go())["id"] == "t-1"
    assert len(agent.requests) == 3


def test_credentials_and_headers_on_every_request():
    for auth, header, value in (
        (BearerToken("tok"), "Authorization", "Bearer tok"),
        (APIKey("k1", "X-Key"), "X-Key", "k1"),
        (HeaderAuth({"X-Tenant": "acme"}), "X-Tenant", "acme"),
        (from_setting({"TYPE": "api_key", "KEY": "k2"}), "X-API-Key", "k2"),
    ):
        agent = Agent()
        agent.client(auth=auth, headers={"X-Extra": "1"}).get_task("t-1")
        request = agent.requests[0]
        assert request.headers[header] == value
        assert request.headers["X-Extra"] == "1" and request.headers["A2A-Version"] == "1.0"
    agent = Agent()
    agent.client().with_headers({"X-Caller": "alice"}).get_task("t-1")
    assert agent.requests[0].headers["X-Caller"] == "alice"
    with pytest.raises(ValueError, match="AUTH bearer needs TOKEN"):
        from_setting({"TYPE": "bearer"})


def test_the_trace_context_goes_along(settings):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    settings.A2A_TRACING = True
    agent = Agent()
    with trace.get_tracer("test").start_as_current_span("delegating") as span:
        agent.client().get_task("t-1")
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert agent.requests[0].headers["traceparent"].split("-")[1] == trace_id
    settings.A2A_TRACING = False
    agent.client().get_task("t-1")
    assert "traceparent" not in agent.requests[1].headers


class TokenServer:
    """An OAuth2 token endpoint and an agent that accepts only the latest token."""

    def __init__(self, expires_in: int = 3600) -> None:
        self.expires_in = expires_in
        self.issued: list[str] = []
        self.forms: list[str] = []
        self.revoked = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/token":
            self.forms.append(request.content.decode())
            if request.headers.get("Authorization") != "Basic aWQ6c2VjcmV0":  # id:secret
                return httpx.Response(401, json={"error": "invalid_client"})
            self.issued.append(f"token-{len(self.issued) + 1}")
            return httpx.Response(200, json={"access_token": self.issued[-1], "expires_in": self.expires_in})
        if self.revoked and request.headers.get("Authorization") == "Bearer token-1":
            return httpx.Response(401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        if request.headers.get("Authorization") != f"Bearer {self.issued[-1]}":
            return httpx.Response(401)
        return result_response(request, TASK)


def oauth(server: TokenServer, secret: str = "secret", **options) -> tuple[Client, OAuth2ClientCredentials]:
    auth = OAuth2ClientCredentials("http://auth.test/token", "id", secret, scope="a2a", **options)
    return Client(RPC, transport=httpx.MockTransport(server), auth=auth, retry=FAST), auth


def test_oauth2_token_is_cached_then_refreshed_once_on_401():
    server = TokenServer()
    client, auth = oauth(server)
    client.get_task("t-1")
    client.get_task("t-1")
    assert server.issued == ["token-1"] and auth.fetched == 1
    assert "grant_type=client_credentials" in server.forms[0] and "scope=a2a" in server.forms[0]
    server.revoked = True
    assert client.get_task("t-1")["id"] == "t-1"
    assert server.issued == ["token-1", "token-2"]


def test_oauth2_token_expiry_and_refusal():
    now = [0.0]
    server = TokenServer(expires_in=60)
    client, auth = oauth(server, clock=lambda: now[0], leeway=10)
    client.get_task("t-1")
    now[0] = 49.0
    client.get_task("t-1")
    assert auth.fetched == 1
    now[0] = 51.0
    client.get_task("t-1")
    assert auth.fetched == 2
    refused, _ = oauth(TokenServer(), secret="wrong")
    with pytest.raises(
        AuthenticationError, match=r"token endpoint .* refused client 'id': HTTP 401 \(invalid_client\)"
    ):
        refused.get_task("t-1")


def test_a_401_the_token_does_not_fix_is_an_authentication_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, headers={"WWW-Authenticate": "Bearer"})

    client = Client(RPC, transport=httpx.MockTransport(handler), auth=BearerToken("old"))
    with pytest.raises(AuthenticationError, match="HTTP 401, the credentials were refused") as error:
        client.get_task("t-1")
    assert error.value.status == 401


def test_rest_error_bodies_are_typed():
    def handler(request: httpx.Request) -> httpx.Response:
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}
        body = {"error": {"code": 404, "status": "NOT_FOUND", "message": "Task not found: x", "details": [info]}}
        return httpx.Response(404, json=body)

    client = Client(REST, transport=httpx.MockTransport(handler))
    with pytest.raises(TaskNotFound, match="the agent answered error -32001: Task not found: x") as error:
        client.get_task("x")
    assert error.value.http_status == 404


@pytest.fixture
def silent_server():
    """A loopback server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


def test_a_slow_agent_is_a_clear_timeout(silent_server):
    client = Client(Interface(f"{silent_server}/a2a/"), timeout=0.3, retry=FAST)
    started = time.monotonic()
    with pytest.raises(AgentTimeoutError, match=r"POST .*/a2a/ timed out after 0.3s"):
        client.send("hi")
    assert time.monotonic() - started < 2  # a send is not retried after it went out
    with pytest.raises(AgentTimeoutError):
        client.get_task("t-1")  # a read is, and times out each time


def test_an_agent_that_is_down_cannot_be_reached():
    with pytest.raises(AgentUnavailableError, match=r"Cannot reach http://127.0.0.1:9/a2a/"):
        Client(Interface("http://127.0.0.1:9/a2a/"), retry=FAST).get_task("t-1")


def test_operations_are_not_redirected_and_the_card_is_fetched_without_credentials():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "old.test":
            return httpx.Response(301, headers={"Location": f"http://new.test{request.url.path}"})
        card = {
            "name": "moved",
            "supportedInterfaces": [
                {"url": "http://old.test/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
        }
        return httpx.Response(200, json=card)

    client = Client("http://old.test", transport=httpx.MockTransport(handler), auth=APIKey("secret"), retry=FAST)
    assert client.fetch_card()["name"] == "moved"  # followed to new.test
    assert [r.url.host for r in seen] == ["old.test", "new.test"]
    assert all("X-API-Key" not in r.headers for r in seen)
    with pytest.raises(AgentUnavailableError, match=r"HTTP 301, redirected to 'http://new.test/a2a/'"):
        client.get_task("t-1")
    assert seen[-1].url.host == "old.test" and seen[-1].headers["X-API-Key"] == "secret"


def test_a_client_from_a_catalog_entry():
    from a2a.client import client_for

    client = client_for({"URL": "https://agent.example.com", "AUTH": {"TYPE": "bearer", "TOKEN": "t"}, "TIMEOUT": 5})
    assert client.url == "https://agent.example.com" and client.timeout == 5.0
    assert isinstance(client.auth, BearerToken)
    with pytest.raises(ValueError, match="URL must be an absolute http"):
        client_for({"URL": "nowhere"})


def test_each_remote_error_class_has_the_protocol_code_of_its_name():
    from a2a.client.errors import _PROTOCOL_CLASSES, RemoteAgentError, remote_error

    for cls in RemoteAgentError.__subclasses__():
        assert _PROTOCOL_CLASSES[cls.code].__name__ == f"{cls.__name__}Error"
        assert type(remote_error(cls.code, "x")) is cls
    assert type(remote_error(-32099, "other")) is RemoteAgentError


V03_RPC = Interface("http://agent.test/", "JSONRPC", "0.3")


def toolnexus_agent(request: httpx.Request) -> httpx.Response:
    """toolnexus's dialect: v0.3 payloads, but only under the v1.0 method names, and a
    Task without its ``kind`` (nor a contextId)."""
    body = json.loads(request.content)
    if body["method"] not in ("SendMessage", "GetTask"):
        return httpx.Response(200, json=rpc_error(-32601, f"Method not found: {body['method']}", body["id"]))
    assert body["params"]["message" if body["method"] == "SendMessage" else "id"]
    return result_response(request, {"id": "t-1", "status": {"state": "completed"}})


@pytest.mark.parametrize("synchronous", [True, False])
def test_a_v03_agent_that_knows_only_the_v10_names_is_spoken_to_in_them(synchronous):
    seen: list[str] = []

    def agent(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content)["method"])
        return toolnexus_agent(request)

    transport = httpx.MockTransport(agent)
    if synchronous:
        with Client(V03_RPC, transport=transport) as client:
            sent, got = client.send("hello"), client.get_task("t-1")
    else:

        async def go():
            async with AsyncClient(V03_RPC, transport=transport) as client:
                return await client.send("hello"), await client.get_task("t-1")

        sent, got = asyncio.run(go())
    assert sent["id"] == got["id"] == "t-1" and got["status"]["state"] == "completed"
    assert seen == ["message/send", "SendMessage", "GetTask"]  # refused once, then the v1.0 names


def test_method_not_found_under_the_v10_names_is_the_agents_answer():
    def agent(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(200, json=rpc_error(-32601, "Method not found", body["id"]))

    with Client(RPC, transport=httpx.MockTransport(agent)) as client, pytest.raises(MethodNotFound):
        client.get_task("t-1")


def test_an_agent_that_refuses_both_names_gets_its_first_answer_and_the_v03_names_again():
    seen: list[str] = []

    def agent(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body["method"])
        code = -32601 if body["method"] == "tasks/list" else -32009  # v0.3 has no ListTasks; v1.0 is refused
        return httpx.Response(200, json=rpc_error(code, "no", body["id"]))

    with Client(V03_RPC, transport=httpx.MockTransport(agent)) as client:
        with pytest.raises(MethodNotFound):
            client.list_tasks()
        with pytest.raises(MethodNotFound):
            client.list_tasks()
    assert seen == ["tasks/list", "ListTasks", "tasks/list", "ListTasks"]
