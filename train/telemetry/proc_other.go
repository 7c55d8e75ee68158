//go:build !linux

package telemetry

func processUsage() (float64, uint64) { return runtimeUsage() }

func usageOf(int) (float64, uint64) { return 0, 0 }
