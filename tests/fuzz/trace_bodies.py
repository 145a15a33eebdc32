"""Fuzzing the trace body decoder (formats.trace) against the real one: mutated trace bodies, each decoded by
mqtool and - with the oracle built - by the real `TraceDataEncoder.decoderFromTraceDataString` of 5.3.3 and
4.9.8 (oracle `trace-decode`, one JVM for all bodies). A body passes when mqtool's decoder returns or raises
TraceBodyError (one line) exactly where the real one returns or throws, with the same records.

    python -m tests.fuzz.trace_bodies [--count 10000] [--seed 20261127] [--versions 5.3.3,4.9.8]
        [--write tests/data/trace-fuzz-bodies.json --keep 400]

The seeds are every body of tests/data/trace-bodies-*.json and every trace message of store-trace-a/b; a
mutation cuts, drops, adds or moves separators, puts edge values into fields (numbers Java's parsers refuse
or take, Unicode digits, booleans in other cases, enum names, invalid UTF-8, lone surrogates), swaps record
types, repeats or drops records. `--write` keeps a sample of the judged bodies with the real decoder's
answers as a committed fixture (tests/test_trace_format.py replays it without Java).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

EDGE_FIELDS = (
    "", "-", "+", "+1", "-0", "0", "00012", " 1", "1 ", "\u0661\u0662", "\uff12", "\U0001d7ce",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "2147483647", "2147483648", "-2147483648", "-2147483649", "4", "5", "-1", "3",
    "true", "TRUE", "True", "tRuE", "yes", "false", "null",
    "COMMIT_MESSAGE", "commit_message", "ROLLBACK_MESSAGE", "UNKNOW", "UNKNOWN",
    "Pub", "Recall", "SubBefore", "SubAfter", "EndTransaction", "pub",
    "\u4e2d\u6587", "k1 k2", "  ",
)  # fmt: skip
EDGE_BYTES = (
    b"\xff",
    b"\xed\xa0\x80",
    b"\xc3",
    b"\xe4\xb8",
    b"\x00",
    b"\x01\x01",
    b"\x02\x02",
    b"\xf0\x9f\x98",
)
TYPES = (b"Pub", b"Recall", b"SubBefore", b"SubAfter", b"EndTransaction", b"X", b"")


def seeds() -> list[bytes]:
    out: list[bytes] = []
    for version in ("5.3.3", "4.9.8"):
        doc = json.loads((DATA / f"trace-bodies-{version}.json").read_text(encoding="utf-8"))
        out += [base64.b64decode(c["transData"]) for c in doc["cases"] if "transData" in c]
        out += [base64.b64decode(m["body"]) for m in doc["messages"] + doc["bodies"]]
    for store in ("store-trace-a", "store-trace-b"):
        doc = json.loads((DATA / store / "expect.json").read_text(encoding="utf-8"))
        out += [base64.b64decode(t["body"]) for t in doc["traceMessages"]]
    return [b for b in dict.fromkeys(out) if b]


def mutate(body: bytes, rng: random.Random) -> bytes:
    """One to three mutations of a trace body."""
    data = bytearray(body)
    for _ in range(rng.choice((1, 1, 2, 3))):
        records = bytes(data).split(b"\x02")
        mode = rng.randrange(10)
        if mode == 0 and data:  # cut
            del data[rng.randrange(len(data) + 1) :]
        elif mode == 1:  # drop a separator
            at = [i for i, b in enumerate(data) if b in (1, 2)]
            if at:
                del data[rng.choice(at)]
        elif mode == 2:  # add a separator
            data.insert(rng.randrange(len(data) + 1), rng.choice((1, 2)))
        elif mode in (3, 4, 5):  # an edge value in a field
            k = rng.randrange(len(records))
            fields = records[k].split(b"\x01")
            f = rng.randrange(len(fields))
            if rng.random() < 0.8:
                fields[f] = rng.choice(EDGE_FIELDS).encode("utf-8")
            else:
                fields[f] = fields[f][: rng.randrange(len(fields[f]) + 1)] + rng.choice(EDGE_BYTES)
            records[k] = b"\x01".join(fields)
            data = bytearray(b"\x02".join(records))
        elif mode == 6:  # another type
            k = rng.randrange(len(records))
            fields = records[k].split(b"\x01")
            fields[0] = rng.choice(TYPES)
            records[k] = b"\x01".join(fields)
            data = bytearray(b"\x02".join(records))
        elif mode == 7:  # fields dropped from the end of a record, or added
            k = rng.randrange(len(records))
            fields = records[k].split(b"\x01")
            if rng.random() < 0.5:
                fields = fields[: rng.randrange(1, len(fields) + 1)]
            else:
                fields += [rng.choice(EDGE_FIELDS).encode("utf-8") for _ in range(rng.randint(1, 3))]
            records[k] = b"\x01".join(fields)
            data = bytearray(b"\x02".join(records))
        elif mode == 8:  # a record repeated or dropped
            k = rng.randrange(len(records))
            if rng.random() < 0.5:
                records.insert(k, records[k])
            else:
                del records[k]
            data = bytearray(b"\x02".join(records))
        else:  # bytes at either end
            extra = bytes(
                rng.choice((rng.getrandbits(8), 1, 2, 0x31, 0x7F)) for _ in range(rng.randint(1, 8))
            )
            data = bytearray(extra + data if rng.random() < 0.5 else data + extra)
    return bytes(data)


def bodies(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    pool = seeds()
    return [mutate(rng.choice(pool), rng) for _ in range(count)]


def java_decode(items: list[bytes], version: str) -> list[dict]:
    """The real decoder's answer for each body (oracle `trace-decode`, one JVM)."""
    with tempfile.NamedTemporaryFile("w", suffix=".b64", delete=False) as f:
        f.write("".join(base64.b64encode(b).decode("ascii") + "\n" for b in items))
        name = f.name
    try:
        env = {**os.environ, "ORACLE_VERSION": version}
        out = subprocess.run(
            [str(ROOT / "tests" / "oracle" / "run.sh"), "trace-decode", name],
            check=True, capture_output=True, env=env, text=True,
        )  # fmt: skip
    finally:
        os.unlink(name)
    results = json.loads(out.stdout)["results"]
    assert len(results) == len(items)
    return results


