"""Compressed message bodies (`MessageSysFlag.getCompressionType`, `MessageDecoder.decode`): which codec a
SYSFLAG names, and decoding it safely.

The broker stores compressed bodies as the producer sent them; only readers decompress. Codec modules
(`lz4`, `zstandard`) are imported when first needed, so a missing one costs only those bodies.
"""

from __future__ import annotations

import importlib
import zlib

from formats.errors import FormatError
from formats.structs import COMPRESSED_FLAG, COMPRESSION_TYPE_MASK, COMPRESSION_TYPE_NAMES

# Decompressed size above which we refuse (a body is at most 4 MiB compressed by default).
DEFAULT_MAX_BODY_SIZE = 256 * 1024 * 1024


class BodyNotDecoded(FormatError):
    """A compressed body that could not be decompressed (codec missing, unknown or corrupt stream)."""


def compression_type(sys_flag: int) -> str | None:
    """ "zlib", "lz4", "zstd" for a compressed body, None if SYSFLAG has no COMPRESSED_FLAG.

    Type bits 0 mean zlib (records written before 4.9.4); unused values give "unknown(N)".
    """
    if not sys_flag & COMPRESSED_FLAG:
        return None
    value = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    return COMPRESSION_TYPE_NAMES.get(value, f"unknown({value})")


def _codec(kind: str, module: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BodyNotDecoded(f"compressed ({kind}), not decoded: module {module!r} is not installed") from exc


def _too_big(kind: str, max_size: int) -> BodyNotDecoded:
    return BodyNotDecoded(f"compressed ({kind}), not decoded: larger than {max_size} bytes once decompressed")


def _zlib(body: bytes, max_size: int) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(body, max_size + 1)
    if len(out) > max_size:
        raise _too_big("zlib", max_size)
    if not d.eof:
        raise BodyNotDecoded("compressed (zlib), not decoded: truncated stream")
    return out


def _lz4(body: bytes, max_size: int) -> bytes:
    frame = _codec("lz4", "lz4.frame")
    d = frame.LZ4FrameDecompressor()
    out = d.decompress(body, max_length=max_size + 1)
    if len(out) > max_size:
        raise _too_big("lz4", max_size)
    if not d.eof:
        raise BodyNotDecoded("compressed (lz4), not decoded: truncated frame")
    return out


def _zstd(body: bytes, max_size: int) -> bytes:
    zstandard = _codec("zstd", "zstandard")
    out = bytearray()
    for chunk in zstandard.ZstdDecompressor().read_to_iter(body):
        out += chunk
        if len(out) > max_size:
            raise _too_big("zstd", max_size)
    # read_to_iter stops quietly on a truncated frame; the size is now known to be bounded.
    d = zstandard.ZstdDecompressor().decompressobj()
    d.decompress(body)
    if not d.eof:
        raise BodyNotDecoded("compressed (zstd), not decoded: truncated frame")
    return bytes(out)


_DECODERS = {"zlib": _zlib, "lz4": _lz4, "zstd": _zstd}


def decompress_body(body: bytes, sys_flag: int, *, max_size: int = DEFAULT_MAX_BODY_SIZE) -> bytes:
    """The body as the producer wrote it: decompressed when SYSFLAG says so, else unchanged.

    Raises `BodyNotDecoded` (text like "compressed (lz4), not decoded: ...") when the codec is
    missing or unknown, the stream is corrupt or truncated, or it would exceed `max_size` bytes.
    """
    kind = compression_type(sys_flag)
    if kind is None:
        return bytes(body)
    decoder = _DECODERS.get(kind)
    if decoder is None:
        raise BodyNotDecoded(f"compressed ({kind}), not decoded: unknown compression type")
    try:
        return decoder(bytes(body), max_size)
    except BodyNotDecoded:
        raise
    except Exception as exc:  # zlib.error, lz4's RuntimeError, zstandard.ZstdError, ...
        raise BodyNotDecoded(f"compressed ({kind}), not decoded: corrupt stream ({exc})") from exc


def compress_body(body: bytes, kind: str, level: int = 5) -> bytes:
    """Compress like the producer (`CompressorFactory`); returns the bytes a record would store.

    The stream format matches what Java readers accept; the exact bytes may differ from Java's.
    """
    if kind == "zlib":
        return zlib.compress(body, level)
    if kind == "lz4":
        return _codec("lz4", "lz4.frame").compress(body)
    if kind == "zstd":
        return _codec("zstd", "zstandard").ZstdCompressor(level=level).compress(body)
    raise FormatError(f"unknown compression type {kind!r}")


def compression_sys_flag(kind: str) -> int:
    """SYSFLAG bits a producer sets for a body compressed with `kind` (e.g. 0x301 for zlib)."""
    values = {"lz4": 1, "zstd": 2, "zlib": 3}
    if kind not in values:
        raise FormatError(f"unknown compression type {kind!r}")
    return COMPRESSED_FLAG | (values[kind] << 8)
