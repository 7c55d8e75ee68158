//go:build race

package crash

// raceEnabled: the race detector maps its shadow memory first, so an
// address-space limit ends the process with its own fatal error.
const raceEnabled = true
