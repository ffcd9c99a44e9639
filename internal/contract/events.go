package contract

// MaxEventMessage is the longest message an agent's Event may carry, in
// bytes: the event policy refuses a longer one. The agent cuts its
// messages shorter, to leave room for the prefix client-go's recorder
// puts before a message when it combines similar Events.
const MaxEventMessage = 1024

// AgentEventReasons are the reasons of the Events the agent records of its
// own; those of the stuck states it reports (package stuck) come beside
// them. The event policy admits no other reason: internal/agent's
// TestEventReasonsListed holds this list to the agent's reasons.
func AgentEventReasons() []string {
	return []string{
		"Created", "Adopted", "Replaced", "SharedVolumes", "InvalidPrototype", "VMConflict",
		"CreateFailed", "VMDeleted", "DeleteFailed", "WatchDenied", "Evacuated", "EvacuatingVM", "EvacuationBlocked", "PodUnknown",
		"RevisionUnavailable", "MovingVM", "MoveBlocked", "ResizeFailed", "ReservationStale",
	}
}
