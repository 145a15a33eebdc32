#!/usr/bin/env bash
# Run the built oracle: tests/oracle/run.sh COMMAND ARGS... (see harness/oracle/Oracle.java); 1 GiB heap.
set -euo pipefail
CACHE="${MQTOOL_ORACLE_CACHE:-$HOME/.cache/mqtool-oracle}"
VERSION="${ORACLE_VERSION:-5.3.3}"
CP_FILE="$CACHE/build/$VERSION/classpath"
[ -f "$CP_FILE" ] || { echo "oracle not built: run make oracle-build" >&2; exit 2; }
# jdk.internal.ref: 4.9.8's MappedFile.clean unmaps through Cleaner.clean by reflection (a store shutdown after
# a start: `recover`, `dledger-store` on 4.9.8 fail without it on JDK 17); 5.3.3 unmaps through Unsafe.
exec java -Xmx1g -XX:+UseSerialGC --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    -Dlog4j2.level=ERROR -cp "$(cat "$CP_FILE")" oracle.Oracle "$@"
