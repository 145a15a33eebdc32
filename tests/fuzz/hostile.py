"""Hostile stores: the corruption families of issue 26, added to `corrupt.KINDS`.

* `names` - a hostile name in every name field: a record's topic (re-encoded at the same size, body CRC
  fixed, so the broker's check accepts it), the REAL_TOPIC / REAL_QID of a delayed, half or timer message,
  the LMQ queues of INNER_MULTI_DISPATCH, a topic or group key of a config file, a queue, topic or index
  directory name. Names: path separators, `..` and `../` climbs (deep enough to leave the store and the
  rebuild dry run's staging), NUL, over-long (128, 255, 256, 1000 bytes), non-UTF-8 bytes, control
  characters, blanks. `harness.execute` checks nothing was created outside the store (`escaped`).
* `sizes` - file-size outliers: a file truncated up (sparse) or down to 100 GiB, 2^31 - 1, 2^31, 2^32 - 10,
  2^32 + 1, one unit more or less, twice its size, 0 - at every file of the store.
* `special` - a FIFO, a socket, a symbolic link to /dev/zero or /dev/null (character devices), a
  symbolic link loop (to itself, or two links to each other), a directory, at every path the tool opens
  (every file of the store, and the optional ones: config/timercheck, timermetrics, the .bak files, lock,
  abort, checkpoint).
* `unwritable` - a write command (`--execute`) whose target cannot be written: the file chmod a-w, the
  directory it creates files in chmod a-w, a directory or FIFO where the file goes, a file where the
  directory goes, a symbolic link to /dev/full or to nowhere. The workers run as `nobody`, so permissions
  are real. `harness.execute` runs the command on a copy of its own and requires, on exit 1, the store
  byte for byte as it was (but the path made unwritable): refused before the first byte.

Each corruption says which file type's commands read what it changed (`Corruption.reads`), or for
`unwritable` which write command to run (`Corruption.focus`).
"""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

from .corrupt import (
    HOSTILE_KINDS,
    MAGIC_V1,
    MAGIC_V2,
    Corruption,
    Op,
    Record,
    StoreLayout,
    _cq_focus,
    _read,
)

NAMES_KIND, SIZES_KIND, SPECIAL_KIND, UNWRITABLE_KIND = HOSTILE_KINDS

# Names as stored bytes. The `../` climbs reach, from <store>/consumequeue, the worker's scratch
# directory (2 levels) and beyond; from the rebuild dry run's <tmp>/mqtool-rebuild-*/staging/consumequeue
# the scratch directory too (4 levels): anything created there is found (`harness.escaped`).
HOSTILE_NAMES: tuple[bytes, ...] = (
    b"../escaped",
    b"../../escaped",
    b"../../../escaped",
    b"../../../../escaped",
    b"../../../../../escaped",
    b"../" * 14 + b"x",
    b"a/b",
    b"/abs",
    b"..",
    b".",
    b"",
    b" ",
    b"Paym\x00ntEvents",
    b"\x00",
    b"x" * 128,
    b"x" * 255,
    b"x" * 256,
    b"x" * 1000,
    b"\xff\xfe",
    b"T\xc3(opic",
    "Tópico".encode(),
    b"\xef\xbf\xbd",
    b"a\nb",
    b"a\tb",
    b"a b",
    b"a\\b",
    b"%LMQ%..",
    b"%RETRY%g+t",
    b"%",
    b"-",
)


def hostile_name(rng: random.Random) -> bytes:
    return rng.choice(HOSTILE_NAMES)


def _c(kind: str, strategy: str, description: str, *ops: Op, focus: str = "", reads: str = "") -> Corruption:
    return Corruption(kind, strategy, description, tuple(ops), focus, reads)


# --- a record rewritten in place at the same size ------------------------------------------------


def _messages(layout: StoreLayout, topic: bytes | None = None) -> list[Record]:
    out = [r for r in layout.records if r.kind == "message"]
    if topic is not None:
        out = [r for r in out if _field(layout, r, "topic") == topic]
    return out


def _field(layout: StoreLayout, r: Record, name: str) -> bytes:
    start, n = r.fields[name]
    return _read(layout, r.file)[start : start + n]


