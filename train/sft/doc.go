// Package sft is supervised fine-tuning of the policy on expert chain-of-thought-action
// trajectories: every (observation, expert action) pair of a trajectory is one
// training example of a masked imitation loss. Start with loss.go; data.go turns
// CoTA samples into pairs.
package sft
