// Package alerts holds the detectors that read a run's metric records — the
// lines of metrics.jsonl, step by step — and say when a run is failing in the
// way its curves show before its score does: tool use collapsing, entropy
// collapsing, one reward term dominating or being gamed, GRPO's signal
// vanishing, the KL or gradient norm running away, validation regressing, the
// trainer stalling or slowing down.
//
// Each detector is a pure rule over the records it has seen (and, for the
// stall, a clock): the same code runs live in the runner, over a launched
// trainer's metrics, over a watched log, and offline over a finished run
// (Replay). A detector fires when its condition starts to hold and clears
// when it stops, each an Alert with the rule, the threshold and the evidence.
// What a fire does (warn, checkpoint, pause, roll back, raise a weight, stop)
// is the Alert's Action; the runner carries it out.
//
// Start reading at Set (set.go), then detector.go, which lists the
// detectors; each rule, with its formula beside it, is in trend.go (tool use
// and entropy collapsing), reward.go (a component dominating, a term gamed),
// signal.go (GRPO's signal vanishing, the KL or gradient norm running away)
// or progress.go (validation regressing, a stall, throughput collapsing).
// They are configured by [alerts] (configs.Alerts) and stated in
// docs/alerts.md.
package alerts