def rewrite_in_place(
    layout: StoreLayout, r: Record, *, topic: bytes | None = None, props: bytes | None = None
) -> Op | None:
    """The record at `r` again with another topic and/or properties, at the same TOTALSIZE: the body is
    shortened or padded, BODYLENGTH and BODYCRC fixed, the magic made V2 for a topic over 127 bytes.
    None when the body has no room."""
    raw = _read(layout, r.file)[r.pos : r.pos + r.total]
    rel = {k: (p - r.pos, n) for k, (p, n) in r.fields.items()}
    topic = _field(layout, r, "topic") if topic is None else topic
    props = _field(layout, r, "properties") if props is None else props
    if len(topic) > 32767 or len(props) > 32767:
        return None
    body_at = rel["body"][0]
    width = 2 if len(topic) > 127 or struct.unpack_from(">I", raw, 4)[0] == MAGIC_V2 else 1
    room = r.total - body_at - width - len(topic) - 2 - len(props)
    if room < 0:
        return None
    old_body = raw[body_at : body_at + rel["body"][1]]
    body = old_body[:room] + b"b" * max(0, room - len(old_body))
    head = bytearray(raw[:body_at])
    struct.pack_into(">I", head, 4, MAGIC_V2 if width == 2 else MAGIC_V1)
    struct.pack_into(">i", head, rel["bodyCRC"][0], zlib.crc32(body) & 0x7FFFFFFF)
    struct.pack_into(">i", head, rel["bodyLength"][0], len(body))
    record = bytes(head) + body + len(topic).to_bytes(width, "big") + topic + struct.pack(">h", len(props))
    record += props
    assert len(record) == r.total
    return Op("write", r.file, offset=r.pos, data=record)


def _props(raw: bytes) -> list[tuple[bytes, bytes]]:
    return [tuple(p.split(b"\x01", 1)) for p in raw.split(b"\x02") if b"\x01" in p]  # type: ignore[misc]


