package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Files measures the file methods (SPEC §15): fs.read of a 64 KiB source
// file over the socket beside `cat` of the same file through exec.run in
// the same run (what an agent does without fs.*), and GET /files of a big
// file beside this process reading it from the page cache.
type Files struct {
	Read64K     *Stats  `json:"fs_read_64k,omitempty"`
	Cat64K      *Stats  `json:"cat_64k,omitempty"`
	ReadOverCat float64 `json:"read_over_cat,omitempty"`
	// DownloadBytes is the big file's size; the rates are bytes per
	// second, the best of three runs each.
	//
	// The goal's comparison (HTTPOverDisk) is from disk on both sides:
	// before each timed read, this process or the daemon, the file is
	// dropped from the page cache (posix_fadvise DONTNEED on the written
	// and synced file). The warm rows beside it read the page cache on
	// both sides: there the bound is loopback TCP itself (TCPRate).
	DownloadBytes int64   `json:"download_bytes,omitempty"`
	HTTPRate      float64 `json:"http_download_bytes_per_s,omitempty"`
	DiskRate      float64 `json:"disk_read_bytes_per_s,omitempty"`
	HTTPOverDisk  float64 `json:"http_over_disk,omitempty"`
	WarmHTTPRate  float64 `json:"warm_http_download_bytes_per_s,omitempty"`
	CacheRate     float64 `json:"page_cache_read_bytes_per_s,omitempty"`
	WarmOverCache float64 `json:"warm_http_over_page_cache,omitempty"`
	// TCPRate is the floor under HTTPRate: this process sending the file
	// to itself over loopback TCP with sendfile(2) and reading it with the
	// same buffer, no HTTP and no daemon.
	TCPRate     float64 `json:"loopback_tcp_bytes_per_s,omitempty"`
	HTTPOverTCP float64 `json:"http_over_loopback_tcp,omitempty"`
	HTTPSkipped string  `json:"http_skipped,omitempty"`
	Error       string  `json:"error,omitempty"`
}

func (r *runner) files() *Files {
	out := &Files{}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()
	f, err := os.CreateTemp("", "trl-bench-fs-*.go")
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer os.Remove(f.Name())
	line := []byte("\tfmt.Fprintf(w, \"%s: %d bytes\\n\", name, n) // a line of source\n")
	src := bytes.Repeat(line, 64<<10/len(line)+1)[:64<<10]
	_, err = f.Write(src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	// Both rows read the answer's line without decoding it (as
	// decodeOutput does for streams): encoding/json would scan the 64 KiB
	// twice and measure this process more than the daemon. Each answer is
	// checked for success and its byte count.
	p := r.plan
	if r.opts.Quick { // proves the row runs: a few of each
		p.warm, p.latencyN = 5, 50
	}
	readLen := []byte(fmt.Sprintf(`,"length":%d,`, len(src)))
	reads, err := sample(p.warm, p.latencyN, func() error {
		line, err := c.rawCall("fs.read", map[string]any{"session_id": id, "path": f.Name()})
		if err == nil && !bytes.Contains(line, readLen) {
			err = fmt.Errorf("fs.read did not answer %d bytes: %.200q", len(src), line)
		}
		return err
	})
	if err != nil {
		out.Error = "fs.read: " + err.Error()
		return out
	}
	catLen := []byte(fmt.Sprintf(`,"stdout_bytes":%d,`, len(src)))
	cats, err := sample(p.warm, p.latencyN, func() error {
		line, err := c.rawCall("exec.run", map[string]any{"session_id": id, "command": "cat " + f.Name()})
		if err == nil && !bytes.Contains(line, catLen) {
			err = fmt.Errorf("cat did not write %d bytes: %.200q", len(src), line)
		}
		return err
	})
	if err != nil {
		out.Error = "exec.run cat: " + err.Error()
		return out
	}
	rs, cs := Summarize(reads), Summarize(cats)
	out.Read64K, out.Cat64K = &rs, &cs
	if cs.P50US > 0 {
		out.ReadOverCat = rs.P50US / cs.P50US
	}
	if r.httpSkip != "" || r.httpAddr == "" {
		out.HTTPSkipped = r.httpSkip
		if out.HTTPSkipped == "" {
			out.HTTPSkipped = "skipped: no HTTP address"
		}
		return out
	}
	if err := r.download(out, id); err != nil {
		out.Error = "GET /files: " + err.Error()
	}
	return out
}

// download measures GET /files of a big file against reading it here.
func (r *runner) download(out *Files, session string) error {
	size := int64(256 << 20)
	if r.opts.Quick {
		size = 8 << 20
	}
	f, err := os.CreateTemp("", "trl-bench-download-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for n := int64(0); n < size; n += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil { // clean pages can be dropped
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out.DownloadBytes = size
	buf := make([]byte, 1<<20)
	disk := func() (time.Duration, error) {
		start := time.Now()
		in, err := os.Open(f.Name())
		if err != nil {
			return 0, err
		}
		defer in.Close()
		n, err := io.CopyBuffer(io.Discard, onlyReader{in}, buf)
		if err == nil && n != size {
			err = fmt.Errorf("read %d bytes of %d", n, size)
		}
		return time.Since(start), err
	}
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()
	u := "http://" + r.httpAddr + "/files?" + url.Values{"session": {session}, "path": {f.Name()}}.Encode()
	get := func() (time.Duration, error) {
		start := time.Now()
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+r.token)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
		}
		n, err := io.CopyBuffer(io.Discard, onlyReader{resp.Body}, buf)
		if err == nil && n != size {
			err = fmt.Errorf("got %d bytes of %d", n, size)
		}
		return time.Since(start), err
	}
	best := func(fn func() (time.Duration, error)) (float64, error) {
		var min time.Duration
		for i := 0; i < 3; i++ {
			d, err := fn()
			if err != nil {
				return 0, err
			}
			if i == 0 || d < min {
				min = d
			}
		}
		return float64(size) / min.Seconds(), nil
	}
	cold := func(fn func() (time.Duration, error)) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			if err := dropCache(f.Name()); err != nil {
				return 0, err
			}
			return fn()
		}
	}
	if out.DiskRate, err = best(cold(disk)); err != nil {
		return err
	}
	if out.HTTPRate, err = best(cold(get)); err != nil {
		return err
	}
	out.HTTPOverDisk = out.HTTPRate / out.DiskRate
	if _, err := disk(); err != nil { // into the page cache
		return err
	}
	if out.CacheRate, err = best(disk); err != nil {
		return err
	}
	if out.WarmHTTPRate, err = best(get); err != nil {
		return err
	}
	out.WarmOverCache = out.WarmHTTPRate / out.CacheRate
	floor, err := loopbackTCP(f.Name(), size, buf)
	if err != nil {
		return fmt.Errorf("loopback TCP: %w", err)
	}
	defer floor.close()
	if out.TCPRate, err = best(floor.get); err != nil {
		return fmt.Errorf("loopback TCP: %w", err)
	}
	out.HTTPOverTCP = out.WarmHTTPRate / out.TCPRate
	return nil
}

