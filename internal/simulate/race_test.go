//go:build race

package simulate

// raceEnabled: the race detector slows the simulator about 16×; the
// published fleet comparisons run without it.
const raceEnabled = true
