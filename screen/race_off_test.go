//go:build !race

package screen

const raceOn = false
