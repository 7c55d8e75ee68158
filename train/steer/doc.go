// Package steer runs pixelis's KPI tracker and reward-stage curriculum on the
// metrics another trainer reports step by step — a child of `pixelis launch`
// that speaks the launch channel — so that trainer gets pixelis's
// performance-triggered stages without reimplementing them.
//
// It is the built-in GRPO trainer's curriculum, not a second one: the same
// curriculum.Tracker and curriculum.Manager, built from the same [curriculum]
// section by the same mapping (setup.RewardCurriculumConfig,
// setup.TrackerConfig, which the built-in trainer uses too), fed the same
// per-step batch means:
//
//	success_rate   = successes / episodes      (the step's episodes)
//	reward_final   = reward/final/raw          (mean over the step's episodes)
//	coherence      = reward/coherence/raw
//	combined_score = reward/total
//
// and checked every curriculum.eval_every steps. What the child sends is
// named by what it declared at the handshake (Declaration); a curriculum that
// needs something undeclared is refused by New with an *UndeclaredError per
// field. The loop, from the side that reads the child's channel:
//
//	s, err := steer.New(cfg, steer.Declaration{Components: hello.Components, Reports: hello.Reports})
//	// err: send `refused`, exit 2
//	send(welcome{Stage: s.Current()})
//	for each metrics message {
//		u, err := s.Observe(step, metrics) // err: a step out of order, warn
//		record(step, metrics + u.Metrics); emit(u.Events...)
//		if u.Stage != nil { send(command{Kind: "stage", Args: *u.Stage}) }
//		publish(Snapshot{Curriculum: s.Curriculum(), …})
//	}
//	on a checkpoint message: s.SaveState(runDir, step); on resume: s.Load(runDir, step)
//
// Nothing here prints, and a Steerer is used from one goroutine.
package steer
