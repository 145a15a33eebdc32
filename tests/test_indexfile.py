"""IndexFile and IndexService against the golden stores: headers, geometry, queries, byte-exact rebuilds."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from golden import STORES, expect, store_path
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import structs
from formats.errors import FormatError
from formats.indexfile import (
    DEFAULT_GEOMETRY,
    INDEX_ENTRY_DTYPE,
    IndexFile,
    IndexGeometry,
    IndexHeader,
    decode_header,
    encode_header,
    index_file_size,
    infer_geometry,
    new_index_file,
)
from formats.java.hash import index_key_hash, java_string_hash
from store.index.indexservice import IndexService, resolve_geometry

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)

# Final appends of store-c that only the recovered store (re-dispatch after the crash) has indexed.
STORE_C_FINAL_APPENDS = {4411397, 4411954}


def _service(store: str) -> IndexService:
    return IndexService(store_path(store))


def _rebuild(store: str, into: IndexService) -> IndexService:
    """Feed every dispatched record of the golden store to `IndexService.build_index`, in commitlog order."""
    for m in expect(store)["messages"]:
        if m["kind"] != "MESSAGE":
            continue
        d = m["dispatch"]
        assert d["success"]
        into.build_index(
            m["topic"],
            m["physicalOffset"],
            m["storeTimestamp"],
            m["sysFlag"],
            d.get("uniqKey"),
            d.get("keys"),
        )
    return into


# --- golden headers and geometry ---------------------------------------------------------------


@pytest.mark.parametrize("store", STORES)
def test_headers(store: str) -> None:
    svc = _service(store)
    want = expect(store)["indexFiles"]
    assert [n for n, _ in svc.headers()] == [w["file"] for w in want]
    for (name, h), w in zip(svc.headers(), want, strict=True):
        assert (store_path(store) / "index" / name).stat().st_size == w["fileSize"]
        assert h == IndexHeader(
            w["beginTimestamp"],
            w["endTimestamp"],
            w["beginPhyOffset"],
            w["endPhyOffset"],
            w["hashSlotCount"],
            w["indexCount"],
        )


@pytest.mark.parametrize("store", STORES)
def test_geometry_inferred_from_directory_and_from_each_file(store: str) -> None:
    config = expect(store)["config"]
    want = IndexGeometry(config["maxHashSlotNum"], config["maxIndexNum"])
    svc = _service(store)
    assert svc.geometry == want
    for f in svc.files:
        assert infer_geometry(f.data, f.file) == want
        f.validate()
    assert IndexService(store_path(store), want.hash_slot_num, want.index_num).geometry == want
    assert IndexService(store_path(store), hash_slot_num=want.hash_slot_num).geometry == want
    assert IndexService(store_path(store), index_num=want.index_num).geometry == want


def test_geometry_errors() -> None:
    with pytest.raises(FormatError):
        IndexService(store_path("store-a"), 64, 3999)
    with pytest.raises(FormatError, match="differ in size"):
        resolve_geometry([100, 200], [IndexHeader(), IndexHeader()], None)
    assert resolve_geometry([], [], None) == DEFAULT_GEOMETRY
    assert resolve_geometry([DEFAULT_GEOMETRY.file_size], [IndexHeader()], None) == DEFAULT_GEOMETRY
    empty = new_index_file(IndexGeometry(8, 16))
    assert resolve_geometry([len(empty.data)], [empty.header], empty.data) is None
    with pytest.raises(FormatError, match="no entries"):
        infer_geometry(empty.data)


def test_geometry_of_a_large_partly_filled_file() -> None:
    geometry = IndexGeometry(100_003, 400_000)
    f = new_index_file(geometry)
    for i in range(40):
        assert f.put_key(f"T#k{i % 7}", 1000 + i, 1_795_263_466_269 + i * 10)
    assert infer_geometry(f.data) == geometry


@pytest.mark.parametrize("store", STORES)
def test_key_hashes(store: str) -> None:
    slots = expect(store)["config"]["maxHashSlotNum"]
    for k in expect(store)["keyHashes"]:
        assert java_string_hash(k["key"]) == k["javaHashCode"]
        assert index_key_hash(k["key"]) == k["indexKeyHash"]
        assert index_key_hash(k["key"]) % slots == k["slot"]


# --- queries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_index_queries(store: str) -> None:
    svc = _service(store)
    for q in expect(store)["indexQueries"]:
        r = svc.query_offset(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        assert r.phy_offsets == q["phyOffsets"], q
        assert r.index_last_update_timestamp == q["indexLastUpdateTimestamp"]
        assert r.index_last_update_phy_offset == q["indexLastUpdatePhyoffset"]


def test_store_c_queries_as_written() -> None:
    """The shipped files lack only the two final appends, which the recovered store re-dispatched."""
    svc = _service("store-c")
    for q in expect("store-c")["indexQueries"]:
        r = svc.query_offset(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        assert r.phy_offsets == [p for p in q["phyOffsets"] if p not in STORE_C_FINAL_APPENDS], q


def test_store_c_queries_after_recovery() -> None:
    """Recovery after the crash: drop index files newer than the checkpoint, re-dispatch, then query."""
    e = expect("store-c")
    kept = _service("store-c").without_files_newer_than(e["checkpoint"]["indexMsgTimestamp"])
    assert [f.name for f in kept.files] == [w["file"] for w in e["indexFiles"][:-1]]
    in_memory = [IndexFile(bytearray(f.data), f.geometry, name=f.name) for f in kept.files]
    recovered = _rebuild("store-c", IndexService(files=in_memory, geometry=kept.geometry))
    for q in e["indexQueries"]:
        r = recovered.query_offset(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        assert r.phy_offsets == q["phyOffsets"], q
        assert r.index_last_update_timestamp == q["indexLastUpdateTimestamp"]
        assert r.index_last_update_phy_offset == q["indexLastUpdatePhyoffset"]


def test_query_caps_and_windows() -> None:
    svc = _service("store-a")
    everything = svc.query_offset("TopicTest", "shared-key")
    assert len(everything.phy_offsets) > 64  # no cap by default
    assert svc.query_offset("TopicTest", "shared-key", 64).phy_offsets == everything.phy_offsets[:64]
    assert svc.query_offset("TopicTest", "shared-key", 0).phy_offsets == []
    assert svc.query_offset("TopicTest", "shared-key", begin=2**62).phy_offsets == []
    assert svc.query_offset("TopicTest", "no-such-key").phy_offsets == []


# --- building (putKey / buildIndex) ------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_rebuild_is_byte_identical(store: str) -> None:
    golden = _service(store)
    rebuilt = _rebuild(store, IndexService(files=[], geometry=golden.geometry))
    assert len(rebuilt.files) == len(golden.files)
    for mine, theirs in zip(rebuilt.files, golden.files, strict=True):
        assert bytes(mine.data) == bytes(theirs.data), theirs.name


def test_new_file_after_full_copies_previous_end() -> None:
    geometry = IndexGeometry(4, 3)  # two entries per file
    svc = IndexService(files=[], geometry=geometry)
    svc.build_index("T", 100, 10_000, uniq_key="u1", keys="a b")
    assert len(svc.files) == 2
    first, second = (h for _, h in svc.headers())
    assert (first.index_count, first.end_phy_offset, first.end_timestamp) == (3, 100, 10_000)
    assert (second.begin_phy_offset, second.begin_timestamp, second.index_count) == (100, 10_000, 2)
    svc.build_index("T", 50, 20_000, keys="old")  # below endPhyOffset: already indexed
    svc.build_index("T", 200, 20_000, sys_flag=structs.TRANSACTION_ROLLBACK_TYPE, keys="rb")
    assert svc.files[-1].header.index_count == 2
    svc.build_index("T", 300, 13_500, keys="c")
    # timeDiff against the first entry's time, in whole seconds
    assert [e.time_diff for e in svc.files[-1].iter_entries()] == [0, 3]
    assert svc.query_offset("T", "c").phy_offsets == [300]
    assert svc.query_offset("T", "a").phy_offsets == [100]


def test_first_entry_of_a_follow_up_file_uses_the_copied_begin() -> None:
    f = new_index_file(IndexGeometry(4, 8), end_phy_offset=10, end_timestamp=5_000)
    f.put_key("T#k", 20, 9_999)
    (entry,) = f.iter_entries()
    assert entry.time_diff == 4  # (9999 - 5000) / 1000, before begin is overwritten
    assert f.header.begin_timestamp == 9_999


def test_put_key_needs_a_bytearray() -> None:
    f = new_index_file(IndexGeometry(4, 8))
    ro = IndexFile(bytes(f.data), f.geometry)
    with pytest.raises(TypeError):
        ro.put_key("T#k", 1, 1)


keys = st.lists(
    st.tuples(st.sampled_from(["a", "b", "Aa", "BB", "c", "polygenelubricants"]), st.integers(0, 10**6)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=50, deadline=None)
@given(keys)
def test_put_key_then_query(items: list[tuple[str, int]]) -> None:
    """Every key put is found again, newest first, with hash collisions (Aa/BB) included."""
    svc = IndexService(files=[], geometry=IndexGeometry(5, 64))
    for i, (key, _) in enumerate(items):
        svc.build_index("T", i, 1_000_000 + i * 1000, keys=key)
    for f in svc.files:
        f.validate()
    for key in {k for k, _ in items}:
        h = index_key_hash(f"T#{key}")
        want = [i for i, (k, _) in reversed(list(enumerate(items))) if index_key_hash(f"T#{k}") == h]
        assert svc.query_offset("T", key).phy_offsets == want


# --- layouts and garbage -----------------------------------------------------------------------


@given(int64, int64, int64, int64, int32, int32)
def test_header_round_trip(a: int, b: int, c: int, d: int, e: int, f: int) -> None:
    h = IndexHeader(a, b, c, d, e, f)
    assert decode_header(encode_header(h)) == h


@given(st.lists(st.binary(min_size=20, max_size=20), max_size=20))
def test_entry_dtype_matches_construct(raw: list[bytes]) -> None:
    view = np.frombuffer(b"".join(raw), dtype=INDEX_ENTRY_DTYPE)
    for row, data in zip(view.tolist(), raw, strict=True):
        e = structs.IndexEntry.parse(data)
        assert row == (e.keyHash, e.phyOffset, e.timeDiff, e.prevIndex)


SMALL = IndexGeometry(4, 8)


@settings(max_examples=200)
@given(st.binary(min_size=SMALL.file_size, max_size=SMALL.file_size), int32, int64, int64)
def test_garbage_raises_only_format_error(data: bytes, key_hash: int, begin: int, end: int) -> None:
    try:
        f = IndexFile(data, SMALL, file="garbage")
        f.select_phy_offsets(abs(key_hash), begin, end, None)
        list(f.iter_entries())
        f.validate()
    except FormatError as exc:
        assert exc.file == "garbage"
    with contextlib.suppress(FormatError):
        infer_geometry(data)


@given(st.binary(max_size=300))
def test_wrong_size_raises_format_error(data: bytes) -> None:
    if len(data) != SMALL.file_size:
        with pytest.raises(FormatError):
            IndexFile(data, SMALL)
    with contextlib.suppress(FormatError):
        infer_geometry(data)


def test_file_size_formula() -> None:
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040 == DEFAULT_GEOMETRY.file_size


@given(st.binary(min_size=24, max_size=24))
def test_struct_read_path_equals_the_construct_declaration(raw: bytes) -> None:
    from formats import structs
    from formats.indexfile import _ENTRY, _SLOT

    declared = structs.IndexEntry.parse(raw[:20])
    assert _ENTRY.unpack_from(raw) == (
        declared.keyHash,
        declared.phyOffset,
        declared.timeDiff,
        declared.prevIndex,
    )
    assert _SLOT.unpack_from(raw)[0] == structs.IndexSlot.parse(raw[:4])
