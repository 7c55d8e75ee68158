package watch

import (
	"math"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

func entropyPoints(from, to int) []telemetry.Point {
	var out []telemetry.Point
	for s := from; s <= to; s++ {
		out = append(out, telemetry.Point{Step: s, Phase: telemetry.PhaseRFT,
			Metrics: map[string]float64{"policy/entropy": 0.7 * math.Exp(-float64(s)/25)}})
	}
	return out
}

func defaultAlerts(t *testing.T) configs.Alerts {
	t.Helper()
	cfg, err := configs.Resolve("", []string{"alerts.entropy_collapse.action=pause"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Alerts
}

func fires(evs []telemetry.Event) (n int, last telemetry.Event) {
	for _, e := range evs {
		if e.Kind == telemetry.EventAlert && e.Data["state"] == alerts.StateFire {
			n, last = n+1, e
		}
	}
	return n, last
}

// The detectors judge each step once, in step order, whatever order and
// however many updates bring them; a history read again (Reset) is judged
// again; and a watched run's alert takes no action, saying which it would have.
func TestAlertingJudgesEachStepOnce(t *testing.T) {
	pts := entropyPoints(1, 120)
	whole := &telemetry.Update{Points: pts}
	a := newAlerting(defaultAlerts(t))
	a.judge(whole)
	want, e := fires(whole.Events)
	if want == 0 {
		t.Fatal("a collapsing entropy fired nothing")
	}
	if e.Data["action"] != "warn" || e.PhaseStep != e.Step {
		t.Fatalf("watched alert %+v: want action warn at its own step", e)
	}
	if msg := e.Message; !strings.Contains(msg, "pause not taken: a watched run is read-only") {
		t.Fatalf("message %q does not say the configured action was not taken", msg)
	}

	b := newAlerting(defaultAlerts(t))
	var got int
	for i := 0; i < len(pts); i += 7 {
		chunk := append([]telemetry.Point(nil), pts[i:min(i+7, len(pts))]...)
		// Reversed within the update, and a step of the previous one again.
		for l, r := 0, len(chunk)-1; l < r; l, r = l+1, r-1 {
			chunk[l], chunk[r] = chunk[r], chunk[l]
		}
		if i > 0 {
			chunk = append(chunk, pts[i-1])
		}
		u := &telemetry.Update{Points: chunk}
		b.judge(u)
		n, _ := fires(u.Events)
		got += n
	}
	if got != want {
		t.Fatalf("in pieces, out of order: %d fires, want %d as in one update", got, want)
	}
	again := &telemetry.Update{Reset: true, Points: pts}
	b.judge(again)
	if n, _ := fires(again.Events); n != want {
		t.Fatalf("after a reset: %d fires, want %d", n, want)
	}
}