// dropCache takes the (synced) file name out of the page cache, so that
// the next read of it comes from the disk.
func dropCache(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// tcpFloor serves one file over loopback TCP from this process, one
// connection at a time, as net/http sends a file: io.Copy from the
// *os.File, which is sendfile(2).
type tcpFloor struct {
	ln   net.Listener
	name string
	size int64
	buf  []byte
	done chan struct{} // closed when the accept loop has ended
}

func loopbackTCP(name string, size int64, buf []byte) (*tcpFloor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &tcpFloor{ln: ln, name: name, size: size, buf: buf, done: make(chan struct{})}
	go t.serve()
	return t, nil
}

func (t *tcpFloor) serve() {
	defer close(t.done)
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		if f, err := os.Open(t.name); err == nil {
			_, _ = io.Copy(c, f)
			f.Close()
		}
		c.Close()
	}
}

// get reads the whole file once over a new connection.
func (t *tcpFloor) get() (time.Duration, error) {
	start := time.Now()
	c, err := net.Dial("tcp", t.ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n, err := io.CopyBuffer(io.Discard, onlyReader{c}, t.buf)
	if err == nil && n != t.size {
		err = fmt.Errorf("got %d bytes of %d", n, t.size)
	}
	return time.Since(start), err
}

func (t *tcpFloor) close() {
	t.ln.Close()
	<-t.done
}

// rawCall sends a request in the TRL dialect and returns its answer's
// line undecoded, once it has checked that it is the successful answer
// to this request.
func (c *Conn) rawCall(method string, params any) ([]byte, error) {
	if c.jsonrpc {
		return nil, errors.New("rawCall speaks the TRL dialect only")
	}
	id, err := c.Send(method, params)
	if err != nil {
		return nil, err
	}
	c.line = c.line[:0]
	for {
		part, err := c.r.ReadSlice('\n')
		c.line = append(c.line, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if want := fmt.Sprintf(`{"id":%d,"ok":true,`, id); !bytes.HasPrefix(c.line, []byte(want)) {
		return nil, fmt.Errorf("%s: not the successful answer to request %d: %.200q", method, id, c.line)
	}
	return c.line, nil
}

// onlyReader hides WriterTo and ReaderFrom, so both copies go through the
// same user-space buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func filesTable(w io.Writer, f *Files) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "\nfiles (SPEC §15)\t\t\t\t\t\n")
	if f.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", f.Error)
	}
	if f.Read64K != nil && f.Cat64K != nil {
		fmt.Fprintf(w, "  fs.read of a 64 KiB file (n=%d)\tp50 %s\tp99 %s\t\t\t\n", f.Read64K.N, fmtUS(f.Read64K.P50US), fmtUS(f.Read64K.P99US))
		fmt.Fprintf(w, "  exec.run cat of the same file (n=%d)\tp50 %s\tp99 %s\t%.2f×\t\t\n", f.Cat64K.N, fmtUS(f.Cat64K.P50US), fmtUS(f.Cat64K.P99US), f.ReadOverCat)
	}
	if f.HTTPSkipped != "" {
		fmt.Fprintf(w, "  GET /files: %s\n", f.HTTPSkipped)
	}
	if f.HTTPRate > 0 {
		fmt.Fprintf(w, "  GET /files of %s from disk vs reading it from disk in this process\t%s/s\t%s/s\t%.2f×\t\t\n",
			fmtBytes(f.DownloadBytes), fmtBytes(int64(f.HTTPRate)), fmtBytes(int64(f.DiskRate)), f.HTTPOverDisk)
	}
	if f.WarmHTTPRate > 0 {
		fmt.Fprintf(w, "  GET /files from the page cache vs reading it from the page cache here\t%s/s\t%s/s\t%.2f×\t\t\n",
			fmtBytes(int64(f.WarmHTTPRate)), fmtBytes(int64(f.CacheRate)), f.WarmOverCache)
	}
	if f.TCPRate > 0 {
		fmt.Fprintf(w, "  GET /files from the page cache vs this process sending it to itself over loopback TCP (sendfile)\t%s/s\t%s/s\t%.2f×\t\t\n",
			fmtBytes(int64(f.WarmHTTPRate)), fmtBytes(int64(f.TCPRate)), f.HTTPOverTCP)
	}
}
