//go:build race

package calibrate

// raceEnabled: the race detector slows the simulator about 16×, and
// replaying every reference run at full length would take a quarter of an
// hour; see shorten.
const raceEnabled = true
