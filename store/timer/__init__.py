"""TimerMessageStore (org.apache.rocketmq.store.timer): timerlog, wheel, timercheck, each timer message's
state, and its dequeue."""
