// Package serve is `pixelis serve`: the pixel world and its reward as an
// HTTP+JSON service, so that trainers outside pixelis (a verl agent loop, a
// TRL environment, anything that speaks HTTP) can roll out episodes on
// pixelis's tasks and score them with pixelis's reward while they train a
// real vision-language model on GPUs.
//
// The API (every path under /v1; the schema is openapi.json, served at
// GET /v1/openapi.json and copied to docs/openapi.json):
//
//	GET    /v1/health                      liveness and load (no token needed)
//	GET    /v1/spec                        families, operations, action space, answer vocabulary, limits, reward
//	POST   /v1/episodes                    start an episode: {split, index} | {seed} | {family} (random) | {}, + {observation}
//	GET    /v1/episodes/{id}               its state and observation; DELETE closes it
//	POST   /v1/episodes/{id}/reset         the same task again, or the task in the body
//	POST   /v1/episodes/{id}/step          {op, x, y} | {op, answer} | {op} | {index}: the step, the next
//	                                       observation and mask, terminated/truncated, the step's reward terms
//	GET    /v1/episodes/{id}/view.png      the current view (?size, ?frame)
//	GET    /v1/episodes/{id}/frames/{k}    source frame k (?size)
//	GET    /v1/episodes/{id}/results       what each operation returned
//	GET    /v1/episodes/{id}/trajectory    the steps (?format=cota: the CoTA record once finished)
//	POST   /v1/vectors                     N episodes stepped together: {n | tasks, group, autoreset, seed, observation}
//	GET    /v1/vectors/{id}                its state and observations; DELETE closes it and its episodes
//	POST   /v1/vectors/{id}/reset          new tasks for every slot
//	POST   /v1/vectors/{id}/step           {actions: [N indices]}: N observations, masks, rewards, endings
//	POST   /v1/expert                      the expert's actions and CoTA record for a task (+ observations)
//	POST   /v1/experts                     the same for up to 1,024 tasks, with the observations along them
//	POST   /v1/score                       score finished trajectories with a fresh orchestrator
//	POST   /v1/scorers                     a reward orchestrator of one's own (GET, DELETE /v1/scorers/{id})
//	POST   /v1/scorers/{id}/score          score one batch with it
//
// Beside it, OpenEnv's environment protocol under /openenv (openenv.go: HTTP
// reset/step/state/schema/health/metadata, the WebSocket session in
// openenv_ws.go, MCP tools in openenv_mcp.go), on the same episodes.
//
// Choices, and why:
//
//   - Answers about episodes carry what a trainer needs at every step (the
//     coarse view pixelis's policy reads and/or the view's pixels, the
//     action mask, terminated/truncated, the reward terms known at the
//     step), in the encoding the session chose: JSON numbers, or the npy
//     frame (arrays.go), raw little-endian arrays a client maps without
//     parsing. PNG stays for people.
//   - Everything is computed by train/env and reward, never re-implemented:
//     steps are env.Episode.Step, step results are env's CoTA JSON (so a step
//     read from the server equals the same step in `pixelis data gen` output),
//     the reward is setup.Orchestrator's, and scoring replays the actions
//     in a fresh episode, recording each observation as a rollout does, so
//     rewards never depend on what a client claims an operation returned.
//   - Reward state lives with the trainer that owns it (score.go): a scorer is
//     one run's orchestrator (normaliser windows, ICM curiosity model), while
//     POST /v1/score is a pure function of its request.
//   - Bounded (limits.go): at most Options.MaxEpisodes live episodes (about
//     300 KiB each, more for video tasks) within Options.MaxMemory, and
//     MaxScorers scorers; a create beyond a bound is refused with 503 and
//     Retry-After (when the least recently used one would expire). Score
//     work runs under a semaphore of replayed steps; the excess waits, then
//     gets 503. Anything idle for IdleTimeout is closed. Bodies are capped
//     (64 KiB, 1 MiB for vector steps, 16 MiB for scores).
//   - Strict input: unknown fields, duplicate keys, null members, wrong
//     types, trailing data, missing or superfluous arguments are 4xx answers whose JSON names the field
//     ({"error": {"status", "field", "message"}}); a panic is a logged 500,
//     never a crash. What an agent may get wrong (a point outside the view, an
//     answer outside the vocabulary) is not a request error: the episode
//     records the misuse, as it would for pixelis's own policy.
//   - Ids are random (96 bits), so clients sharing a server do not collide;
//     a bearer token (Options.Token) guards every request but /v1/health,
//     and the CLI refuses a non-loopback address without one.
//
// Concurrency: each episode and each scorer has its own lock; requests on
// different episodes run in parallel. Episode buffers are pooled.
package serve
