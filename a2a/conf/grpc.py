"""The gRPC binding: the interface the card advertises, the server's address."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = 'The gRPC binding (a2a/grpc; the "grpc" extra)'

DECLARED: dict[str, Setting] = {
    "A2A_GRPC_URL": Setting(
        str,
        None,
        check_id="a2a.E091",
        doc='The gRPC interface the Agent Card advertises (supportedInterfaces: protocolBinding "GRPC", '
        'protocolVersion "1.0"), as clients dial it: "host:port", e.g. "agent.example.com:50051". None: '
        "the card names no gRPC interface. Checked: a2a.E091.",
    ),
    "A2A_GRPC_ADDRESS": Setting(
        str,
        "127.0.0.1:50051",
        check_id="a2a.E091",
        doc='"host:port" the gRPC server listens on (`manage.py a2a_grpc`, unless --address says otherwise). '
        "Checked: a2a.E091.",
    ),
    "A2A_GRPC_IN_ASGI": Setting(
        bool,
        False,
        check_id="a2a.E090",
        doc="Also serve gRPC on A2A_GRPC_ADDRESS from the ASGI app (a2a.asgi), beside HTTP in the same "
        "process and event loop, started and stopped with it (several worker processes share the port only "
        "with A2A_GRPC_REUSE_PORT). False: only `manage.py a2a_grpc` serves it. Checked: a2a.E090 (the grpc "
        "extra is installed).",
    ),
    "A2A_GRPC_REUSE_PORT": Setting(
        bool,
        False,
        doc="Whether gRPC servers share A2A_GRPC_ADDRESS's port (SO_REUSEPORT), as the worker processes of one "
        "deployment with A2A_GRPC_IN_ASGI do (`uvicorn --workers 4`). False: a port in use stops the start-up.",
    ),
}
