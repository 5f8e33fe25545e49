package transport

import (
	"context"
	"io"

	"github.com/trl-project/trl/protocol"
)

// ServeStdio answers the requests read from r on w, one at a time in order:
// each request is finished, with all its notifications, before the next
// starts (SPEC §5), except an exec.input or exec.cancel naming an exec_id,
// handled as it is read (see ConnOptions.Sequential); at end of input,
// every request read is answered first. It returns nil at end of input or when ctx ends, and the
// read error otherwise. w is not closed: it belongs to the caller.
//
// A blocked Read can only be interrupted by closing, so when ctx ends r is
// closed if it is an io.Closer (os.Stdin is); otherwise ServeStdio returns
// once r's pending Read does.
func ServeStdio(ctx context.Context, r io.Reader, w io.Writer, h protocol.Handler, opts ConnOptions) error {
	opts.Sequential = true
	if opts.Transport == "" {
		opts.Transport = "stdio"
	}
	var closer func() error
	if c, ok := r.(io.Closer); ok {
		closer = c.Close
	}
	// No hangup watch: at end of input serve answers every request read
	// before it ends (Sequential).
	return serve(ctx, r, w, closer, nil, h, opts)
}