def disagreement(body: bytes, real: dict, version: str) -> str | None:
    """None when mqtool's decoder reads `body` as the real one did (`real`: the harness's answer)."""
    from formats.trace import TraceBodyError, decode_body

    try:
        mine = decode_body(body, version=version)
    except TraceBodyError as exc:
        if "\n" in str(exc):
            return f"a multi-line error: {exc!r}"
        return None if "decodeError" in real else f"mqtool refuses it ({exc}), Java reads it"
    except Exception as exc:  # anything else is a bug
        return f"{type(exc).__name__}: {exc}"
    if "decodeError" in real:
        return f"Java throws {real['decodeError']}, mqtool reads {len(mine)} records"
    if len(mine) != len(real["decoded"]):
        return f"{len(mine)} records, Java {len(real['decoded'])}"
    for ctx, java in zip(mine, real["decoded"], strict=True):
        bean = java["traceBeans"][0]
        for name, value in ctx.to_json().items():
            if value is None:
                continue
            java_value = java.get(name, bean.get(name))
            if value != java_value:
                return f"{ctx.trace_type} {name}: mqtool {value!r}, Java {java_value!r}"
    return None


def main() -> int:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--versions", default="5.3.3,4.9.8")
    ap.add_argument("--write", type=Path, default=None)
    ap.add_argument("--keep", type=int, default=400)
    args = ap.parse_args()
    items = bodies(args.count, args.seed)
    kept: dict[str, list] = {}
    failures = 0
    for version in args.versions.split(","):
        real = java_decode(items, version)
        bad = [(i, d) for i, r in enumerate(real) if (d := disagreement(items[i], r, version)) is not None]
        errors = sum("decodeError" in r for r in real)
        records = sum(len(r.get("decoded", [])) for r in real)
        read = len(items) - errors
        print(f"{version}: {len(items)} bodies, Java read {read} ({records} records), threw on {errors}; "
              f"disagreements: {len(bad)}")  # fmt: skip
        for i, d in bad[:20]:
            print(f"  body {i} {items[i][:80]!r}: {d}")
        failures += len(bad)
        step = max(1, len(items) // args.keep)
        kept[version] = [
            {"body": base64.b64encode(items[i]).decode("ascii"), **real[i]}
            for i in range(0, len(items), step)
        ][: args.keep]
    if args.write is not None:
        doc = {"seed": args.seed, "count": args.count, "versions": kept}
        args.write.write_text(json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n")
        print(f"wrote {args.write}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
