package telemetry

import "runtime/metrics"

// runtimeUsage is the Go runtime's view of the process where /proc is not
// there: the CPU time it accounts for and the memory it has mapped.
func runtimeUsage() (cpuSeconds float64, rss uint64) {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindFloat64 {
		cpuSeconds = s[0].Value.Float64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		rss = s[1].Value.Uint64()
	}
	return cpuSeconds, rss
}
