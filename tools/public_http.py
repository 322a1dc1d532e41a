"""Outbound HTTP to addresses an owner chose (the operators' webhook): public addresses only,
checked on the connection itself.

A check of the URL before sending cannot see where a host *name* leads, and a name can resolve
elsewhere a moment later (DNS rebinding). So the transport resolves the name when it connects,
refuses if any address is loopback, private, link-local, reserved, or an IPv4 one of those
carried inside IPv6 (mapped, NAT64, 6to4, Teredo), and connects to the very address it checked.
TLS still verifies the certificate against the name (httpcore passes the origin host as SNI).

Deliberately wider than the loopback rule (invoicebox.hosts): an owner's URL may reach
no internal address at all, not merely not this machine.

Written by hand: no kept library does this for httpx (advocate is for requests and unkept).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from invoicebox.hosts import is_loopback

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 prefixes that carry an IPv4 address in their last 32 bits (RFC 6052, RFC 8215).
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


class NonPublicAddress(httpcore.ConnectError):
    """The name leads to an address the gateway must not call; nothing was sent."""

    # Read by the Invoicebox transport (which does not import the core): a refusal, not a
    # network fault, so even a write's outcome is known (nothing left).
    nothing_sent = True


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for, if it carries one."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in network for network in NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    inner = embedded_ipv4(address)
    if inner is not None and not inner.is_global:
        return False
    return address.is_global and not address.is_multicast


def is_internal_literal(host: str | None) -> bool:
    """A host written as this machine (localhost, loopback) or as a non-public address literal:
    refused before anything is queued or stored; names are checked when connecting."""
    if is_loopback(host):
        return True
    try:
        return not is_public(ipaddress.ip_address(host or ""))
    except ValueError:
        return False


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise httpcore.ConnectError(f"имя {host!r} не разрешается ({error.strerror})") from None
    # Scope ids ("fe80::1%eth0") are cut off: the address itself decides.
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in found]


class PublicOnlyBackend(httpcore.SyncBackend):
    """httpcore's own sync backend, connecting only to checked public addresses."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = _resolve(host, port)
        refused = [str(a) for a in addresses if not is_public(a)]
        if refused or not addresses:
            raise NonPublicAddress(
                f"{host} ведёт на внутренний адрес "
                f"{', '.join(refused) or '(нет адресов)'}: запрещено"
            )
        return super().connect_tcp(str(addresses[0]), port, timeout, local_address, socket_options)


class PublicOnlyTransport(httpx.HTTPTransport):
    """httpx's default transport whose connection pool connects through PublicOnlyBackend."""

    def __init__(self) -> None:
        super().__init__()
        # httpx builds its pool without a way to name the backend; rebuilt with the same TLS
        # context (tests/tools/test_webhook_egress.py fails if this stops taking effect).
        self._pool = httpcore.ConnectionPool(
            ssl_context=self._pool._ssl_context, network_backend=PublicOnlyBackend()
        )
