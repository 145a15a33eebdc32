#!/usr/bin/env bash
# Compile the oracle harness (tests/oracle/harness) plus only what it reaches of RocketMQ's own source.
# Usage: tests/oracle/build.sh [ROCKETMQ_SRC [FASTJSON_SRC [OTEL_SRC]]]
# Defaults extract the tags from the bare mirrors into $MQTOOL_ORACLE_CACHE (~/.cache/mqtool-oracle).
# Both builds compile openmessaging/dledger 0.3.1.2 (the version 4.9.8 and 5.3.3 pin) from source too: the
# DLedger commitlog (enableDLegerCommitLog) is real code in the oracle, not a placeholder.
# RMQ_TAG=rocketmq-all-4.9.8 builds the 4.9.8 oracle (harness49/ first, then the shared harness/ classes;
# fastjson 1.2.69, the version 4.9.8 pins; its own logging module; no OpenTelemetry).
# Jars: pyspark/jars of the project venv (PYSPARK_JARS) and Debian's /usr/share/java.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${MQTOOL_ORACLE_CACHE:-$HOME/.cache/mqtool-oracle}"
MIRRORS="${MQTOOL_MIRRORS:-/work/.mirror}"
RMQ_TAG="${RMQ_TAG:-rocketmq-all-5.3.3}"
VERSION="${RMQ_TAG#rocketmq-all-}"
MODULES="common remoting store broker client filter"
FASTJSON_TAG=1.2.83
FASTJSON2_TAG=2.0.43  # the config v2 classes' topic and group values (rocketmq-all-5.3.3's pom pins 2.0.43)
DLEDGER_TAG=dledger-all-0.3.1.2  # <dleger.version>0.3.1.2</dleger.version> in both rocketmq-all-4.9.8's and 5.3.3's pom
HARNESS="$HERE/harness"
PLACEHOLDERS="$HERE/placeholders5:$HERE/placeholders"  # placeholders5: the 5.x broker holder and its stand-ins
if [ "${VERSION%%.*}" = 4 ]; then
    MODULES="$MODULES logging"
    FASTJSON_TAG=1.2.69
    FASTJSON2_TAG=
    HARNESS="$HERE/harness49:$HERE/harness"
    PLACEHOLDERS="$HERE/placeholders"
else
    MODULES="$MODULES tieredstore"  # 5.x: the tiered store plugin (`tiered-store`); Caffeine stand-ins in placeholders5
fi

extract() {  # extract MIRROR TAG DEST [PATHS...]
    local repo="$1" tag="$2" dest="$3"; shift 3
    if [ ! -d "$dest" ]; then
        mkdir -p "$dest.tmp"
        git -C "$repo" archive "$tag" "$@" | tar -x -C "$dest.tmp"
        mv "$dest.tmp" "$dest"
    fi
}

RMQ="${1:-$CACHE/src/rocketmq-$VERSION}"
FASTJSON="${2:-$CACHE/src/fastjson-$FASTJSON_TAG}"
OTEL="${3:-$CACHE/src/otel-1.29.0}"
FASTJSON2="$CACHE/src/fastjson2-$FASTJSON2_TAG"
DLEDGER="$CACHE/src/dledger-${DLEDGER_TAG#dledger-all-}"
if [ $# -lt 1 ]; then  # module by module, so a cache from before a module was added gets it too
    for m in $MODULES; do
        [ -d "$RMQ/$m" ] || { mkdir -p "$RMQ" && extract "$MIRRORS/apache+rocketmq/repo" "$RMQ_TAG" "$RMQ.$m" "$m" && mv "$RMQ.$m/$m" "$RMQ/$m" && rmdir "$RMQ.$m"; }
    done
fi
[ $# -ge 2 ] || extract "$MIRRORS/alibaba+fastjson/repo" "$FASTJSON_TAG" "$FASTJSON" src/main/java
[ $# -ge 3 ] || extract "$MIRRORS/open-telemetry+opentelemetry-java/repo" v1.29.0 "$OTEL" api/all context
[ -z "$FASTJSON2_TAG" ] || extract "$MIRRORS/alibaba+fastjson2/repo" "$FASTJSON2_TAG" "$FASTJSON2" core/src/main/java
extract "$MIRRORS/openmessaging+dledger/repo" "$DLEDGER_TAG" "$DLEDGER" dledger/src/main/java

PYSPARK_JARS="${PYSPARK_JARS:-$(ls -d "$HERE"/../../.venv/lib/python3*/site-packages/pyspark/jars | head -1)}"
CP="$PYSPARK_JARS/*"
# netty-codec-haproxy (libnetty-java): RocketMQ's NettyRemotingServer, which DLedger's RPC runs on, names it
for jar in commons-validator jna commons-collections3 conversant-disruptor netty-codec-haproxy; do
    pkg="lib$jar-java"; [ "$jar" != netty-codec-haproxy ] || pkg=libnetty-java
    [ -f "/usr/share/java/$jar.jar" ] || { echo "missing /usr/share/java/$jar.jar (apt-get install $pkg)" >&2; exit 2; }
    CP="$CP:/usr/share/java/$jar.jar"
done

SP="$PLACEHOLDERS:$HARNESS"
for m in $MODULES; do SP="$SP:$RMQ/$m/src/main/java"; done
SP="$SP:$DLEDGER/dledger/src/main/java"
SP="$SP:$FASTJSON/src/main/java:$OTEL/api/all/src/main/java:$OTEL/context/src/main/java"
[ -z "$FASTJSON2_TAG" ] || SP="$SP:$FASTJSON2/core/src/main/java"

OUT="$CACHE/build/$VERSION"
rm -rf "$OUT" && mkdir -p "$OUT/classes"
# warnings go to the log; a failed compile fails the build (some classes may still have been written).
# -g: all debug information, as RocketMQ's Maven build (maven-compiler-plugin's default debug=true): fastjson
# reads constructor parameter names from it to decode beans without a default constructor
# (SimpleSubscriptionData in a 5.x subscriptionGroup.json), and fails on them without it.
if ! javac -J-Xmx1g -g -nowarn -Xmaxerrs 1000 -proc:none -encoding UTF-8 --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
    -sourcepath "$SP" -implicit:class -cp "$CP" -d "$OUT/classes" \
    "${HARNESS%%:*}"/oracle/*.java > "$OUT/javac.log" 2>&1; then
    grep -B1 -A3 'error:' "$OUT/javac.log" >&2 || cat "$OUT/javac.log" >&2
    echo "build failed (full log: $OUT/javac.log)" >&2
    exit 1
fi
cp -r "$HERE/resources/." "$OUT/classes/"
echo "$OUT/classes:$CP" > "$OUT/classpath"
echo "built $(find "$OUT/classes" -name '*.class' | wc -l) classes into $OUT"
