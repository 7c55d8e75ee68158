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
//	  policy.safetensors     every weight of the policy, LoRA adapters included, F32, in pixelis's
//	                         [in, out] orientation: <layer>.weight [in, out] (y = x·W + b, the
//	                         transpose of torch.nn.Linear.weight), <layer>.bias [out],
//	                         <layer>.lora_A [in, r], <layer>.lora_B [r, out]; Save records this
//	                         in the file's __metadata__ (pixelis_weight_layout = "in_out",
//	                         layout.go), and the train package the network's architecture
//	                         (pixelis_policy_config: train/policy.Record)
//	  optimizer.safetensors  Adam moments ("m/<param>", "v/<param>") as F32, the step as I64
//	  replay.safetensors     RFT: the high-|advantage| replay buffer
//	  curiosity.safetensors  RFT with ICM curiosity: the curiosity model and its optimiser
//	  state.json             trainer state: curricula, KPI trackers, reward normaliser windows,
//	                         curiosity cache, data cursor
//	step_002110_stage/       the save at a reward-stage end (RFT step 110 after 2,000 SFT steps);
//	                         periodic, manual and signal saves are step_NNNNNN like the first
//	sft_final/ rft_final/    the saves at the end of each phase
//	latest                   the name of the newest complete checkpoint and a newline
//	.tmp-*  .prev-*  .latest-*   in-flight debris of an interrupted save; readers skip it
//
// A checkpoint directory holds the files its manifest lists and nothing else: it is written whole
// and renamed into place, so anything else in it was put there afterwards. Verify reports such an
// entry (Unlisted) and Load, so a resume, refuses the checkpoint, as it refuses a changed byte: a
// resume continues from exactly what was saved, and the refusal names the file and an older valid
// checkpoint.
//
// Adapter exports (runs/<name>/adapters/rft_adapters_<stage>/, adapter.go) are PEFT's layout, not
// checkpoints: adapter_model.safetensors (base_model.model.<layer>.lora_A.weight [r, in],
// .lora_B.weight [out, r], PEFT's orientation; pixelis's stage, step and format version in its
// __metadata__) and adapter_config.json with LoraConfig's keys only, base_model_name_or_path
// relative to the adapter directory.
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
//   - peft.go: how ReadAdapter reads adapter_config.json as PEFT does, so PEFT's own adapters load.
//   - layout.go: the orientation of policy.safetensors' weights, recorded in its metadata.
//   - safetensors.go: the file format, written and validated from its specification, with the
//     data laid out as the reference implementation lays it out (widest type first), so every
//     tensor is aligned for readers that map the file.
//
// The package uses only the standard library and never prints; callers log what it returns.
package ckpt
