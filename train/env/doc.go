// Package env is the built-in pixel world the agent is trained in: generated
// raster images, visual operations that act on their pixels, question tasks
// with an expert solver, the observation featurizer, CoTA data files and
// difficulty scores.
//
// Where to start reading:
//
//   - space.go: the geometry, the operations, misuse kinds, and the layouts of
//     observations and of the discrete action space other packages compile against.
//   - tasks.go: Generate turns (config, split, index) into a Task — a scene
//     drawn at SourceSize by draw.go (shapes, noisy background, 3×5 labels from
//     font.go) and a question whose referred objects are unique. A confusable
//     task (Config.Confusion) has a look-alike of a referred object.
//   - ops.go: the operations on pixels — flood-fill segmentation with snapping,
//     colour/shape measurement, zoom regions, box-filter resampling, glyph
//     template matching. episode.go wires them into Episode, the Env.
//   - expert.go: Solve, the annotator that clicks the right cells and answers
//     from what the operations returned.
//   - observe.go: the coarse view plus history the policy sees; hue.go: how
//     it sees colour (hue pairs of look-alike colours, never the colour).
//   - demos.go: the sample types of SFT data (positive, self_correction,
//     traps, outcome_negative) with each step's role (imitate, skip, avoid).
//   - cota.go, difficulty.go: CoTA JSONL samples, composite difficulty and
//     simple/medium/hard buckets, dataset summaries.
//
// Everything is deterministic: the generator uses integer arithmetic and a
// PCG stream seeded from the task seed, so the same seed gives the same bytes
// on every machine. The package never prints.
package env
