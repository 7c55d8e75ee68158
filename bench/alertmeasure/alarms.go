package main

import (
	"fmt"
	"sort"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// alarmCount is what the detectors said on runs that were not failing: every
// fire there is a false alarm.
type alarmCount struct {
	Runs  int
	Steps int            // steps watched: RFT records of pixelis's runs, every record of a log
	Span  int            // steps the logs cover (a log written every k steps covers k per record)
	Fires map[string]int // fires per detector
	Where []string       // run, detector and step of each fire
}

func newAlarmCount() *alarmCount { return &alarmCount{Fires: map[string]int{}} }

// Total is the fires of every detector.
func (c *alarmCount) Total() int {
	n := 0
	for _, v := range c.Fires {
		n += v
	}
	return n
}

// addRun replays cfg over one healthy run as it ran (every phase, in order)
// and counts the fires in the phase watched: RFT for pixelis's own runs ("" =
// every record, for the logs of other trainers).
func (c *alarmCount) addRun(r run, cfg configs.Alerts, watched telemetry.Phase) {
	recs := r.Records
	if watched != "" {
		recs = phaseRecords(r.Records, watched)
	}
	if len(recs) == 0 {
		return
	}
	c.Runs++
	c.Steps += len(recs)
	c.Span += recs[len(recs)-1].Step - recs[0].Step + 1
	for _, a := range replay(r, cfg) {
		if a.State != alerts.StateFire || (watched != "" && a.Phase != watched) {
			continue
		}
		c.Fires[a.Detector]++
		c.Where = append(c.Where, fmt.Sprintf("%s: %s at step %d (%s)", r.Name, a.Detector, a.Step, a.Detail))
	}
}

// detectorsFired names the detectors that fired, in name order.
func (c *alarmCount) detectorsFired() []string {
	var names []string
	for k := range c.Fires {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// countAlarms replays cfg over every run and adds up their false alarms.
func countAlarms(runs []run, cfg configs.Alerts, watched telemetry.Phase) *alarmCount {
	c := newAlarmCount()
	for _, r := range runs {
		c.addRun(r, cfg, watched)
	}
	return c
}

// rate is fires per 10,000 steps with its one-sided 95 % upper bound.
func rate(fires, steps int) (perTenK, upperPerTenK float64) {
	if steps == 0 {
		return 0, 0
	}
	return float64(fires) / float64(steps) * 1e4, upperBound95(fires) / float64(steps) * 1e4
}
