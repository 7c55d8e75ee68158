//go:build !linux

package telemetry

func processUsage() (float64, uint64) { return runtimeUsage() }