def _encode_props(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(k + b"\x01" + v + b"\x02" for k, v in pairs)


def nm_record_topic(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    msgs = _messages(layout)
    if not msgs:
        return None
    r = rng.choice(msgs)
    name = hostile_name(rng)
    op = rewrite_in_place(layout, r, topic=name)
    if op is None:
        return None
    return _c(NAMES_KIND, "record-topic", f"record at {r.file}+{r.pos}: topic := {name[:60]!r}", op,
              reads="commitlog")  # fmt: skip


# properties a write turns into a queue: a delayed or half message's destination, LMQ queues
REAL_TOPIC_OF = {b"SCHEDULE_TOPIC_XXXX", b"RMQ_SYS_TRANS_HALF_TOPIC", b"rmq_sys_wheel_timer"}


def nm_record_property(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """REAL_TOPIC / REAL_QID of a record a write delivers, or INNER_MULTI_DISPATCH of any record."""
    messages = _messages(layout)
    if not messages:  # a store whose log mqtool walks as records holds none (a DLedger-only base)
        return None
    carriers = [r for r in messages if _field(layout, r, "topic") in REAL_TOPIC_OF]
    lmq = rng.random() < 0.4 or not carriers
    r = rng.choice(messages if lmq else carriers)
    pairs = [p for p in _props(_field(layout, r, "properties"))]
    name = hostile_name(rng)
    if lmq:
        names = [b"%LMQ%" + name, rng.choice((b"%LMQ%ok", name))][: rng.choice((1, 2))]
        pairs = [p for p in pairs if p[0] not in (b"INNER_MULTI_DISPATCH", b"INNER_MULTI_QUEUE_OFFSET")]
        pairs += [(b"INNER_MULTI_DISPATCH", b",".join(names)), (b"INNER_MULTI_QUEUE_OFFSET", b",".join(
            b"0" for _ in names))]  # fmt: skip
        what = f"INNER_MULTI_DISPATCH := {b','.join(names)[:60]!r}"
    elif rng.random() < 0.75:
        pairs = [p for p in pairs if p[0] != b"REAL_TOPIC"] + [(b"REAL_TOPIC", name)]
        what = f"REAL_TOPIC := {name[:60]!r}"
    else:
        qid = rng.choice((b"-1", b"2147483648", b"../1", b"1\x00", b"", b"99999999999999999999"))
        pairs = [p for p in pairs if p[0] != b"REAL_QID"] + [(b"REAL_QID", qid)]
        what = f"REAL_QID := {qid!r}"
    op = rewrite_in_place(layout, r, props=_encode_props(pairs))
    if op is None:
        return None
    return _c(NAMES_KIND, "record-property", f"record at {r.file}+{r.pos}: {what}", op, reads="commitlog")


def _json_string(name: bytes) -> bytes:
    """`name` as the body of a JSON string a broker could have written (escapes for controls, lone
    surrogates for bytes that are not UTF-8)."""
    text = name.decode("utf-8", "surrogateescape")
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or 0xD800 <= ord(ch) < 0xE000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out).encode("utf-8")


def nm_config_key(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A hostile topic or group in consumerOffset.json, topics.json, subscriptionGroup.json or
    messageRequestMode.json (and its .bak)."""
    choices = {
        "config/consumerOffset.json": b'"offsetTable":{',
        "config/topics.json": b'"topicConfigTable":{',
        "config/subscriptionGroup.json": b'"subscriptionGroupTable":{',
        "config/messageRequestMode.json": b'"messageRequestModeMap":{',
    }
    texts = layout.config_texts
    present = [rel for rel in choices if rel in texts and choices[rel] in texts[rel]]
    if not present:
        return None
    rel = rng.choice(present)
    if rng.random() < 0.2 and rel + ".bak" in layout.config_texts:
        rel += ".bak"
    text = layout.config_texts[rel]
    anchor = choices[rel.removesuffix(".bak")]
    name = _json_string(hostile_name(rng))
    if "consumerOffset" in rel:
        entry = rng.choice((b'"%s@groupA":{0:1},', b'"TopicTest@%s":{0:1},')) % name
    elif "topics" in rel:
        entry = b'"%s":{"order":false,"perm":6,"readQueueNums":2,"topicName":"%s","writeQueueNums":2},' % (
            name, name)  # fmt: skip
    elif "subscriptionGroup" in rel:
        entry = b'"%s":{"groupName":"%s","consumeEnable":true},' % (name, name)
    else:
        entry = b'"%s@groupA":{"mode":"POP","popShareQueueNum":0},' % name
    at = text.index(anchor) + len(anchor)
    data = text[:at] + entry + text[at:]
    return _c(NAMES_KIND, "config-key", f"{rel}: entry {entry[:80]!r}", Op("replace", rel, data=data),
              focus=Path(rel).name.removesuffix(".bak"), reads="config")  # fmt: skip


def nm_directory(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A queue, topic, index or commitlog entry with a hostile name (non-UTF-8 names as the bytes)."""
    raw = hostile_name(rng)
    name = raw.decode("utf-8", "surrogateescape")
    if not name or "/" in name or "\0" in name or name in (".", "..") or len(raw) > 255:
        name = rng.choice(("\udcff\udcfe", "a b", "x" * 255, "..x", "%LMQ%\udcff", "-1", "01"))
    where = rng.randrange(4)
    if where == 0 and layout.cq_files:
        rel, _ = rng.choice(layout.cq_files)
        target = f"consumequeue/{name}/0/00000000000000000000"
        return _c(NAMES_KIND, "directory", f"topic directory {name[:40]!r}",
                  Op("replace", target, data=_read(layout, rel)), reads="consumequeue")  # fmt: skip
    if where == 1 and layout.cq_files:
        rel, _ = rng.choice(layout.cq_files)
        target = f"{Path(rel).parent.parent}/{name}/00000000000000000000"
        op = Op("replace", target, data=_read(layout, rel))
        return _c(NAMES_KIND, "directory", f"queue directory {target[:60]!r}", op, focus=_cq_focus(rel),
                  reads="consumequeue")  # fmt: skip
    if where == 2:
        return _c(NAMES_KIND, "directory", f"index entry {name[:40]!r}",
                  Op("replace", f"index/{name}", data=b"\0" * 40), reads="index")  # fmt: skip
    return _c(NAMES_KIND, "directory", f"commitlog entry {name[:40]!r}",
              Op("replace", f"commitlog/{name}", data=b"\0" * 8), reads="commitlog")  # fmt: skip


# --- sizes -----------------------------------------------------------------------------------------

OPTIONAL_FILES = ("config/timercheck", "config/timermetrics", "checkpoint", "lock", "abort")


def reads_of(rel: str) -> str:
    """The file type whose commands read `rel`."""
    head = rel.split("/", 1)[0]
    if rel == "config/timercheck":
        return "timercheck"
    if rel == "timerwheel":
        return "timerwheel"
    return {
        "commitlog": "commitlog",
        "consumequeue": "consumequeue",
        "index": "index",
        "config": "config",
        "timerlog": "timerlog",
        "checkpoint": "checkpoint",
    }.get(head, "layout")


def _focus(rel: str) -> str:
    if rel.startswith("consumequeue/") and rel.count("/") == 3:
        return _cq_focus(rel)
    if rel.startswith("config/"):
        return Path(rel).name.removesuffix(".bak")
    if rel.startswith("index/"):
        return Path(rel).name
    return ""


def _store_files(layout: StoreLayout) -> list[str]:
    return [p for p in layout.all_files if not p.startswith(".") and "/." not in p]


def sz_outlier(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(_store_files(layout))
    size = (layout.root / rel).stat().st_size
    unit = 20 if rel.startswith("consumequeue/") else 52 if rel.startswith("timerlog/") else 1
    new = rng.choice(
        (
            100 << 30,
            100 << 30,
            2**31 - 1,
            2**31,
            2**32 - 10,
            2**32 + 1,
            size + unit,
            max(0, size - unit),
            size * 2 + unit,
            0,
        )
    )
    return _c(SIZES_KIND, "outlier", f"{rel}: {size} -> {new} bytes", Op("truncate", rel, size=new),
              focus=_focus(rel), reads=reads_of(rel))  # fmt: skip


def sz_optional(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """timercheck, timermetrics, checkpoint, lock, abort, a .bak: huge (the broker reads a head, or
    file2String's (int) length, or nothing)."""
    baks = tuple(p + ".bak" for p in layout.config_texts if not p.endswith(".bak"))
    rel = rng.choice(OPTIONAL_FILES + baks)
    new = rng.choice((100 << 30, 2**32, 2**32 - 10, 2**31, 4097, 1))
    ops = []
    if not (layout.root / rel).exists():
        ops.append(Op("replace", rel, data=b""))
    ops.append(Op("truncate", rel, size=new))
    return _c(SIZES_KIND, "optional", f"{rel} is {new} bytes", *ops, focus=_focus(rel), reads=reads_of(rel))


# --- special files ------------------------------------------------------------------------------------


def sp_file(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    paths = _store_files(layout) + list(OPTIONAL_FILES) + [p + ".bak" for p in layout.config_texts]
    rel = rng.choice(sorted(set(paths)))
    what = rng.choice(("fifo", "socket", "dev-zero", "dev-null", "loop", "loop2", "dir"))
    if what == "fifo":
        ops = [Op("fifo", rel)]
    elif what == "socket":
        ops = [Op("socket", rel)]
    elif what in ("dev-zero", "dev-null"):
        ops = [Op("symlink", rel, target=f"/dev/{what[4:]}")]
    elif what == "loop":
        ops = [Op("symlink", rel, target=Path(rel).name)]
    elif what == "loop2":
        other = str(Path(rel).with_name(Path(rel).name + ".loop"))
        ops = [Op("symlink", other, target=Path(rel).name), Op("symlink", rel, target=Path(other).name)]
    else:
        ops = [Op("mkdir", rel)]
    return _c(SPECIAL_KIND, what, f"{rel} is a {what}", *ops, focus=_focus(rel), reads=reads_of(rel))


# --- unwritable targets of the write commands --------------------------------------------------------

# what each write command (harness.write_commands, and the timer replay on a timer store) changes
APPEND_TARGETS = ("commitlog", "commitlog/LAST", "index", "index/LAST", "checkpoint", ".", "consumequeue")
WRITE_TARGETS: dict[str, tuple[str, ...]] = {
    "offsets reset": ("config/consumerOffset.json", "config/consumerOffset.json.bak", "config"),
    "consume-mode set": ("config/messageRequestMode.json", "config/messageRequestMode.json.bak", "config"),
    "rebuild": (".", "consumequeue", "index", "checkpoint", "index/LAST"),
    "rebuild --prune-orphans": (".", "consumequeue", "checkpoint", "cq/TopicTest", "config/topics.json"),
    "topic update": ("config/topics.json", "config/topics.json.bak", "config"),
    "topic delete": (".", "consumequeue", "cq/TopicTest", "config/topics.json", "config/consumerOffset.json"),
    "group update": ("config/subscriptionGroup.json", "config/subscriptionGroup.json.bak", "config"),
    "group delete": ("config/subscriptionGroup.json", "config/consumerOffset.json", "config"),
    "delay replay": (
        *APPEND_TARGETS,
        "cq/TopicTest",
        "config/delayOffset.json",
        "config/delayOffset.json.bak",
        "config",
    ),  # fmt: skip
    "txn commit": (*APPEND_TARGETS, "cq/TopicTest", "cq/RMQ_SYS_TRANS_OP_HALF_TOPIC"),
    "txn rollback": (*APPEND_TARGETS, "cq/RMQ_SYS_TRANS_OP_HALF_TOPIC"),
    "txn resolve": (*APPEND_TARGETS, "cq/TopicTest", "cq/RMQ_SYS_TRANS_OP_HALF_TOPIC"),
    "delay replay --timer": (*APPEND_TARGETS, "cq/TimerTopic", "config/timercheck", "config"),
    "dlq resend": APPEND_TARGETS,  # only on a store with a %DLQ% queue (harness.write_commands)
}


def _resolve_target(layout: StoreLayout, target: str, rng: random.Random) -> str | None:
    if target.endswith("/LAST"):
        sub = target[: -len("/LAST")]
        files = sorted(p for p in layout.all_files if p.startswith(sub + "/") and p.count("/") == 1)
        return files[-1] if files else None
    if target.startswith("cq/"):
        topic = target[3:]
        files = sorted(p for p, _ in layout.cq_files if p.split("/")[1] == topic)
        if not files:
            return None
        rel = rng.choice(files)
        return rel if rng.random() < 0.5 else str(Path(rel).parent)
    return target


def uw_target(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    timer = bool(layout.timer_units)  # the timer replay runs on a store where the timer wheel ran
    dlq = any(p.split("/")[1].startswith("%DLQ%") for p, _ in layout.cq_files)
    command = rng.choice(
        [c for c in WRITE_TARGETS if (timer or c != "delay replay --timer") and (dlq or c != "dlq resend")]
    )
    rel = _resolve_target(layout, rng.choice(WRITE_TARGETS[command]), rng)
    if rel is None:
        return None
    is_dir = rel == "." or rel in layout.all_dirs  # a DLedger store has no commitlog/ to make read-only
    exists = is_dir or rel in layout.all_files
    if is_dir:
        what = rng.choice(("read-only", "read-only", "file", "dev-null"))
    else:
        what = rng.choice(("read-only", "dir", "fifo", "dev-full", "dangling", "loop"))
    if what == "read-only":
        if not exists:
            return None
        ops = [Op("chmod", rel, mode=0o555 if is_dir else 0o444)]
    elif what == "file":
        ops = [Op("replace", rel, data=b"x")]
    elif what == "dir":
        ops = [Op("mkdir", rel)]
    elif what == "fifo":
        ops = [Op("fifo", rel)]
    elif what in ("dev-full", "dev-null"):
        ops = [Op("symlink", rel, target=f"/dev/{what[4:]}")]
    elif what == "dangling":
        ops = [Op("symlink", rel, target="/nonexistent/mqtool-fuzz")]
    else:
        ops = [Op("symlink", rel, target=Path(rel).name)]
    if rel == ".":
        ops = [Op("chmod", ".", mode=0o555)]
        what = "read-only"
    return _c(UNWRITABLE_KIND, what, f"{command}: {rel} {what}", *ops, focus=command)


HOSTILE_STRATEGIES = {
    NAMES_KIND: (nm_record_topic, nm_record_property, nm_config_key, nm_directory),
    SIZES_KIND: (sz_outlier, sz_optional),
    SPECIAL_KIND: (sp_file,),
    UNWRITABLE_KIND: (uw_target,),
}
