package reward

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// smallICM is a model small enough for finite differences and quick training:
// 16 observation features, 4 actions.
func smallICM(t testing.TB, seed uint64, mod func(*configs.Curiosity)) *ICM {
	t.Helper()
	cfg := testCuriosity
	cfg.EmbedDim, cfg.Hidden, cfg.LoRARank, cfg.LoRAAlpha = 4, 8, 2, 4
	cfg.BatchSize = 8
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewICM(cfg, 16, 4, rand.New(rand.NewPCG(seed, 99)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// synthTransitions are n fixed transitions where action a raises feature a of
// the next observation by 1: learnable by both the forward and inverse models.
func synthTransitions(n, obsDim, actions int, rng *rand.Rand) []*Trajectory {
	out := make([]*Trajectory, n)
	for i := range out {
		s := make([]float32, obsDim)
		for j := range s {
			s[j] = rng.Float32()
		}
		a := i % actions
		sn := slices.Clone(s)
		sn[a]++
		st := withObs(op(0), s...)
		st.Index = a
		out[i] = &Trajectory{Steps: stepsOf(st), FinalObs: sn, Answered: true}
	}
	return out
}

func transitionsOf(trajs []*Trajectory) []transition {
	var out []transition
	for _, t := range trajs {
		for k, st := range t.Steps {
			sn := t.FinalObs
			if k+1 < len(t.Steps) {
				sn = t.Steps[k+1].Obs
			}
			out = append(out, transition{s: st.Obs, sn: sn, act: st.Index})
		}
	}
	return out
}

// refLoss recomputes β·forward + (1−β)·inverse in float64 from the current
// weights. phiS/phiN are the forward model's inputs and targets, held fixed
// (the graph's stop-gradient); the inverse term re-encodes with the weights.
func refLoss(m *ICM, tr []transition, phiS, phiN [][]float64) float64 {
	f := func(name string, i int) float64 { return float64(m.byName[name].data[i]) }
	e, h, r, a, d := m.e, m.h, m.r, m.a, m.d
	enc := func(s []float32) []float64 {
		out := make([]float64, e)
		for j := range e {
			v := f(pEncB, j)
			for i := range d {
				v += float64(s[i]) * f(pEncW, i*e+j)
			}
			out[j] = math.Tanh(v)
		}
		return out
	}
	lin := func(x []float64, w, b, la, lb string, in, out int) []float64 {
		y := make([]float64, out)
		xa := make([]float64, r)
		for k := range r {
			for i := range in {
				xa[k] += x[i] * f(la, i*r+k)
			}
		}
		for j := range out {
			y[j] = f(b, j)
			for i := range in {
				y[j] += x[i] * f(w, i*out+j)
			}
			for k := range r {
				y[j] += m.scale * xa[k] * f(lb, k*out+j)
			}
		}
		return y
	}
	var fwd, inv float64
	for n, t := range tr {
		x := make([]float64, e+a)
		copy(x, phiS[n])
		x[e+t.act] = 1
		hid := lin(x, pFwdW1, pFwdB1, pFwdA1, pFwdL1, e+a, h)
		for j := range hid {
			hid[j] = math.Tanh(hid[j])
		}
		pred := lin(hid, pFwdW2, pFwdB2, pFwdA2, pFwdL2, h, e)
		for j := range pred {
			fwd += (pred[j] - phiN[n][j]) * (pred[j] - phiN[n][j]) / float64(e)
		}
		ps, pn := enc(t.s), enc(t.sn)
		hi := make([]float64, h)
		for j := range h {
			v := f(pInvC, j)
			for i := range e {
				v += ps[i]*f(pInvUS, i*h+j) + pn[i]*f(pInvUN, i*h+j)
			}
			hi[j] = math.Tanh(v)
		}
		logits := make([]float64, a)
		mx := math.Inf(-1)
		for c := range a {
			logits[c] = f(pInvD, c)
			for j := range h {
				logits[c] += hi[j] * f(pInvV, j*a+c)
			}
			mx = max(mx, logits[c])
		}
		var z float64
		for c := range a {
			z += math.Exp(logits[c] - mx)
		}
		inv += -(logits[t.act] - mx - math.Log(z))
	}
	nf := float64(len(tr))
	return m.cfg.Beta*fwd/nf + (1-m.cfg.Beta)*inv/nf
}

// The graph's gradients (stable log-softmax, one-hot pick, padding rows of
// weight 0, LoRA scale, stop-gradient on φ in the forward term) match central
// finite differences of the float64 reference loss.
func TestICMGradientsMatchFiniteDifferences(t *testing.T) {
	m := smallICM(t, 1, nil)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, name := range []string{pFwdL1, pFwdL2} { // B ≠ 0 so the A gradients are not zero
		for i := range m.byName[name].data {
			m.byName[name].data[i] = float32(rng.NormFloat64() * 0.3)
		}
	}
	tr := transitionsOf(synthTransitions(5, m.d, m.a, rng)) // 5 of 8 rows: 3 padding rows
	phiS, phiN := make([][]float64, len(tr)), make([][]float64, len(tr))
	buf := make([]float32, m.e)
	for n, x := range tr {
		m.encode(x.s, buf)
		phiS[n] = float64s(buf)
		m.encode(x.sn, buf)
		phiN[n] = float64s(buf)
	}
	fwd, inv, err := m.gradients(tr)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.cfg.Beta*fwd+(1-m.cfg.Beta)*inv, refLoss(m, tr, phiS, phiN); !near(got, want, 1e-5) {
		t.Fatalf("graph loss %.8g, reference %.8g", got, want)
	}
	checked := 0
	for pi, p := range m.trainable {
		for _, i := range []int{0, len(p.data) / 2, len(p.data) - 1, rng.IntN(len(p.data))} {
			orig := p.data[i]
			p.data[i] = orig + 1e-2
			up, hiV := float64(p.data[i]), refLoss(m, tr, phiS, phiN)
			p.data[i] = orig - 1e-2
			dn, loV := float64(p.data[i]), refLoss(m, tr, phiS, phiN)
			p.data[i] = orig
			fd := (hiV - loV) / (up - dn)
			g := float64(m.gradBuf[pi][i])
			if !near(g, fd, 2e-5+1e-2*math.Abs(fd)) {
				t.Errorf("%s[%d]: graph gradient %.6g, finite difference %.6g", p.name, i, g, fd)
			}
			checked++
		}
	}
	if checked < 4*len(m.trainable) {
		t.Fatalf("checked %d gradients", checked)
	}
}

func float64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// Training on a repeated set of transitions lowers both losses and the
// curiosity reward itself (familiar transitions stop being surprising).
func TestICMLossDecreasesOnRepeatedTransitions(t *testing.T) {
	m := smallICM(t, 2, func(c *configs.Curiosity) { c.LR = 1e-2 })
	batch := synthTransitions(8, m.d, m.a, rand.New(rand.NewPCG(8, 8)))
	mean := func(s []Score) float64 {
		var v float64
		for _, x := range s {
			v += x.Value
		}
		return v / float64(len(s))
	}
	r0 := mean(m.Score(batch))
	f0, i0 := m.Stats().ForwardLoss, m.Stats().InverseLoss
	var r1 float64
	for range 300 {
		r1 = mean(m.Score(batch))
	}
	st := m.Stats()
	t.Logf("forward %.4g → %.4g, inverse %.4g → %.4g, reward %.4g → %.4g", f0, st.ForwardLoss, i0, st.InverseLoss, r0, r1)
	if !(st.ForwardLoss < 0.5*f0) || !(st.InverseLoss < 0.5*i0) || !(r1 < 0.5*r0) {
		t.Fatalf("no learning: forward %.4g → %.4g, inverse %.4g → %.4g, reward %.4g → %.4g", f0, st.ForwardLoss, i0, st.InverseLoss, r0, r1)
	}
	if st.Updates != 301 || st.SkippedUpdates != 0 || m.Err() != nil {
		t.Fatalf("updates %d skipped %d err %v", st.Updates, st.SkippedUpdates, m.Err())
	}
}

// With B = 0 the adapted forward model equals its frozen base exactly; after
// training the adapters differ from zero and so do the predictions, while the
// base weights stay bit for bit what they were.
func TestICMLoRAStartsAsNoOpAndBaseStaysFrozen(t *testing.T) {
	m := smallICM(t, 3, func(c *configs.Curiosity) { c.LR = 1e-2 })
	rng := rand.New(rand.NewPCG(4, 4))
	phi := make([]float32, m.e)
	differs := func() bool {
		d := false
		for a := range m.a {
			for j := range phi {
				phi[j] = float32(rng.Float64()*2 - 1)
			}
			with := slices.Clone(m.predict(phi, a, true))
			without := m.predict(phi, a, false)
			d = d || !slices.Equal(with, without)
		}
		return d
	}
	if differs() {
		t.Fatal("adapters with B = 0 change the forward model")
	}
	base := map[string][]float32{}
	for _, n := range []string{pFwdW1, pFwdB1, pFwdW2, pFwdB2} {
		base[n] = slices.Clone(m.byName[n].data)
	}
	enc0 := slices.Clone(m.enc)
	batch := synthTransitions(8, m.d, m.a, rng)
	for range 20 {
		m.Score(batch)
	}
	for n, v := range base {
		if !slices.Equal(v, m.byName[n].data) {
			t.Errorf("frozen %s changed in training", n)
		}
	}
	if slices.Equal(enc0, m.enc) {
		t.Error("encoder did not train")
	}
	if !differs() {
		t.Error("adapters still a no-op after training")
	}
	trained, frozen := m.ParamCounts()
	if want := 16*4 + 4 + (8*2 + 2*8 + 8*2 + 2*4) + (4*8*2 + 8 + 8*4 + 4); trained != want {
		t.Errorf("trained weights %d, want %d", trained, want)
	}
	if want := 8*8 + 8 + 8*4 + 4; frozen != want {
		t.Errorf("frozen weights %d, want %d", frozen, want)
	}
}

// The Go reward η·‖f − φ(s′)‖²/E equals η times the graph's forward loss on
// the same transition (the two implementations of the forward model agree).
func TestICMRewardMatchesGraph(t *testing.T) {
	m := smallICM(t, 6, func(c *configs.Curiosity) { c.Epochs = 0 })
	rng := rand.New(rand.NewPCG(6, 6))
	for _, name := range []string{pFwdL1, pFwdL2} {
		for i := range m.byName[name].data {
			m.byName[name].data[i] = float32(rng.NormFloat64() * 0.3)
		}
	}
	batch := synthTransitions(3, m.d, m.a, rng)
	for _, tr := range batch {
		r := m.Score([]*Trajectory{tr})[0].Value
		fwd, _, err := m.gradients(transitionsOf([]*Trajectory{tr}))
		if err != nil {
			t.Fatal(err)
		}
		if !near(r, m.cfg.Eta*fwd, 1e-6) || r <= 0 {
			t.Errorf("reward %.8g, η·graph forward loss %.8g", r, m.cfg.Eta*fwd)
		}
	}
}

// Four copies of a 3-step trajectory: the first misses 3 times, the other
// three hit 9 times → 9/12. Training clears the cache, so the same batch again
// hits 9/12 again; with training off it hits 12/12. Rewards are the same
// whether they came from the cache or not.
func TestICMCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	mk := func() *Trajectory {
		o := func() []float32 {
			v := make([]float32, 16)
			for i := range v {
				v[i] = rng.Float32()
			}
			return v
		}
		s := stepsOf(withObs(seg(1, 1), o()...), withObs(op(env.OpProperties), o()...), withObs(op(env.OpZoom), o()...))
		s[0].Index, s[1].Index, s[2].Index = 0, 1, 2
		return &Trajectory{Steps: s, FinalObs: o(), Answered: true}
	}
	one := mk()
	batch := []*Trajectory{one, one, one, one}
	for _, c := range []struct {
		name   string
		epochs int
		second float64
	}{{"training", 1, 0.75}, {"frozen", 0, 1}} {
		t.Run(c.name, func(t *testing.T) {
			m := smallICM(t, 10, func(cfg *configs.Curiosity) { cfg.Epochs = c.epochs })
			first := m.Score(batch)
			if got := m.Stats().CacheHitRate; got != 0.75 {
				t.Errorf("first batch hit rate %v, want 0.75", got)
			}
			for _, s := range first[1:] {
				if s.Value != first[0].Value {
					t.Errorf("cached %v, computed %v", s.Value, first[0].Value)
				}
			}
			m.BeginStep() // the rate counts from here; the lookups stay cumulative
			m.Score(batch)
			st := m.Stats()
			if st.CacheHitRate != c.second || st.CacheLookups != 24 {
				t.Errorf("second batch hit rate %v over %d lookups, want %v over 24", st.CacheHitRate, st.CacheLookups, c.second)
			}
			// without BeginStep the rate covers both calls: one step, two rounds
			both := smallICM(t, 10, func(cfg *configs.Curiosity) { cfg.Epochs = c.epochs })
			both.Score(batch)
			both.Score(batch)
			if got, want := both.Stats().CacheHitRate, (0.75+c.second)/2; math.Abs(got-want) > 1e-12 {
				t.Errorf("two rounds in one step: hit rate %v, want %v", got, want)
			}
		})
	}
	// cache_size 0 (allowed by the config) disables the cache: nothing hits,
	// and the rewards are what the cached model computes
	t.Run("disabled", func(t *testing.T) {
		cached := smallICM(t, 10, func(cfg *configs.Curiosity) { cfg.Epochs = 0 }).Score(batch)
		m := smallICM(t, 10, func(cfg *configs.Curiosity) { cfg.Epochs, cfg.CacheSize = 0, 0 })
		got := m.Score(batch)
		if m.Stats().CacheHitRate != 0 || m.Stats().CacheLookups != 12 {
			t.Errorf("disabled cache: hit rate %v over %d lookups", m.Stats().CacheHitRate, m.Stats().CacheLookups)
		}
		for i := range got {
			if got[i].Value != cached[i].Value {
				t.Errorf("trajectory %d: reward %v without cache, %v with", i, got[i].Value, cached[i].Value)
			}
		}
	})
}

func TestLRUEvictsLeastRecent(t *testing.T) {
	c := newLRU(2)
	k := func(i int) cacheKey { return cacheKey{S: uint64(i)} }
	c.put(k(1), 1)
	c.put(k(2), 2)
	c.get(k(1)) // 2 is now the least recent
	c.put(k(3), 3)
	if _, ok := c.get(k(2)); ok {
		t.Error("least recent entry kept")
	}
	for _, i := range []int{1, 3} {
		if v, ok := c.get(k(i)); !ok || v != float64(i) {
			t.Errorf("entry %d: %v %v", i, v, ok)
		}
	}
}

// A model restored (through JSON) into a differently seeded ICM gives the same
// rewards, losses and cache figures as the uninterrupted one.
func TestICMStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	batches := make([][]*Trajectory, 5)
	for i := range batches {
		batches[i] = synthTransitions(10, 16, 4, rng)
		batches[i] = append(batches[i], batches[i][:3]...) // repeats for the cache
	}
	a := smallICM(t, 13, nil)
	for _, b := range batches[:3] {
		a.Score(b)
	}
	blob, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	var st ICMState
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	b := smallICM(t, 14, nil)
	if err := b.Restore(st); err != nil {
		t.Fatal(err)
	}
	for i, batch := range batches[3:] {
		sa, sb := a.Score(batch), b.Score(batch)
		if !reflect.DeepEqual(sa, sb) {
			t.Fatalf("batch %d: restored scores differ", i+3)
		}
		if a.Stats() != b.Stats() {
			t.Fatalf("batch %d: stats %+v vs %+v", i+3, a.Stats(), b.Stats())
		}
	}
	if !reflect.DeepEqual(a.State(), b.State()) {
		t.Fatal("states diverged")
	}
	delete(st.Weights, pEncW)
	if err := b.Restore(st); err == nil {
		t.Error("state without the encoder accepted")
	}
}

// TestDroppedICMIsCollected: a model that was trained and then dropped is
// freed by the collector (a scoring server builds one per request). Its
// graph's instructions must not lead back to it through the tape machine:
// gorgonia's machine had a finalizer, and a cycle through an object with a
// finalizer is never freed.
func TestDroppedICMIsCollected(t *testing.T) {
	m := smallICM(t, 3, nil)
	m.Score(synthTransitions(8, m.d, m.a, rand.New(rand.NewPCG(9, 9))))
	if m.Stats().Updates != 1 || m.Err() != nil {
		t.Fatalf("updates %d err %v", m.Stats().Updates, m.Err())
	}
	gone := weak.Make(m)
	m = nil
	for range 10 { // a cycle through a finalizer would survive them all
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Fatal("a dropped ICM outlived 10 collections")
}
