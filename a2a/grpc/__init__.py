"""The gRPC binding of A2A v1.0 (spec section 10): the ``A2AService`` of the
specification's ``a2a.proto`` (``lf.a2a.v1``), served by grpcio's asyncio server.

- ``a2a.proto``: the specification's, verbatim; ``a2a_pb2.py``, ``a2a_pb2.pyi`` and
  ``a2a_pb2_grpc.py`` are compiled from it by ``generate.sh`` and committed.
- :mod:`a2a.grpc.service`: the servicer. Each method turns the request message into
  its ProtoJSON (the v1.0 JSON dialect is ProtoJSON of the same messages), parses it
  with the v1.0 dialect, calls the same operation as the HTTP bindings, and turns the
  dialect's rendering back into the response message: one converter, at the edge.
- :mod:`a2a.grpc.server`: the server (``manage.py a2a_grpc``, or beside the ASGI app
  with ``A2A_GRPC_IN_ASGI``).

Needs the ``grpc`` extra (docs/getting-started.md, Installing); nothing else
imports this package unless gRPC is asked for.
"""
