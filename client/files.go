package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/trl-project/trl/protocol"
)

// The file methods' wire types (docs/files.md).
type (
	FSReadParams   = protocol.FSReadParams
	FSReadResult   = protocol.FSReadResult
	FSWriteParams  = protocol.FSWriteParams
	FSWriteResult  = protocol.FSWriteResult
	FSEditParams   = protocol.FSEditParams
	FSEditResult   = protocol.FSEditResult
	FSListParams   = protocol.FSListParams
	FSListResult   = protocol.FSListResult
	FSEntry        = protocol.FSEntry
	FSMoveResult   = protocol.FSMoveResult
	FSRemoveResult = protocol.FSRemoveResult
)

// Sentinels of the file methods' codes, for errors.Is.
var (
	ErrFileNotFound     = &Error{Code: string(protocol.CodeFileNotFound)}
	ErrPermissionDenied = &Error{Code: string(protocol.CodePermissionDenied)}
	ErrConflict         = &Error{Code: string(protocol.CodeConflict)}
	ErrIsADirectory     = &Error{Code: string(protocol.CodeIsADirectory)}
	ErrNotADirectory    = &Error{Code: string(protocol.CodeNotADirectory)}
	ErrOutsideRoot      = &Error{Code: string(protocol.CodeOutsideRoot)}
)

// ReadFile reads one chunk of a file (fs.read).
func (c *Client) ReadFile(ctx context.Context, p FSReadParams) (*FSReadResult, error) {
	var r FSReadResult
	return &r, c.Call(ctx, protocol.MethodFSRead, p, &r)
}

// WriteFile writes a file (fs.write); atomic unless p.Append.
func (c *Client) WriteFile(ctx context.Context, p FSWriteParams) (*FSWriteResult, error) {
	var r FSWriteResult
	return &r, c.Call(ctx, protocol.MethodFSWrite, p, &r)
}

// EditFile replaces exact text in a file (fs.edit).
func (c *Client) EditFile(ctx context.Context, p FSEditParams) (*FSEditResult, error) {
	var r FSEditResult
	return &r, c.Call(ctx, protocol.MethodFSEdit, p, &r)
}

// ListDir lists a directory tree (fs.list).
func (c *Client) ListDir(ctx context.Context, p FSListParams) (*FSListResult, error) {
	var r FSListResult
	return &r, c.Call(ctx, protocol.MethodFSList, p, &r)
}

