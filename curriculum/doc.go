// Package curriculum decides, from numbers alone, what the agent trains on and
// with which reward weights. It imports only the standard library: the trainer
// feeds it scores and moving averages and applies the decisions it returns.
// Nothing here prints; every move comes back as a Decision carrying the
// numbers behind it and a Reason for the events pane, and every piece of state
// round-trips through JSON so a resumed run decides exactly as the
// uninterrupted one would have.
//
// Three parts, each readable on its own:
//
//   - SFT data curriculum — pools.go, data.go. Pools holds the active sample
//     indices of each difficulty mix (simple → +medium → +hard) and draws
//     from them with the caller's random stream. DataManager implements the
//     seed's advance-and-validate rule: every AdvanceEvery steps it is Due,
//     the trainer advances the pools and re-evaluates at once, and Decide
//     keeps the new mix or rolls it back when the score fell by more than
//     RollbackThreshold, doubling the wait before the next try. Start with
//     the loop in the DataManager doc comment.
//
//   - Reward-stage curriculum — condition.go, reward.go. Manager walks the
//     stages of RewardConfig (Phase1_Learn_Goal …): each evaluation cycle
//     Check records the KPIs, undoes a recent advance whose KPI collapsed,
//     and otherwise advances when any exit condition of the stage holds
//     (threshold, patience = mean over N checks, slope = least-squares slope
//     over N checks, steps). Weights then go to the reward orchestrator;
//     Progress, Note and Describe feed the console's curriculum pane.
//
//   - KPI trackers — kpi.go. Tracker turns per-step batch means into the
//     moving averages the exit conditions name ("success_rate_ma100") and
//     their per-step slopes; Slope is the least-squares helper both use.
//
// Decision.Kind is "advance" or "rollback"; the trainer maps them to the
// telemetry events data_advance/data_rollback and stage_advance/
// stage_rollback, and logs Stage() as data_curriculum/stage or
// curriculum/stage.
package curriculum
