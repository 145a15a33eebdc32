"""Names read from a store turned into paths: the one check every such join goes through.

A store's names - a record's topic and queue id, the REAL_TOPIC a delayed or half message goes to, the
LMQ queues of INNER_MULTI_DISPATCH, a topic key of a config file - are data, and data can hold `../`,
a NUL or 40,000 characters. The broker joins them into paths without a check
(rocketmq-all-5.3.3 store/.../ConsumeQueue.java:93-97: `storePath + File.separator + topic +
File.separator + queueId`), so a record whose topic is `../../x` makes its dispatch create files outside
the store, and one with a NUL makes it fail (`MappedFileQueue.doCreateMappedFile` logs "create mappedFile
exception", ConsumeQueue.java:703-722 retries, logs "[BUG]consume queue can not write" and stops every
ConsumeQueue write with `makeLogicsQueueError`).

* Reading (`queue_dir`, `component_problem`): a name that cannot be one path component (empty, `.`,
  `..`, a `/`, a NUL, longer than a file name, not encodable) names no queue: the broker's queue table,
  loaded from a directory listing, never holds one.
* Creating (`new_queue_dir`): only a name the broker's own code gives a queue
  (`formats.names.topic_name_problem`: TopicValidator's characters, at most 255 bytes) and a queue id in
  [0, 2^31); anything else is refused in one line naming the record and the name, before anything is
  written.
"""

from __future__ import annotations

import os
from pathlib import Path

from formats.errors import MqtoolError
from formats.names import NAME_MAX_BYTES, escaped_name, topic_name_problem


class UnsafeNameError(MqtoolError):
    """A name from a store that cannot (reading) or must not (writing) become a path component."""


def component_problem(name: str) -> str | None:
    """Why `name` cannot be one path component at all, or None."""
    if name in ("", ".", ".."):
        return "is not a file name" if name else "is empty"
    if "/" in name or "\0" in name:
        return f"holds {escaped_name('/' if '/' in name else chr(0))}"
    try:
        size = len(os.fsencode(name))
    except UnicodeEncodeError:
        return "holds a lone surrogate no file name can hold"
    if size > NAME_MAX_BYTES:
        return f"is {size} bytes long, longer than a file name ({NAME_MAX_BYTES})"
    return None


def queue_dir(parent: Path, topic: str, queue_id: int) -> Path:
    """`parent/<topic>/<queueId>` for reading; `UnsafeNameError` when the topic cannot be a directory name
    (no such queue can exist: see the module docstring)."""
    problem = component_problem(topic)
    if problem is not None:
        raise UnsafeNameError(f"topic {escaped_name(topic)} {problem}: no queue directory has that name")
    return parent / topic / str(int(queue_id))


def new_queue_dir(
    parent: Path, topic: str, queue_id: int, *, record: int | None = None, what: str = "topic"
) -> Path:
    """`parent/<topic>/<queueId>` for a queue a write creates or extends, refused (`UnsafeNameError`, in one
    line naming the record at physical offset `record` and the name) unless the broker's own code could
    have named it so."""
    problem = topic_name_problem(topic)
    if problem is None and not 0 <= queue_id < 2**31:
        problem = f"queue id {queue_id} is outside [0, 2^31)"
    if problem is not None:
        source = f"the record at physical offset {record}: " if record is not None else ""
        raise UnsafeNameError(
            f"{source}{what} {escaped_name(topic)} {problem}; the broker's dispatch would build "
            f"{parent.name}/<topic>/{queue_id} from it; refusing to write (nothing written)",
            str(parent),
        )
    return parent / topic / str(queue_id)


__all__ = ["UnsafeNameError", "component_problem", "new_queue_dir", "queue_dir"]
