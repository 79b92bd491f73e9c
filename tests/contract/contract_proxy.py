"""The fault tests' TCP proxy, now shared by every suite: see ``support.tcp_proxy``."""

from __future__ import annotations

from support.tcp_proxy import TcpProxy

__all__ = ["TcpProxy"]
