package watch

import (
	"slices"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// watchAction is the only action a watched run's alerts take: nothing can be
// commanded, so every detector warns, whatever action [alerts] gives it.
const watchAction = "warn"

// alerting runs the detectors (train/alerts) over the points a watched run's
// feed yields, in step order, and adds their alerts to the same update as
// events. A history read again from the start (Update.Reset: the full
// reading of a long log after the glance at it, a rewritten log) is judged
// again from the start. The stall rule judges the gaps between the log's
// own timestamps as each record is read (alerts.Set.ObserveLogged), never
// the watcher's clock: a log that stops being written shows as idle.
type alerting struct {
	cfg   configs.Alerts
	set   *alerts.Set
	last  int  // the newest step judged
	began bool // a step was judged since the set was made
}

func newAlerting(cfg configs.Alerts) *alerting {
	return &alerting{cfg: cfg, set: alerts.New(cfg)}
}

// judge feeds u's points newer than those judged to the detectors and
// appends the alerts they decide to u's events.
func (a *alerting) judge(u *telemetry.Update) {
	if u.Reset {
		a.set, a.began = alerts.New(a.cfg), false
	}
	points := slices.Clone(u.Points)
	slices.SortStableFunc(points, func(x, y telemetry.Point) int { return x.Step - y.Step })
	for _, p := range points {
		if a.began && p.Step <= a.last {
			continue // a late value of a step already judged
		}
		a.last, a.began = p.Step, true
		rec := alerts.FromPoint(p)
		for _, al := range a.set.ObserveLogged(rec) {
			u.Events = append(u.Events, watchEvent(al, rec))
		}
	}
}

// watchEvent is al as a watched run's event: warn only, saying so when
// [alerts] gives the detector another action.
func watchEvent(al alerts.Alert, rec alerts.Record) telemetry.Event {
	if al.Action != watchAction && al.State == alerts.StateFire {
		al.Detail += " [" + al.ActionText() + " not taken: a watched run is read-only]"
	}
	al.Action, al.Weight, al.Amount = watchAction, "", 0
	e := al.Event()
	e.Time = rec.Time
	e.PhaseStep = al.Step // a watched run has one phase: its steps are the trainer's own
	return e
}
