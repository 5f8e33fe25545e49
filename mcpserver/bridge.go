package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/trl-project/trl/protocol"
)

// Bridge is a protocol.Handler that forwards each call to a live daemon
// on its Unix socket (one connection per call, the JSON-RPC 2.0 dialect),
// so that the sessions an MCP client uses live in the daemon and outlive
// it. A call whose ctx ends closes its connection; the daemon then lets
// the command go on, as for any client that goes away.
type Bridge struct {
	Socket string
}

// Ping reports whether a daemon answers on the socket.
func (b Bridge) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := b.Handle(ctx, &protocol.Call{Method: protocol.MethodSystemPing})
	return err
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// Handle implements protocol.Handler.
func (b Bridge) Handle(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", b.Socket)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "cannot reach the trl daemon at %s: %v", b.Socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	params := call.Params
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": call.Method, "params": params})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "send to the trl daemon: %v", err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 512<<20)
	for sc.Scan() {
		var r rpcResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Method != "" {
			continue // a notification: the bridge does not stream
		}
		if r.Error != nil {
			var data struct {
				Code protocol.Code `json:"code"`
			}
			_ = json.Unmarshal(r.Error.Data, &data)
			if data.Code == "" {
				data.Code = protocol.CodeInternal
			}
			return nil, &protocol.Error{Code: data.Code, Message: r.Error.Message, Data: r.Error.Data}
		}
		return &protocol.Reply{Data: r.Result}, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, protocol.Errorf(protocol.CodeInternal, "the trl daemon closed the connection without an answer: %v", fmt.Sprint(sc.Err()))
}
