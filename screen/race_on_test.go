//go:build race

package screen

// raceOn: the race detector slows everything down about tenfold.
const raceOn = true
