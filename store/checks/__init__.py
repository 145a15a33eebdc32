"""Store checks (`mqtool verify` and the audit): pure functions over Arrow batches and numpy arrays, fed
from a store's files by `storefiles`.

Inputs are decoded commitlog record batches (`formats.columnar.decoder.MESSAGE_SCHEMA`), ConsumeQueue units
(`store.queue.consumequeue.NATIVE_UNIT_DTYPE`), IndexFile slot/entry views (`formats.indexfile`) and small
metadata; the output is rows of a problems table (`PROBLEM_SCHEMA`: store, file, offset, kind, severity,
detail). Nothing here but `storefiles` reads files; nothing imports numba or Spark or loops over records in
Python (only over the few problem rows, over the rare non-ASCII strings, and over records of
SCHEDULE_TOPIC_XXXX), so a Spark executor can run the same functions on its split.

`file` is the path relative to the store root (`commitlog/00000000000000000000`); `offset` is the byte
position inside that file (a physical offset = file name + offset; details name it too).

Severities, decided here (`mqtool verify` exits non-zero only for errors):

* error - data the broker would reject, cut or never serve: a record failing the broker's check
  (bad_magic, size_chain, crc_mismatch, bad_property) or a torn tail (truncated_tail), zeros before
  later data (premature_end), a PHYSICALOFFSET field that is not the record's position
  (phy_offset_field), commitlog files of the wrong size or with gaps, ConsumeQueue units that disagree
  with their record (cq_*_mismatch, cq_points_outside, cq_not_record_start, cq_order), a dispatchable
  record without its unit below the dispatch horizon (cq_missing_unit), broken index headers and
  chains, index entries no lookup reaches or that point inside a record (index_*), message keys no
  lookup finds (index_key_unreachable, --deep), a checkpoint newer than the data (checkpoint_ahead).
  A torn tail is an error too: the broker drops that record (golden store-c, like the broker's own
  verify, is not clean).
* warning - facts of an unclean stop or of lag that the broker repairs or tolerates: `abort` present,
  records after the dispatch horizon after a crash (undispatched; abnormal recovery dispatches them - an
  error without `abort`, as 5.x never dispatches them then), index lagging the ConsumeQueues
  (index_behind), non-zero bytes after the end of data, BLANK size, ConsumeQueue bytes after the last
  unit, index files the broker drops on an abnormal start, a broker holding the store lock.
* info - facts: ConsumeQueue prefix units and index entries that point into commitlog files deleted by
  retention (cq_expired_units, index_expired_entries), records older than the first index file
  (not_indexed), ConsumeQueueExt tags codes not compared, where the broker's recovery would start and
  end (recovery).

Broker quirks honoured: PREPARED/ROLLBACK records get no ConsumeQueue unit, ROLLBACK records no index
entry; the tags code of SCHEDULE_TOPIC_XXXX records is the delivery time; LMQ queues (`%LMQ%...`) hold
units of records of other topics (size and tags code compared; the record must name the queue in
INNER_MULTI_DISPATCH at the unit's offset, `store.checks.lmq`); a pre-blank filler below the min offset is
fine; an index file's first entry may carry a time diff against the copied begin time (never checked);
a key's entries may straddle two index files (coverage is checked over all files); the last indexed
record may be indexed twice after a re-dispatch.
"""
