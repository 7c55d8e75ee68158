// Package ckpt stores pixelis checkpoints so that a run can always resume from one it can trust.
//
// A long RL run over SSH gets killed, loses power and fills disks. The guarantees here are that a
// crash at any moment leaves the previous checkpoint and the latest pointer intact, and that a
// damaged checkpoint — or one whose weights are NaN or infinite, however faithfully saved — is
// refused with a list of what is wrong instead of being half loaded.
//
// Layout of a checkpoint root (runs/<name>/checkpoints/):
//
//	step_000500/
//	  manifest.json          written last: phase, step, stage, kind, config hash, and each
//	                         file's size and SHA-256 (plus tensor shapes for .safetensors)
//	  policy.safetensors     weights, in the safetensors format (safetensors.go)
//	  adapters.safetensors
//	  optimizer.safetensors  moments as F32, step counters as I64
//	  state.json             trainer state: curriculum, counters, generator seeds
//	latest                   the name of the newest complete checkpoint and a newline
//	.tmp-*  .prev-*  .latest-*   in-flight debris of an interrupted save; readers skip it
//
// Where to start reading:
//
//   - save.go: Save and the ordering that makes it crash-safe (temporary directory, fsync,
//     manifest last, rename, then the latest pointer); tidy explains the recovery of leftovers.
//   - load.go and verify.go: Latest, Load (verifies first), Verify (every Problem, by file), List,
//     PreviousValid to suggest a fallback when the latest checkpoint is damaged, and ValidBefore
//     when the damaged one's manifest is gone and its place in the run is known another way.
//   - retention.go: Prune keeps the newest periodic checkpoints and every stage, manual and final one.
//   - adapter.go: ExportAdapter writes LoRA adapters in PEFT's layout so other tools can load them.
//   - safetensors.go: the file format, written and validated from its specification.
//
// The package uses only the standard library and never prints; callers log what it returns.
package ckpt
