"""Message ids (`MessageDecoder.createMessageId`, `MessageClientIDSetter`): offsetMsgId (store host + physical
offset) and UNIQ_KEY, plus host text.

Hosts print as `ip:port` or `[ipv6]:port` (compressed IPv6). Hex ids are upper case when created and
read case-insensitively. Unlike the broker, decoding validates hex digits and length.
"""

from __future__ import annotations

import ipaddress
import string
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import NamedTuple

from formats.errors import FormatError

_HEX = frozenset(string.hexdigits)


# --- hosts ------------------------------------------------------------------------------------------


def address_str(address: bytes) -> str:
    """Text of a 4- or 16-byte address (IPv6 in compressed form)."""
    if len(address) == 4:
        return str(ipaddress.IPv4Address(bytes(address)))
    if len(address) == 16:
        return ipaddress.IPv6Address(bytes(address)).compressed
    raise FormatError(f"a host address has 4 or 16 bytes, not {len(address)}")


def host_str(address: bytes, port: int) -> str:
    """`ip:port` for IPv4, `[ipv6]:port` for IPv6."""
    text = address_str(address)
    return f"[{text}]:{port}" if len(address) == 16 else f"{text}:{port}"


def parse_host(text: str) -> tuple[bytes, int]:
    """(address bytes, port) of `ip:port`, `[ipv6]:port` or Java's bracketless `a:b:...:h:port`."""
    try:
        if text.startswith("["):
            host, sep, port = text[1:].partition("]:")
            if not sep:
                raise ValueError("missing ']:'")
        else:
            host, sep, port = text.rpartition(":")
            if not sep:
                raise ValueError("missing ':port'")
        if not port.isascii() or not port.isdigit() or int(port) > 65535:
            raise ValueError(f"bad port {port!r}")
        return ipaddress.ip_address(host).packed, int(port)
    except ValueError as exc:
        raise FormatError(f"not a host:port: {text!r} ({exc})") from None


# --- offsetMsgId (MessageDecoder.createMessageId) -------------------------------------------------


class OffsetMsgId(NamedTuple):
    address: bytes
    port: int
    offset: int

    @property
    def host(self) -> str:
        return host_str(self.address, self.port)


def _hex_bytes(text: str, what: str) -> bytes:
    if len(text) not in (32, 56):
        raise FormatError(f"{what} {text!r} has {len(text)} characters, not 32 or 56")
    if not _HEX.issuperset(text):
        raise FormatError(f"{what} {text!r} is not hexadecimal")
    return bytes.fromhex(text)


def create_offset_msg_id(store_host_address: bytes, port: int, phy_offset: int) -> str:
    """`MessageDecoder.createMessageId`: store address + int32 port + int64 offset, upper-case hex."""
    if len(store_host_address) not in (4, 16):
        raise FormatError(f"a host address has 4 or 16 bytes, not {len(store_host_address)}")
    raw = (
        bytes(store_host_address)
        + port.to_bytes(4, "big", signed=True)
        + phy_offset.to_bytes(8, "big", signed=True)
    )
    return raw.hex().upper()


def decode_offset_msg_id(msg_id: str) -> OffsetMsgId:
    """`MessageDecoder.decodeMessageId`, strict: 32 (IPv4) or 56 (IPv6) hex characters."""
    raw = _hex_bytes(msg_id, "offsetMsgId")
    n = len(raw) - 12
    return OffsetMsgId(
        raw[:n],
        int.from_bytes(raw[n : n + 4], "big", signed=True),
        int.from_bytes(raw[n + 4 :], "big", signed=True),
    )


def looks_like_offset_msg_id(msg_id: str) -> bool:
    """Syntax only: 32 or 56 hex digits. A UNIQ_KEY has the same shape (`MessageDecoder.decodeMessageId`,
    `MessageClientIDSetter`)."""
    return len(msg_id) in (32, 56) and _HEX.issuperset(msg_id)


# --- UNIQ_KEY (MessageClientIDSetter) -------------------------------------------------------------


def _month_start(year: int, month: int, tz: tzinfo) -> int:
    return round(datetime(year, month, 1, tzinfo=tz).timestamp() * 1000)


@dataclass(frozen=True)
class UniqKeyInfo:
    """The parts of a UNIQ_KEY (`MessageClientIDSetter`)."""

    ip_bytes: bytes
    pid: int  # low 16 bits of the producer's process id, unsigned
    class_loader_hash: int  # int32
    time_span_ms: int  # unsigned ms since the start of the producer's month
    counter: int  # uint16

    @property
    def ip(self) -> str:
        return address_str(self.ip_bytes)

    def nearly_time(self, now_ms: int, tz: tzinfo) -> int:
        """`getNearlyTimeFromID`: month start (in `tz`) + span, one month back if not before now."""
        now = datetime.fromtimestamp(now_ms / 1000, tz)
        start = _month_start(now.year, now.month, tz)
        if start + self.time_span_ms >= now_ms:
            year, month = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
            start = _month_start(year, month, tz)
        return start + self.time_span_ms


def decode_uniq_key(key: str) -> UniqKeyInfo:
    """Split a 32- or 56-hex-character UNIQ_KEY into ip, pid, class-loader hash, time span, counter."""
    raw = _hex_bytes(key, "UNIQ_KEY")
    ip_len = 16 if len(raw) == 28 else 4
    rest = raw[ip_len:]
    return UniqKeyInfo(
        ip_bytes=raw[:ip_len],
        pid=int.from_bytes(rest[0:2], "big"),
        class_loader_hash=int.from_bytes(rest[2:6], "big", signed=True),
        time_span_ms=int.from_bytes(rest[6:10], "big"),
        counter=int.from_bytes(rest[10:12], "big"),
    )
