"""Topic and subscription-group configs edited offline as mqadmin's updateTopic / deleteTopic /
updateSubGroup / deleteSubGroup make the broker edit them: `topic`, `group` (the plans), `attributes`
(AttributeUtil's alteration), `edit` (the plan they share and writing it)."""
