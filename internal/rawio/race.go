//go:build race

package rawio

import (
	"runtime"
	"unsafe"
)

// ioSync is what the race detector orders I/O by, as package syscall's
// own read and write do: a write happens before the read of what it wrote.
var ioSync int64

// raceRead tells the race detector that a read filled p.
func raceRead(p []byte) {
	if len(p) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p))
	}
	runtime.RaceAcquire(unsafe.Pointer(&ioSync))
}

// raceWrote tells the race detector that a write takes p.
func raceWrote(p []byte) {
	runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync))
	if len(p) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p))
	}
}
