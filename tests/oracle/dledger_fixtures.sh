#!/usr/bin/env bash
# `make oracle-dledger-fixtures`: writes the DLedger fixture stores with the real broker code and packs each
# as tests/data/<name>/store.tar.gz (tar -S: DLedger's index files are 160 MiB, nearly all holes) with
# expect.json (`dledger-read` of the store: a reload of a copy) and write.json (what the harness did) beside
# it; each fixture's README.md is written by hand. Usage: tests/oracle/dledger_fixtures.sh [NAME...]
# (default: all five). Needs `make oracle-build` (and `make oracle-build-49` for store-dledger-49).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
BUILD="$REPO/build/oracle"
DATA="$REPO/tests/data"
SEED="${ORACLE_DLEDGER_SEED:-20261126}"
PY="${PYTHON:-python3}"
RUN="$HERE/run.sh"
mkdir -p "$BUILD"

pack() {  # pack NAME: the store as an archive, expect.json and write.json beside it
    local name="$1"
    mkdir -p "$DATA/$name"
    tar -S --sort=name --owner=0 --group=0 --numeric-owner -czf "$DATA/$name/store.tar.gz" -C "$BUILD" "$name"
    cp "$BUILD/$name.expect.json" "$DATA/$name/expect.json"
    cp "$BUILD/$name.write.json" "$DATA/$name/write.json"
    echo "$name: $(du -h --apparent-size "$DATA/$name/store.tar.gz" | cut -f1) archive, $(du -sh "$BUILD/$name" | cut -f1) on disk"
}

one() {  # one NAME VERSION VARIANT
    local name="$1" version="$2" variant="$3"
    rm -rf "${BUILD:?}/$name" "$BUILD/$name.expect.json" "$BUILD/$name.write.json"
    ORACLE_VERSION="$version" "$RUN" dledger-store "$BUILD/$name" "$SEED" --variant "$variant"
    ORACLE_VERSION="$version" "$RUN" dledger-read "$BUILD/$name" > "$BUILD/$name.expect.json"
    pack "$name"
}

crash() {  # the halt's timing varies: keep the first of up to 5 runs whose last entry lost its index unit
    local name=store-dledger-crash try
    for try in 1 2 3 4 5; do
        rm -rf "${BUILD:?}/$name" "$BUILD/$name.expect.json" "$BUILD/$name.write.json"
        "$RUN" dledger-store "$BUILD/$name" "$SEED" --variant crash || true  # it halts on purpose (exit 3)
        "$RUN" dledger-read "$BUILD/$name" > "$BUILD/$name.expect.json"
        if "$PY" - "$BUILD/$name.expect.json" "$try" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["onDisk"]
entries, units = len(d["data"]["entries"]), len(d["index"]["units[offset,magic,pos,size,index,term]"])
print(f"crash run {sys.argv[2]}: {entries} entries, {units} index units on disk")
sys.exit(0 if units < entries else 1)
EOF
        then
            "$PY" - "$BUILD/$name.write.json" "$try" <<'EOF'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["keptRun"] = int(sys.argv[2])
open(p, "w").write(json.dumps(d, indent=2))
EOF
            break
        fi
    done
    pack "$name"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(store-dledger store-dledger-mixed store-dledger-multipath store-dledger-crash store-dledger-49)
for n in "${names[@]}"; do
    case "$n" in
        store-dledger) one "$n" 5.3.3 plain ;;
        store-dledger-mixed) one "$n" 5.3.3 mixed ;;
        store-dledger-multipath) one "$n" 5.3.3 multipath ;;
        store-dledger-crash) crash ;;
        store-dledger-49) one "$n" 4.9.8 plain ;;
        *) echo "unknown fixture $n" >&2; exit 2 ;;
    esac
done
