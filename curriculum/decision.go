package curriculum

// Decision kinds.
const (
	KindAdvance  = "advance"
	KindRollback = "rollback"
	KindEdit     = "edit" // a live edit set the stage
)

// Decision is one curriculum move, from either manager, with the numbers that
// caused it. The trainer turns it into an event (data_advance, stage_rollback …)
// and the console shows Reason as is.
//
// Which numbers are set depends on the move:
//   - data curriculum (DataManager.Decide): Before and After are the
//     validation scores before and after the advance, Delta = After − Before;
//     Value repeats Delta and Target is the rollback threshold it was held to.
//   - reward advance (Manager.Check): Metric, Condition, Value (what was
//     measured: the latest KPI, a mean, a slope or a step count) and Target
//     (the condition's value).
//   - reward rollback: Metric is the rollback KPI, Before its value at the
//     advance, After its value now, Delta = After − Before; Value repeats
//     Delta and Target is −Drop, the fall it exceeded.
//
// NextAttempt is the first step at which the manager will consider another
// advance (before sample or pass gates, which are not counted in steps).
type Decision struct {
	Step int `json:"step"`
	// Tried is, for the data curriculum, the step the decided advance was
	// tried at: the new mix trains from the step after it, so a kept advance
	// entered its stage at Tried, not at Step (the validation that kept it).
	// 0 in decisions of the reward curriculum (which decides as it advances)
	// and in data decisions recorded before the field existed.
	Tried       int     `json:"tried,omitempty"`
	Kind        string  `json:"kind"`
	FromStage   int     `json:"from"`
	ToStage     int     `json:"to"`
	Before      float64 `json:"before"`
	After       float64 `json:"after"`
	Delta       float64 `json:"delta"`
	NextAttempt int     `json:"next_attempt"`
	Metric      string  `json:"metric,omitempty"`
	Condition   string  `json:"condition,omitempty"`
	Value       float64 `json:"value"`
	Target      float64 `json:"target"`
	Reason      string  `json:"reason"`
}
