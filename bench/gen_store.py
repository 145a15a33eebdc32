"""Write a realistic synthetic commitlog for benchmarks (stand-alone; `mqtool sample create` will replace it).

    python bench/gen_store.py OUT_DIR [--size BYTES] [--file-size BYTES] [--seed N]

Writes OUT_DIR/commitlog/<20-digit offset> files laid out as a 5.x broker writes them: V1 records with
IPv4 hosts, bodies of 200-1000 random bytes with a correct body CRC, properties UNIQ_KEY, CLUSTER, TAGS,
KEYS (1-2 keys), WAIT, several topics and queues with consecutive queue offsets, correct physical offsets,
a blank record wherever the next record does not fit, and the last file zero-filled after the data
(sparse). `--size` is the number of record bytes to write. Every 997th record is decoded back with the
construct decoder (formats/message/commitlog.py) before the script reports success.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import struct
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formats.message.commitlog import Message, decode_record  # noqa: E402
from formats.structs import BLANK_MAGIC, MAGIC_V1  # noqa: E402

HEADER = struct.Struct(">iiiiiqqiq4si q4si iqi")  # up to and including BODYLENGTH (88 bytes)
BLANK = struct.Struct(">ii")
TOPICS = [
    ("TopicTest", 8),
    ("OrderTopic", 4),
    ("PaymentEvents", 16),
    ("user-activity-log", 8),
    ("AuditTrail", 2),
]
TOPIC_WEIGHTS = [40, 15, 25, 15, 5]
STORE_HOST = (bytes([10, 0, 3, 17]), 10911)


def _producers(rng: random.Random, count: int) -> list[tuple[bytes, int]]:
    return [
        (bytes([192, 168, rng.randrange(256), rng.randrange(1, 255)]), rng.randrange(30000, 65000))
        for _ in range(count)
    ]


def _properties(uniq: str, tags: str, keys: str) -> bytes:
    return (
        f"UNIQ_KEY\x01{uniq}\x02CLUSTER\x01DefaultCluster\x02TAGS\x01{tags}\x02KEYS\x01{keys}\x02WAIT\x01true\x02"
    ).encode()


def generate(out: Path, size: int, file_size: int, seed: int) -> tuple[int, list[tuple[int, int]]]:
    """Write the store; returns (message count, [(physical offset, record length)] of a sample)."""
    rng = random.Random(seed)
    pool = bytes(rng.choices(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", k=1 << 22))
    producers = _producers(rng, 64)
    queue_next: dict[tuple[str, int], int] = {}
    topic_names = [t for t, _ in TOPICS]
    topic_bytes = {t: t.encode() for t in topic_names}
    commitlog = out / "commitlog"
    commitlog.mkdir(parents=True, exist_ok=True)
    written = 0
    count = 0
    sample: list[tuple[int, int]] = []
    file_start = 0
    born = 1_700_000_000_000
    counter = 0
    while written < size:
        path = commitlog / f"{file_start:020d}"
        with open(path, "wb") as fh:
            fh.truncate(file_size)
        with open(path, "r+b") as fh:
            m = mmap.mmap(fh.fileno(), file_size)
        pos = 0
        while True:
            topic = rng.choices(topic_names, TOPIC_WEIGHTS)[0]
            queue_id = rng.randrange(dict(TOPICS)[topic])
            body_len = rng.randrange(200, 1001)
            start = rng.randrange(len(pool) - body_len)
            body = pool[start : start + body_len]
            counter += 1
            uniq = f"0A000311{os.getpid() & 0xFFFF:04X}1B6E4C3A{born & 0xFFFFFFFF:08X}{counter & 0xFFFF:04X}"
            keys = f"order-{rng.randrange(10**6)}" + (
                f" user-{rng.randrange(10**4)}" if rng.random() < 0.5 else ""
            )
            props = _properties(uniq, f"tag{rng.randrange(8)}", keys)
            tb = topic_bytes[topic]
            total = 91 + body_len + len(tb) + len(props)
            if total + 8 > file_size - pos or written >= size:
                break
            qkey = (topic, queue_id)
            qoff = queue_next.get(qkey, 0)
            queue_next[qkey] = qoff + 1
            host, port = producers[counter % len(producers)]
            born += rng.randrange(0, 3)
            crc = zlib.crc32(body) & 0x7FFFFFFF
            store_ts = born + rng.randrange(1, 20)
            HEADER.pack_into(
                m, pos, total, MAGIC_V1, crc, queue_id, 0, qoff, file_start + pos, 0,
                born, host, port, store_ts, STORE_HOST[0], STORE_HOST[1], 0, 0, body_len,
            )  # fmt: skip
            p = pos + HEADER.size
            m[p : p + body_len] = body
            p += body_len
            m[p] = len(tb)
            m[p + 1 : p + 1 + len(tb)] = tb
            p += 1 + len(tb)
            m[p : p + 2] = len(props).to_bytes(2, "big")
            m[p + 2 : p + 2 + len(props)] = props
            if count % 997 == 0:
                sample.append((file_start + pos, total))
            pos += total
            written += total
            count += 1
        if written < size:
            BLANK.pack_into(m, pos, file_size - pos, BLANK_MAGIC)
        m.flush()
        m.close()
        if written >= size:
            break
        file_start += file_size
    return count, sample


def verify_sample(out: Path, file_size: int, sample: list[tuple[int, int]]) -> None:
    """Decode sampled records with the construct decoder and check what the generator controls."""
    maps: dict[int, mmap.mmap] = {}
    for phys, total in sample:
        base = phys - phys % file_size
        if base not in maps:
            with open(out / "commitlog" / f"{base:020d}", "rb") as fh:
                maps[base] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        rec = decode_record(maps[base], phys - base, base, check_crc=True)
        assert isinstance(rec, Message), (phys, rec)
        assert rec.total_size == total and rec.physical_offset == phys and not rec.problems, rec
        assert rec.uniq_key and rec.keys and rec.tags, rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", type=int, default=1 << 30, help="record bytes to write (default 1 GiB)")
    ap.add_argument("--file-size", type=int, default=1 << 30, help="commitlog file size (default 1 GiB)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    count, sample = generate(args.out, args.size, args.file_size, args.seed)
    t1 = time.perf_counter()
    verify_sample(args.out, args.file_size, sample)
    print(
        f"wrote {count} messages, {args.size / 1e6:.0f} MB of records in {t1 - t0:.1f} s; "
        f"{len(sample)} sampled records checked by the construct decoder in {time.perf_counter() - t1:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
