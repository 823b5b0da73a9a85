"""The event backends ``A2A_EVENTS`` picks (:class:`a2a.core.events.EventBackends`):
``memory`` (in-process), ``redis`` (pub/sub) and ``postgres`` (LISTEN/NOTIFY), the
last two on the machinery of :mod:`a2a.core.eventbackends.base`."""
