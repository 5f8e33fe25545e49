package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// callHTTP is `trl call --http URL`: it POSTs the request to URL/rpc with
// the token from TRL_AUTH_TOKEN and prints the response (and a stream's
// notifications) as the socket client does.
func callHTTP(base string, timeout time.Duration, method string, params json.RawMessage, stdout, stderr io.Writer) int {
	token := os.Getenv("TRL_AUTH_TOKEN")
	if token == "" {
		fmt.Fprintln(stderr, "trl call: --http needs the daemon's token in TRL_AUTH_TOKEN")
		return 2
	}
	url := strings.TrimRight(base, "/")
	if !strings.HasSuffix(url, "/rpc") {
		url += "/rpc"
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	body, _ := json.Marshal(map[string]any{"id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "trl call: bad --http URL %q: %v\n", base, err)
		return 2
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "trl call: cannot reach a daemon at %s: %v (start one with `trl serve --http ADDR`)\n", url, err)
		return 1
	}
	defer resp.Body.Close()
	code := printResponses(bufio.NewReaderSize(resp.Body, 64<<10), stdout, stderr)
	if code == 0 && resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "trl call: HTTP %s\n", resp.Status)
		return 1
	}
	return code
}
