// Package critic is the value function V(s) that PPO's advantages stand on in
// RFT (rft.estimator = "ppo"), read in this order:
//
//	net.go      the network: the policy's cell encoder and trunk with a scalar head,
//	            either the SFT trunk frozen with adapters of the critic's own ("trunk")
//	            or a small network of its own ("mlp")
//	forward.go  the pure-Go forward pass that gives GAE its values
//	loss.go     the clipped value loss as a gorgonia graph
//	update.go   epochs × minibatches of that loss, and the statistics verl logs
//	            (critic/vf_loss, critic/vf_clipfrac, critic/vpred_mean, critic/grad_norm)
//
// GAE itself, beside the other advantage estimators, is in train/grpo (gae.go).
package critic
