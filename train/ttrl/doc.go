// Package ttrl is test-time reinforcement learning's own parts, as train/grpo
// is GRPO's: the vote that turns k sampled trajectories of an unlabeled task
// into a pseudo-label and rewards (vote.go), the retrieval memory of earlier
// tasks' winning trajectories (memory.go), and the anchor that keeps the
// policy near an exponential moving average of itself (anchor.go). The TTRL
// phase that drives them step by step is the runner's (train/ttrl.go).
package ttrl
