//go:build !linux

package transport

import (
	"errors"
	"net"
)

// peerCred is only implemented with Linux's SO_PEERCRED; elsewhere every
// peer is refused unless UnixOptions.AllowAnyUID is set.
func peerCred(*net.UnixConn) (uid uint32, pid int32, err error) {
	return 0, 0, errors.New("peer credentials are not supported on this system")
}
