package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// browser is a headless Chromium driven through the DevTools protocol:
// the tests read what the page shows (xterm.js's buffer, the DOM) as a
// person would see it, waiting on conditions rather than on a clock.
type browser struct {
	t    *testing.T
	conn *websocket.Conn
	ctx  context.Context

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpReply
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// chromium finds Debian's headless browser, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: the console's browser tests need it (apt-get install -y chromium)")
	return ""
}

// newBrowser starts Chromium with a blank page and attaches to the page.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--remote-debugging-port=0", "--user-data-dir="+dir, "--window-size=1100,800", "about:blank")
	cmd.Stdout, cmd.Stderr = nil, nil
	// Its own process group: the cleanup ends every Chromium process,
	// renderers too, before the profile directory is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for i := 0; i < 200 && syscall.Kill(-cmd.Process.Pid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})

	var port string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port, _, _ = strings.Cut(string(b), "\n")
		return port != ""
	}, 60*time.Second, 50*time.Millisecond, "chromium did not open its DevTools port")

	var pages []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		pages = nil
		if json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&pages) != nil {
			return false
		}
		for _, p := range pages {
			if p.Type == "page" {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)
	var wsURL string
	for _, p := range pages {
		if p.Type == "page" {
			wsURL = p.WS
			break
		}
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, wsURL, nil)
	require.NoError(t, err)
	conn.SetReadLimit(64 << 20)
	b := &browser{t: t, conn: conn, ctx: ctx, waiting: map[int]chan cdpReply{}}
	go b.read()
	t.Cleanup(func() { conn.CloseNow() })
	return b
}

// read hands each reply to its caller; events are not used.
func (b *browser) read() {
	for {
		_, p, err := b.conn.Read(b.ctx)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(p, &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one DevTools method and returns its result.
func (b *browser) call(method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser went away", method)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer", method)
	}
}

func (b *browser) navigate(url string) {
	b.t.Helper()
	_, err := b.call("Page.navigate", map[string]any{"url": url})
	require.NoError(b.t, err)
}

// eval runs expr in the page (awaiting a promise) and decodes its value
// into out.
func (b *browser) eval(expr string, out any) error {
	res, err := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("%s %s", r.Exception.Text, r.Exception.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// waitTrue waits until the boolean expression expr holds in the page.
func (b *browser) waitTrue(expr string, what string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		err := b.eval(expr, &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot saves the page as a PNG.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	res, err := b.call("Page.captureScreenshot", map[string]any{"format": "png"})
	require.NoError(b.t, err)
	var r struct {
		Data string `json:"data"`
	}
	require.NoError(b.t, json.Unmarshal(res, &r))
	png, err := base64.StdEncoding.DecodeString(r.Data)
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
}

// clip captures a rectangle of the page (CSS pixels) as an image.
func (b *browser) clip(x, y, w, h float64) image.Image {
	b.t.Helper()
	res, err := b.call("Page.captureScreenshot", map[string]any{"format": "png",
		"clip": map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": 1}})
	require.NoError(b.t, err)
	var r struct {
		Data string `json:"data"`
	}
	require.NoError(b.t, json.Unmarshal(res, &r))
	raw, err := base64.StdEncoding.DecodeString(r.Data)
	require.NoError(b.t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(b.t, err)
	return img
}

// rowsJS reads the rows an xterm.js terminal in the page shows (its
// buffer's last page, the screen), each as text with trailing blanks
// trimmed, spaces a program wrote too, as session.screen's text format
// has them. term is the expression that finds the terminal (null: not
// there yet).
func rowsJS(term string) string {
	return `(() => {
  const t = ` + term + `;
  if (!t) return null;
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < t.rows; i++) {
    const l = b.getLine(b.baseY + i);
    rows.push(l ? l.translateToString(true).replace(/ +$/, "") : "");
  }
  return rows;
})()`
}

// termRowsJS reads the live view's terminal.
var termRowsJS = rowsJS("viewer && viewer.term")
