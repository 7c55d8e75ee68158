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
//	POST   /v1/episodes                    start an episode: {split, index} | {seed} | {family} (random) | {}
//	GET    /v1/episodes/{id}               its state; DELETE closes it
//	POST   /v1/episodes/{id}/reset         the same task again, or the task in the body
//	POST   /v1/episodes/{id}/step          {op, x, y} | {op, answer} | {op} | {index}
//	GET    /v1/episodes/{id}/view.png      the current view (?size, ?frame)
//	GET    /v1/episodes/{id}/frames/{k}    source frame k (?size)
//	GET    /v1/episodes/{id}/results       what each operation returned
//	GET    /v1/episodes/{id}/trajectory    the steps (?format=cota: the CoTA record once finished)
//	POST   /v1/expert                      the expert's actions and CoTA record for a task
//	POST   /v1/score                       score finished trajectories with a fresh orchestrator
//	POST   /v1/scorers                     a reward orchestrator of one's own (GET, DELETE /v1/scorers/{id})
//	POST   /v1/scorers/{id}/score          score one batch with it
//
// Choices, and why:
//
//   - Everything is computed by train/env and reward, never re-implemented:
//     steps are env.Episode.Step, step results are env's CoTA JSON (so a step
//     read from the server equals the same step in `pixelis data gen` output),
//     the reward is train.NewOrchestrator's, and scoring replays the actions
//     in a fresh episode, recording each observation as a rollout does, so
//     rewards never depend on what a client claims an operation returned.
//   - Reward state lives with the trainer that owns it (score.go): a scorer is
//     one run's orchestrator (normaliser windows, ICM curiosity model), while
//     POST /v1/score is a pure function of its request.
//   - Bounded: at most Options.MaxEpisodes live episodes (about 315 KiB each,
//     more for video tasks) and MaxScorers scorers; a create beyond a cap is
//     refused with 503 and Retry-After (when the least recently used one
//     would expire), so memory never grows with load. Anything idle for
//     IdleTimeout is closed. Bodies are capped (64 KiB, 16 MiB for scores).
//   - Strict input: unknown fields, wrong types, trailing data, missing or
//     superfluous arguments are 4xx answers whose JSON names the field
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
