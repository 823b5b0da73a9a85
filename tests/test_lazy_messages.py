"""``a2a.http.messages.LazyFallbackStorage``: Django's ``FallbackStorage``, its cookie and
session storages built only when a message is read or added."""

from __future__ import annotations

import secrets

import pytest
from django.contrib import messages
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpResponse
from django.test import RequestFactory

from a2a.http.messages import LazyFallbackStorage

pytestmark = pytest.mark.django_db


def _request(cookies: dict[str, str] | None = None):
    request = RequestFactory().get("/")
    request.COOKIES.update(cookies or {})
    SessionMiddleware(lambda r: HttpResponse()).process_request(request)
    return request


def _round_trip(storage_class, texts: list[str]) -> tuple[list[str], list[str]]:
    """Messages added on one request and read on the next, carried as the first
    request's response left them (cookies; the session, saved): (read, left after)."""
    session = SessionMiddleware(lambda r: HttpResponse())
    first = _request()
    first._messages = storage_class(first)
    for text in texts:
        messages.info(first, text)
    response = HttpResponse()
    first._messages.update(response)
    session.process_response(first, response)
    second = _request({name: morsel.value for name, morsel in response.cookies.items()})
    second._messages = storage_class(second)
    read = [str(m) for m in second._messages]
    after = HttpResponse()
    second._messages.update(after)
    session.process_response(second, after)
    third = _request({name: morsel.value for name, morsel in after.cookies.items()})
    return read, [str(m) for m in storage_class(third)]


def test_a_request_that_uses_no_message_builds_no_storage(settings):
    settings.MESSAGE_STORAGE = "a2a.http.messages.LazyFallbackStorage"
    request = _request()
    response = MessageMiddleware(lambda r: HttpResponse())(request)
    storage = request._messages
    assert isinstance(storage, LazyFallbackStorage)
    assert "storages" not in vars(storage)  # neither the cookie storage (its signer) nor the session's
    assert not response.cookies


BIG = [secrets.token_urlsafe(1500), secrets.token_urlsafe(1500)]  # random: the cookie storage compresses


@pytest.mark.parametrize("texts", [["saved"], ["one", "two"], BIG], ids=["one", "two", "overflow"])
def test_messages_read_back_as_with_the_fallback_storage(texts):
    assert _round_trip(LazyFallbackStorage, texts) == _round_trip(FallbackStorage, texts) == (texts, [])


def test_what_the_cookie_cannot_hold_goes_to_the_session():
    request = _request()
    storage = request._messages = LazyFallbackStorage(request)
    for text in BIG:
        messages.info(request, text)
    storage.update(HttpResponse())
    assert "_messages" in request.session  # neither fits a cookie (about 2 KB each, after compression)
    assert [str(m) for m in storage.storages[1]._get()[0]] == BIG
