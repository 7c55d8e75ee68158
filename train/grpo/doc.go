// Package grpo is Group Relative Policy Optimisation for the pixel agent, read top to
// bottom in this order:
//
//	sampling.go   dynamic sampling: groups whose rewards all agree are re-rolled
//	advantage.go  group-relative advantages (GRPO, Dr. GRPO, RLOO) and their statistics
//	gae.go        per-action estimators: GAE over a critic's values (PPO), discounted
//	              returns and batch whitening (REINFORCE++)
//	filter.go     dropping samples whose advantage carries no signal
//	replay.go     the buffer of high-|A| samples mixed back into later updates
//	weights.go    loss aggregation modes as per-action weights
//	loss.go       the PPO-clip objective with a KL anchor, built on the policy graph
//	update.go     epochs × minibatches of that loss with gradient accumulation
//
// A trajectory's actions are its "tokens": under GRPO every action of a trajectory
// shares the trajectory's advantage, as in GRPO for language models; the per-action
// estimators give each its own.
package grpo
