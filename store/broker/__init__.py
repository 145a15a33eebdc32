"""The broker module's services that put messages back into the store: ScheduleMessageService, the transaction
services, and the re-put they share."""
