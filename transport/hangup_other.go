//go:build !linux

package transport

import "net"

// watchHangup is only implemented on Linux; elsewhere end of input on a
// unix connection means the client left, as it did before half-closed
// connections were served to the end.
func watchHangup(*net.UnixConn) (gone <-chan struct{}, stop func(), ok bool) {
	return nil, nil, false
}
