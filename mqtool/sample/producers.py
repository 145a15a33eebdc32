"""What the simulated producers send: born hosts and UNIQ_KEYs as `MessageClientIDSetter` makes them, keys,
tags, user properties, bodies (some zlib-compressed), the ordered producer's queue, and the property strings
in the broker's `HashMap` iteration order; the simulated clock and the seeded random choices."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime

from formats.config.base import java_hash_order
from mqtool.sample.options import CLUSTER, DEFAULT_PRODUCERS, SampleError, SampleOptions

CLIENT_MACHINES = 64  # where producers that connect per message run (--producers 0)
IPV6_CLIENT_PREFIX = bytes.fromhex("20010db8") + bytes(11)  # 2001:db8::/32, the documentation prefix
TAGS = ("TagA", "TagB", "TagC", "TagD", "TagE")
REGIONS = ("cn-hangzhou", "eu-central-1", "us-west-2")


# --- producers and their message ids ---------------------------------------------------------------


class _Producer:
    """A client JVM: born host and the fixed part of its UNIQ_KEYs (`MessageClientIDSetter`)."""

    def __init__(self, rng: random.Random, index: int) -> None:
        address = bytes([192, 168, (101 + index) >> 8, (101 + index) & 0xFF])  # 192.168.0.101, .102, ...
        self.host = (address, 50000 + rng.randrange(10000))
        pid = rng.randrange(1, 1 << 16)
        classloader = rng.getrandbits(32)
        self.fix = (self.host[0] + pid.to_bytes(2, "big") + classloader.to_bytes(4, "big")).hex().upper()
        self.counter = rng.randrange(1 << 16)
        self.month_start = 0
        self.next_month = 0

    def uniq_key(self, now: int) -> str:
        if now >= self.next_month:
            dt = datetime.fromtimestamp(now / 1000, UTC)
            start = dt.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            nxt = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
            self.month_start = int(start.timestamp() * 1000)
            self.next_month = int(nxt.timestamp() * 1000)
        self.counter = (self.counter + 1) & 0xFFFF
        return f"{self.fix}{(now - self.month_start) & 0xFFFFFFFF:08X}{self.counter:04X}"


@dataclass(slots=True)
class _Stored:
    """What later records (delivery, commit, send-back) copy from a stored one."""

    topic: str
    queue_id: int
    body: bytes
    props: dict[str, str]
    props_raw: bytes | None
    sys_flag: int
    born_timestamp: int
    born_host: tuple[bytes, int]
    reconsume_times: int
    msg_id: str = ""
    physical_offset: int = 0
    queue_offset: int = 0
    raw_map: dict[str, str] | None = None  # decode_properties(props_raw) when props_raw is given


# --- the generator ---------------------------------------------------------------------------------


class _ProducerTraffic:
    """The seeded choices and the clock of a sample run, and the client messages they make."""

    def __init__(self, opts: SampleOptions) -> None:
        self.opts = opts
        self.v5 = opts.version >= 5
        self.rng = random.Random(opts.seed)
        self.clock = opts.start_time
        rng = self.rng
        self.random = rng.random
        self.pool = bytes(97 + b % 26 for b in rng.randbytes(1 << 20))
        if opts.producers < 0:
            raise SampleError(f"--producers must be 0 or more, not {opts.producers}")
        if not 0 <= opts.ipv6_per_mille <= 1000:
            raise SampleError(f"the IPv6 share is 0 to 1000 per mille, not {opts.ipv6_per_mille}")
        self.producers = [_Producer(rng, i) for i in range(opts.producers or DEFAULT_PRODUCERS)]
        self.capacity = 128 if self.v5 else 16
        self._orders: dict[tuple[str, ...], list[str]] = {}
        self.order_seq = 0

    def ordered(self, props: dict[str, str]) -> list[tuple[str, str]]:
        """The pairs in the broker's HashMap iteration order."""
        keys = tuple(props)
        order = self._orders.get(keys)
        if order is None:
            order = java_hash_order(keys, self.capacity)
            self._orders[keys] = order
        return [(k, props[k]) for k in order]

    def encode(self, props: dict[str, str]) -> bytes:
        pairs = self.ordered(props)
        text = "\x02".join(f"{k}\x01{v}" for k, v in pairs)
        if pairs and self.v5:
            text += "\x02"
        return text.encode("utf-8")

    def tick(self) -> None:
        self.clock += 1 + self.below(9)

    def order_queue(self, rec: _Stored) -> int:
        """The queue an ordered producer's selector picks: by the order key (any queue without one)."""
        keys = rec.props.get("KEYS")
        return int(keys.split(" ")[0][6:]) % 2 if keys else self.below(2)

    def below(self, n: int) -> int:
        """A random int in [0, n) (cheaper than Random.randrange, and as deterministic)."""
        return int(self.random() * n)

    def body(self) -> tuple[bytes, int]:
        n = 200 + self.below(801)
        o = self.below(len(self.pool) - n)
        body = self.pool[o : o + n]
        if self.random() < 0.04:
            return zlib.compress(body, 5), (0x301 if self.v5 else 0x1)
        return body, 0

    def client_message(self, topic: str, queue_id: int, extra: dict[str, str] | None = None) -> _Stored:
        """A producer's message as the broker stores it (UNIQ_KEY, CLUSTER, KEYS, TAGS, user props)."""
        r, below = self.random, self.below
        producer = self.producers[below(len(self.producers))]
        born = self.clock - 1 - below(5)
        props: dict[str, str] = {"UNIQ_KEY": producer.uniq_key(born), "CLUSTER": CLUSTER}
        x = r()
        half = max(1, self.opts.messages // 2)
        if x < 0.45:
            props["KEYS"] = f"order-{below(half)}"
        elif x < 0.65:
            props["KEYS"] = f"order-{below(half)} user-{below(1000)}"
        if r() < 0.8:
            props["TAGS"] = TAGS[below(len(TAGS))]
        if r() < 0.25:
            self.order_seq += 1
            props["seq"] = str(self.order_seq)
        if r() < 0.1:
            props["region"] = REGIONS[below(len(REGIONS))]
        if extra:
            props.update(extra)
        props["WAIT"] = "true"
        # 4.9.x SendMessageProcessor drops WAIT from the stored string of a plain message (the map keeps
        # it, so every string the broker rebuilds later has it again)
        raw = raw_map = None
        if not self.v5:
            raw_map = {k: v for k, v in props.items() if k != "WAIT"}
            raw = self.encode(raw_map)
        body, flag = self.body()
        host = producer.host if self.opts.producers else self.new_connection()
        return _Stored(topic, queue_id, body, props, raw, flag, born, host, 0, raw_map=raw_map)

    def new_connection(self) -> tuple[bytes, int]:
        """The born host of a producer that connects for this message alone: one of the client machines
        and a new ephemeral port (Linux's default range 32768-60999): the ports differ, the addresses
        repeat, as when scripts or functions on a few machines create a producer per request. With
        `ipv6_per_mille`, that many of every 1000 come from IPv6 clients (2001:db8::1 ...)."""
        if self.opts.ipv6_per_mille and self.below(1000) < self.opts.ipv6_per_mille:
            return IPV6_CLIENT_PREFIX + bytes([1 + self.below(CLIENT_MACHINES)]), 32768 + self.below(28232)
        return bytes([10, 20, 0, 1 + self.below(CLIENT_MACHINES)]), 32768 + self.below(28232)
