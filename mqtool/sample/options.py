"""What `mqtool sample create` is asked for (`SampleOptions`, its defaults, `SampleError`) and the names of
the simulated cluster: broker `broker-a` of DefaultCluster at 192.168.0.10:10911, its topics and groups."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from formats.errors import MqtoolError
from formats.names import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC

DEFAULT_MESSAGES = 10_000
DEFAULT_SEED = 20240601
DEFAULT_START_TIME = 1_717_200_000_000  # 2024-06-01T00:00:00Z
DEFAULT_FILE_SIZE = 1024 * 1024
SAMPLE_CQ_FILE_SIZE = 6000  # 300 units: several files per busy queue
DEFAULT_HASH_SLOT_NUM = 4096
DEFAULT_INDEX_NUM = 16_000
DEFAULT_PRODUCERS = 3

BROKER_NAME = "broker-a"
CLUSTER = "DefaultCluster"
STORE_HOST = (bytes([192, 168, 0, 10]), 10911)
HALF_TOPIC, OP_TOPIC = TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
GROUP_A, GROUP_B = "groupA", "groupB"
RETRY_A, DLQ_A = "%RETRY%groupA", "%DLQ%groupA"
PRODUCER_GROUP = "txProducerGroup"


class SampleError(MqtoolError):
    """The sample store cannot be created as asked."""


@dataclass
class SampleOptions:
    """How `create_sample` builds a store (defaults: a small store like the golden ones)."""

    directory: Path
    messages: int = DEFAULT_MESSAGES
    seed: int = DEFAULT_SEED
    file_size: int = DEFAULT_FILE_SIZE
    cq_file_size: int = SAMPLE_CQ_FILE_SIZE
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM
    index_num: int = DEFAULT_INDEX_NUM
    version: int = 5
    start_time: int = DEFAULT_START_TIME
    zone: tzinfo | None = None
    # producer connections the messages come from (born hosts); 0 = a new connection per message, as
    # producers created per request (scripts, serverless functions) connect from a new ephemeral port
    producers: int = DEFAULT_PRODUCERS
    # with producers 0: how many of every 1000 per-message connections come from IPv6 clients (dual-stack
    # networks; a born host of 16 address bytes and the sysFlag bit the broker sets for it)
    ipv6_per_mille: int = 0
    # a one-peer DLedger group's store (enableDLegerCommitLog): entries in dledger-n0/data, not commitlog/
    dledger: bool = False