// session_id is left out when session is "": the default session.
func fsParams(session string, kv ...any) map[string]any {
	m := map[string]any{}
	if session != "" {
		m["session_id"] = session
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// Stat describes a file (fs.stat).
func (c *Client) Stat(ctx context.Context, session, path string) (*FSEntry, error) {
	var r FSEntry
	return &r, c.Call(ctx, protocol.MethodFSStat, fsParams(session, "path", path), &r)
}

// Mkdir makes a directory (fs.mkdir), with parents every missing parent.
func (c *Client) Mkdir(ctx context.Context, session, path string, parents bool) error {
	return c.Call(ctx, protocol.MethodFSMkdir, fsParams(session, "path", path, "parents", parents), nil)
}

// Remove removes a file or directory (fs.remove).
func (c *Client) Remove(ctx context.Context, session, path string, recursive bool) (*FSRemoveResult, error) {
	var r FSRemoveResult
	return &r, c.Call(ctx, protocol.MethodFSRemove, fsParams(session, "path", path, "recursive", recursive), &r)
}

// Move renames a file or directory (fs.move).
func (c *Client) Move(ctx context.Context, session, from, to string, overwrite bool) (*FSMoveResult, error) {
	var r FSMoveResult
	return &r, c.Call(ctx, protocol.MethodFSMove, fsParams(session, "from", from, "to", to, "overwrite", overwrite), &r)
}

// chunk is the size of the pieces Upload and Download move over the
// socket, where there is no streaming endpoint.
const chunk = 1 << 20

// Upload copies the local file local to remote in session ("": the
// default) and answers what the daemon wrote. Over HTTP it is one
// streamed PUT /files. Over the socket it writes the file in pieces to a
// temporary name next to remote and moves it into place at the end, so
// the upload is atomic either way. mode is octal text ("": 0644 for a new
// file).
func (c *Client) Upload(ctx context.Context, session, local, remote, mode string) (*FSWriteResult, error) {
	f, err := os.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if h, ok := c.c.(*httpCaller); ok {
		return h.put(ctx, session, remote, mode, f)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := remote + ".trl-upload-" + hex.EncodeToString(rnd[:]) // two uploads never share one
	sum := sha256.New()
	buf := make([]byte, chunk)
	first := true
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 || first {
			sum.Write(buf[:n])
			data := base64.StdEncoding.EncodeToString(buf[:n])
			p := FSWriteParams{SessionID: session, Path: tmp, Data: &data, Encoding: protocol.EncodingBase64, Append: !first, Mode: mode}
			if _, werr := c.WriteFile(ctx, p); werr != nil {
				c.Remove(ctx, session, tmp, false)
				return nil, werr
			}
			first = false
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			c.Remove(ctx, session, tmp, false)
			return nil, err
		}
	}
	st, err := c.Stat(ctx, session, tmp)
	if err != nil {
		return nil, err
	}
	mv, err := c.Move(ctx, session, tmp, remote, true)
	if err != nil {
		c.Remove(ctx, session, tmp, false)
		return nil, err
	}
	return &FSWriteResult{Path: mv.To, Size: st.Size, SHA256: hex.EncodeToString(sum.Sum(nil))}, nil
}

// Download copies remote in session to the local file local (replaced
// atomically) and answers how many bytes it wrote. Over HTTP it is one
// streamed GET /files; over the socket, fs.read chunk by chunk.
func (c *Client) Download(ctx context.Context, session, remote, local string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	var n int64
	if h, ok := c.c.(*httpCaller); ok {
		if n, err = h.get(ctx, session, remote, tmp); err != nil {
			return 0, err
		}
	} else {
		for {
			r, err := c.ReadFile(ctx, FSReadParams{SessionID: session, Path: remote, Offset: n, Length: 4 * chunk, Encoding: protocol.EncodingBase64})
			if err != nil {
				return 0, err
			}
			b, err := base64.StdEncoding.DecodeString(r.Data)
			if err != nil {
				return 0, err
			}
			if _, err := tmp.Write(b); err != nil {
				return 0, err
			}
			n += int64(len(b))
			if r.Complete {
				break
			}
			if len(b) == 0 {
				return 0, fmt.Errorf("trl client: %s shrank while it was read", remote)
			}
		}
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), local)
}

// filesURL is the /files URL of path in session.
func (h *httpCaller) filesURL(session, path string, extra ...string) string {
	q := url.Values{"path": {path}}
	if session != "" {
		q.Set("session", session)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] != "" {
			q.Set(extra[i], extra[i+1])
		}
	}
	return strings.TrimSuffix(h.url, "/rpc") + "/files?" + q.Encode()
}

func (h *httpCaller) put(ctx context.Context, session, remote, mode string, f *os.File) (*FSWriteResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, h.filesURL(session, remote, "mode", mode), f)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil {
		req.ContentLength = st.Size()
	}
	resp, err := h.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m struct {
		Data FSWriteResult `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("trl client: unreadable answer to PUT /files: %w", err)
	}
	return &m.Data, nil
}

func (h *httpCaller) get(ctx context.Context, session, remote string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.filesURL(session, remote), nil)
	if err != nil {
		return 0, err
	}
	resp, err := h.do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}

// do sends a /files request with the token and turns an error answer
// into an *Error.
func (h *httpCaller) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	var m struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m) != nil || m.Error.Code == "" {
		return nil, &Error{Code: string(protocol.CodeInternal), Message: fmt.Sprintf("%s /files answered %s", req.Method, resp.Status)}
	}
	return nil, &Error{Code: m.Error.Code, Message: m.Error.Message}
}
