"""Delay queue (`mqtool delay`): what waits in SCHEDULE_TOPIC_XXXX, and delivering it as the broker does.

A delayed message is parked in `SCHEDULE_TOPIC_XXXX`, queue `level - 1`, with `REAL_TOPIC`/`REAL_QID`
(`HookUtils.handleScheduleMessage`); its ConsumeQueue tags code is the delivery time
(`ScheduleMessageService.computeDeliverTimestamp`). The broker's
`ScheduleMessageService` runs one `DeliverDelayedMessageTimerTask` per level: from the level's progress in
`delayOffset.json` it walks the units, stops at the first one not yet due (`correctDeliverTimestamp`), and
stores each due message again in its real topic/queue with `messageTimeUp`
(`DeliverDelayedMessageTimerTask.executeOnTimeUp`).

This package reproduces that offline:
* `listing` — `list_delayed`: every unit at or after its level's progress, with its delivery time and
  whether it is due at a given time; `delay_stats`: per level backlog, oldest due time, lateness, progress
  vs queue;
* `replay` — `plan_replay`: the exact records `executeOnTimeUp` would write now, and the new progress;
  `execute_replay` appends and dispatches them and advances `delayOffset.json`, under the write safety
  rules; a second run finds nothing due that was already delivered, so nothing is delivered twice;
* `timer` — 5.x timer-wheel messages (`rmq_sys_wheel_timer`, `TIMER_*` properties, `TimerMessageStore`),
  each with its state in the timer store (`list_timer_messages`), and the wheel's backlog;
* `timer_replay` — `plan_timer_replay` / `execute_timer_replay`: what TimerMessageStore's dequeue writes
  from the slots due (`store.timer.dequeue`), then timercheck's read time moved past them.

The broker's own logic is in `store.broker.schedule`, `store.timer.timerstore` and `store.timer.dequeue`; the
message rebuild and write path it shares with `mqtool.transactions` is `store.broker.messagerebuild`.
"""
