"""What a server command (``grpo view``, ``grpo serve``) takes and prints about its address:
the ports there are (``--port``: ``number_arg(Range(*PORTS))``, checked before anything
starts), and the address a person can open as printed (an IPv6 host in brackets; a
listen-on-everything host as the loopback address, with a note on how another machine
reaches it)."""

from __future__ import annotations

import ipaddress
import socket

PORTS = (1, 65535)  # a TCP port (0 would be "any free one": the address printed would be wrong)


def _ip(host: str):
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def open_url(host: str, port: int) -> tuple[str, str | None]:
    """(the address to open, a note or None) for a server bound to ``host:port``.

    ``::1`` -> ``http://[::1]:PORT/``; ``0.0.0.0`` (or ``::``) listens on every interface and
    cannot be opened as such: the loopback address is given, and the note says how another
    machine reaches it (this machine's name)."""
    ip = _ip(host)
    if ip is not None and ip.is_unspecified:
        here = "127.0.0.1" if ip.version == 4 else "[::1]"
        name = socket.gethostname() or "THIS-MACHINE"
        return (f"http://{here}:{port}/",
                f"it listens on every interface ({host}): from another machine open http://{name}:{port}/ "
                f"(or this machine's address)")
    if ip is not None and ip.version == 6:
        return f"http://[{ip.compressed}]:{port}/", None
    return f"http://{host}:{port}/", None


__all__ = ["open_url", "PORTS"]
