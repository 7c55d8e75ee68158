// Package reward turns finished trajectories into the scalar rewards that GRPO
// optimises, and keeps every number the console shows beside them.
//
// A reward is the seed's weighted sum of normalised components plus a tool
// penalty:
//
//	R = clip( Σ_c w_c · z_c  +  penalty , ±clip ),   z_c = (raw_c − μ_c) / σ_c
//
// registry.go lists every term (its name, what it pays for, whether it is a
// price added unweighted, how it is built): the one list of the reward's
// components, which configs checks a stage's weights against, Build makes an
// orchestrator of, and the runner's snapshots carry to the console. Adding a
// term is a row there and its component's file.
//
// Then read orchestrator.go: an Orchestrator holds the Components
// (final.go, coherence.go, misuse.go and one curiosity component,
// curiosity_icm.go — its network in icm_net.go, its cache in icm_cache.go, its
// checkpoint state in icm_state.go — or curiosity_rapr.go), a Normalizer (normalize.go) with a
// running mean and variance per component over a sliding window, the weights
// the reward curriculum sets, and the clip. Compute returns a Breakdown with
// every component's raw and normalised value and a per-step attribution, which
// Metrics condenses into the logged metric names (reward/total,
// reward/<component>/raw, reward/<component>/norm, curiosity/…), and the total
// spread over the steps for estimators that discount per step (step_reward.go).
//
// Every Component returns a Score per trajectory: Value is the trajectory-level
// raw reward and PerStep attributes it to steps so that Σ PerStep = Value.
//
// Settings: each component takes its section of the run config (configs.Misuse,
// configs.Coherence, configs.Curiosity, configs.Reward), checked by
// configs.Validate; configs/default.toml holds every default. Penalties are
// stored, added and shown as the negative numbers the config holds.
//
// Determinism: nothing here reads a clock or the global random generator.
// Random initialisation takes a *rand.Rand; everything that influences later
// rewards (normaliser windows, the curiosity model, its optimiser and cache) is
// returned by State and put back by Restore, so a resumed run computes the same
// rewards bit for bit. None of the types is safe for concurrent use.
package reward
