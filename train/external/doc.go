// Package external evaluates an agent outside pixelis — a vision-language
// model behind a command, say — on the held-out tasks pixelis scores its own
// models on, with the same statistics (`pixelis eval --serve`).
//
// Evaluate starts a `pixelis serve` of the run's world on loopback, opens one
// episode an attempt (every task's greedy attempt and its n sampled ones, the
// tasks and sampling seeds of pixelis's own test phase), writes them as a
// Plan, and runs the agent's command with the server's address, its token and
// the plan's path in its environment (EnvURL, EnvToken, EnvPlan). The agent
// plays each episode of the plan through serve's API and exits. pixelis then
// reads every episode back from the server — what was done, and whether the
// answer was right is the server's record, not the agent's word — and scores
// them as rollout.Evaluate scores its own episodes, task by task, so that two
// agents' results pair (Paired) as pixelis's SFT and RFT models do in
// final_eval.json.
package external
