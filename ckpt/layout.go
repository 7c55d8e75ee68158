package ckpt

import "maps"

// PolicyFile is the checkpoint file that holds every weight of the policy network.
const PolicyFile = "policy.safetensors"

// Weight orientation of policy.safetensors, recorded in its __metadata__ by Save (keys
// MetaWeightLayout and MetaWeightLayoutDoc) so that a reader outside pixelis need not guess:
//
//	<layer>.weight  [in, out]   y = x·W + b, the transpose of torch.nn.Linear.weight ([out, in])
//	<layer>.bias    [out]
//	<layer>.lora_A  [in, r]     y += (alpha/r)·(x·A)·B
//	<layer>.lora_B  [r, out]
//
// Exported adapters (adapter.go) use PEFT's orientation instead: lora_A.weight [r, in],
// lora_B.weight [out, r].
const (
	MetaWeightLayout    = "pixelis_weight_layout"
	MetaWeightLayoutDoc = "pixelis_weight_layout_doc"
	// PolicyWeightLayout is the value of MetaWeightLayout in policy.safetensors.
	PolicyWeightLayout = "in_out"
	policyLayoutDoc    = "<layer>.weight is [in, out] with y = x @ W + b (the transpose of torch.nn.Linear.weight); " +
		"<layer>.bias is [out]; <layer>.lora_A is [in, r] and <layer>.lora_B is [r, out], adding (alpha/r) * (x @ A) @ B"
)

// withPolicyLayout returns meta with the policy's weight orientation added (keys the caller set
// are kept).
func withPolicyLayout(meta map[string]string) map[string]string {
	out := map[string]string{MetaWeightLayout: PolicyWeightLayout, MetaWeightLayoutDoc: policyLayoutDoc}
	maps.Copy(out, meta)
	return out
}

// MetaPolicyConfig is the __metadata__ key of policy.safetensors that holds the network's
// architecture as JSON (train/policy.Record): observation split, widths, and each adapter's rank
// and alpha, what a reader needs beyond the tensors' shapes to rebuild the network.
const MetaPolicyConfig = "pixelis_policy_config"
