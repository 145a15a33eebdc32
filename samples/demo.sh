#!/usr/bin/env bash
# The tour behind `make demo`: what mqtool is for, step by step, on the sample store in samples/store-a
# (written by the real RocketMQ 5.3.3 store code). Every step only reads the store; the audit writes its
# report under build/demo/. Usage: samples/demo.sh [MQTOOL] [STORE] [OUTPUT_DIR]
set -euo pipefail
MQTOOL=${1:-.venv/bin/mqtool}
STORE=${2:-samples/store-a}
OUT=${3:-build/demo}
export MQTOOL_STORE=$STORE

step() { printf '\n\033[1m==> %s\033[0m\n    %s\n\n' "$1" "$2"; }
run() { printf '$ mqtool %s\n' "$*"; "$MQTOOL" "$@"; }

step "1. What is in the store" \
  "commitlog range and times, every topic/queue, index files, checkpoint, config files, broker state"
run info

step "2. Find messages by key, then by msgId" \
  "every message of TopicTest with key 'order-548' (index walk, hash collisions dropped), then an offset msgId"
run query key TopicTest order-548
run query id C0A8000A00002A9F000000000000010E

step "3. Consumer progress" \
  "committed offset, lag and the store time of the last consumed message per group/topic/queue"
run offsets show --group groupA

step "4. Rewind a group to a point in time (dry run)" \
  "the broker's getOffsetInQueueByTime per queue; nothing is written without --execute"
run offsets reset --group groupA --topic TopicTest --to-time '2026-11-21T11:37:56.600Z'

step "5. PULL or POP" \
  "each group's consume mode and the messages waiting in the retry topics that apply to it"
run consume-mode show

step "6. The delay queue" \
  "backlog per delay level, how late the oldest due message is, and levels that look stuck"
run delay stats

step "7. Transactions" \
  "half messages paired with their op messages: committed, rolled back, still pending"
run txn list

step "8. Verify the whole store" \
  "every record, ConsumeQueue unit, index chain and the checkpoint, checked as the broker would read them"
run verify

step "9. Audit on Spark" \
  "the batch audit (PySpark, local[*]; needs Java 17+): tables, audit.json and a self-contained report.html"
mkdir -p "$OUT"
run audit --output "$OUT/audit" --top 5
printf '\nThe audit report: %s\n' "$(cd "$OUT/audit" && pwd)/report.html"
