package baseline

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pixelis/pixelis/train/env"
)

// The networks' inputs: each feature standardised with the mean and
// deviation of the training samples; features that never vary there are
// dropped (at the first observation the history is all zero).

// scaler standardises the features keep of a row.
type scaler struct {
	keep      []int
	mean, inv []float32
}

func fitScaler(rows [][]float32) scaler {
	width := len(rows[0])
	var s scaler
	for j := range width {
		var sum, sq float64
		for _, r := range rows {
			sum += float64(r[j])
			sq += float64(r[j]) * float64(r[j])
		}
		n := float64(len(rows))
		mean := sum / n
		sd := math.Sqrt(max(sq/n-mean*mean, 0))
		if sd < 1e-6 {
			continue
		}
		s.keep = append(s.keep, j)
		s.mean = append(s.mean, float32(mean))
		s.inv = append(s.inv, float32(1/sd))
	}
	return s
}

func (s scaler) width() int { return len(s.keep) }

func (s scaler) apply(row, dst []float32) {
	for i, j := range s.keep {
		dst[i] = (row[j] - s.mean[i]) * s.inv[i]
	}
}

// channelScaler standardises each channel of the cell grid over all cells.
type channelScaler struct{ mean, inv []float32 }

func fitChannels(rows [][]float32, channels, cells int) channelScaler {
	s := channelScaler{mean: make([]float32, channels), inv: make([]float32, channels)}
	for c := range channels {
		var sum, sq float64
		for _, r := range rows {
			for k := range cells {
				v := float64(r[k*channels+c])
				sum += v
				sq += v * v
			}
		}
		n := float64(len(rows) * cells)
		mean := sum / n
		sd := math.Sqrt(max(sq/n-mean*mean, 0))
		s.mean[c] = float32(mean)
		if sd > 1e-6 {
			s.inv[c] = float32(1 / sd)
		}
	}
	return s
}

// apply writes cell rows [cells][channels] as standardised [channels][cells].
func (s channelScaler) apply(rows, dst []float32, cells int) {
	channels := len(s.mean)
	for k := range cells {
		for c := range channels {
			dst[c*cells+k] = (rows[k*channels+c] - s.mean[c]) * s.inv[c]
		}
	}
}

// encoder turns samples into one probe's dataset.
type encoder struct {
	arch  arch
	dense scaler
	cells channelScaler
	input func(s *sample) []float32 // the dense input before scaling
}

func (e *encoder) encode(s []sample, classes []string) *dataset {
	d := &dataset{n: len(s), y: make([]int, len(s)), dense: make([]float32, len(s)*e.arch.dense)}
	cw := e.arch.cellC * e.arch.grid * e.arch.grid
	if cw > 0 {
		d.cells = make([]float32, len(s)*cw)
	}
	for i := range s {
		e.dense.apply(e.input(&s[i]), d.dense[i*e.arch.dense:(i+1)*e.arch.dense])
		if cw > 0 {
			e.cells.apply(s[i].obs[env.GlobalFeatures:], d.cells[i*cw:(i+1)*cw], numCells)
		}
		d.y[i] = max(slices.Index(classes, s[i].answer), 0) // unseen answers only occur in scoring, where y is unused
	}
	return d
}

// Inputs of the probes.
func wholeObs(s *sample) []float32 { return s.obs }
func handOnly(s *sample) []float32 { return s.hand }
func globalAndHand(s *sample) []float32 {
	return append(slices.Clone(s.obs[:env.GlobalFeatures]), s.hand...)
}

// trainProbe trains network probe p and returns its answers on any samples.
func trainProbe(ctx context.Context, p string, netFit, fit, val []sample, classes []string, opts Options, rng *rand.Rand) (func([]sample) ([]string, error), int, error) {
	e := &encoder{}
	to := trainOptions{batch: 128, lr: 1e-3, decay: 1e-4, maxEpochs: opts.MaxEpochs, patience: opts.Patience}
	on := netFit
	switch p {
	case ProbeMLP:
		e.input = wholeObs
		e.arch.hidden = []int{256, 256}
	case ProbeCNN:
		e.input = globalAndHand
		e.arch.cellC, e.arch.grid, e.arch.conv = env.CellFeatures, grid, []int{24, 24}
		e.arch.hidden = []int{128}
	case ProbeHand:
		e.input = handOnly
		e.arch.hidden = []int{64, 64}
		to.batch, to.maxEpochs, to.patience = 64, 3*opts.MaxEpochs, 2*opts.Patience
		on = fit
	}
	rows := make([][]float32, len(on))
	cellRows := make([][]float32, len(on))
	for i := range on {
		rows[i] = e.input(&on[i])
		cellRows[i] = on[i].obs[env.GlobalFeatures:]
	}
	e.dense = fitScaler(rows)
	e.arch.dense = e.dense.width()
	if e.arch.cellC > 0 {
		e.cells = fitChannels(cellRows, e.arch.cellC, numCells)
	}
	e.arch.classes = len(classes)
	c, err := newClassifier(e.arch, rng, to.batch, 512)
	if err != nil {
		return nil, 0, err
	}
	tr, va := e.encode(on, classes), e.encode(val, classes)
	_, epochs, err := c.fit(ctx, tr, va, to, rng)
	if err != nil {
		return nil, 0, err
	}
	predict := func(s []sample) ([]string, error) {
		pred, err := c.predict(e.encode(s, classes))
		if err != nil {
			return nil, err
		}
		out := make([]string, len(pred))
		for i, k := range pred {
			out[i] = classes[k]
		}
		return out, nil
	}
	return predict, epochs, nil
}
