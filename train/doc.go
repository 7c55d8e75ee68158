// Package train is the runner: it runs pixelis's phases — SFT, GRPO (RFT),
// test-time RL (TTRL) and the final test evaluation — in one goroutine,
// publishing telemetry and applying commands between steps. Start with
// Runner.Run (run.go). Each phase is a file of its own, read top to bottom:
//
//	sft.go           SFT with the data curriculum
//	rft.go           GRPO with the reward curriculum; one step in rftRun.stepOnce,
//	                 its halves that touch the policy in rft_step.go, its
//	                 advantages in rft_estimator.go, its metrics in rft_metrics.go
//	ttrl.go          test-time RL on an unlabeled stream; its update in ttrl_step.go
//	test.go          every model of the run on the held-out split: final_eval.json
//
// and around them the run's checkpoints and resume (state.go), the training
// set (data.go), stopping (interrupt.go), the divergence guard (guard.go), the
// config's checks (check.go) and the memory estimate of the phases a run goes
// through (memory.go, each phase sized by train/footprint).
//
// The parts the phases are made of are leaf packages the runner imports, and
// that the tools beside it (train/analysis, train/serve, train/experiment,
// pixelis launch's train/steer) import too:
//
//	train/setup      the one translation from the config to each component
//	train/rollout    the rollout engine and evaluation: episodes played in batches
//	train/rundir     the names of a run directory's files
//	train/stream     the run's random streams
//	train/footprint  the memory estimate of each phase's peak
//	train/grpo, train/sft, train/ttrl, train/critic   the algorithms
//	train/policy, train/env, train/telemetry          the network, the world, the stream out
//
// The arrows point one way: no package under train/ imports the runner, and
// the runner imports nothing of the launch side (train/launch, train/steer);
// imports_test.go holds both.
package train
