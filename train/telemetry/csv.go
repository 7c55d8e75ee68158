package telemetry

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// ExportCSV writes the run's metrics.jsonl as a wide CSV: a header of step, phase and
// every metric name sorted, then one row per step (and phase) in the order the run
// recorded them. A metric missing at a step is an empty cell; a non-finite value
// (stored as null) is "NaN". Points recorded twice for the same step and phase are
// merged, later values winning. A final partial line is ignored.
func ExportCSV(runDir string, w io.Writer) error {
	path := filepath.Join(runDir, MetricsFile)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("export csv: %w", err)
	}
	defer f.Close()

	type key struct {
		step  int
		phase Phase
	}
	var rows []Point
	index := map[key]int{}
	names := map[string]bool{}
	var bad int
	err = scanLines(f, func(line []byte) bool {
		var p Point
		if err := json.Unmarshal(line, &p); err != nil {
			bad++
			return true
		}
		for name := range p.Metrics {
			names[name] = true
		}
		k := key{p.Step, p.Phase}
		if i, ok := index[k]; ok {
			for name, v := range p.Metrics {
				if rows[i].Metrics == nil {
					rows[i].Metrics = map[string]float64{}
				}
				rows[i].Metrics[name] = v
			}
			return true
		}
		index[k] = len(rows)
		rows = append(rows, p)
		return true
	}, nil)
	if err != nil {
		return fmt.Errorf("export csv: read %s: %w", path, err)
	}
	if bad > 0 && len(rows) == 0 {
		return fmt.Errorf("export csv: %s: none of %d lines is a metrics point", path, bad)
	}

	cols := make([]string, 0, len(names))
	for name := range names {
		cols = append(cols, name)
	}
	slices.Sort(cols)

	if err := writeCSV(w, rows, cols); err != nil {
		return fmt.Errorf("export csv: %w", err)
	}
	return nil
}

// writeCSV writes a header of step, phase and cols, then one record per point: a metric the point
// lacks is an empty cell.
func writeCSV(w io.Writer, rows []Point, cols []string) error {
	cw := csv.NewWriter(w)
	record := append([]string{"step", "phase"}, cols...)
	if err := cw.Write(record); err != nil {
		return err
	}
	for _, p := range rows {
		record = record[:0]
		record = append(record, strconv.Itoa(p.Step), string(p.Phase))
		for _, name := range cols {
			v, ok := p.Metrics[name]
			record = append(record, csvCell(v, ok))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvCell is one metric's cell: empty when absent, NaN spelled out, otherwise the shortest exact
// decimal.
func csvCell(v float64, ok bool) string {
	switch {
	case !ok:
		return ""
	case math.IsNaN(v):
		return "NaN"
	default:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
}
