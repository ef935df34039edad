"""A free TCP port for the servers the tests start (Gradio apps, stand-in providers, llama.cpp)."""

import socket


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
