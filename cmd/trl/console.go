package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// consoleCmd asks a daemon serving the web console (--http ADDR
// --console) for a one-time login URL and prints it. The daemon's token
// comes from TRL_AUTH_TOKEN; the URL is good once, for five minutes. With
// --approver it asks with TRL_APPROVER_TOKEN instead, and the URL's
// console may approve or deny the commands the policy holds.
func consoleCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trl console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("http", "http://127.0.0.1:8765", "the daemon's HTTP address")
	approver := fs.Bool("approver", false, "ask with TRL_APPROVER_TOKEN: the console may approve commands (needs --console-approve on the daemon)")
	setUsage(fs, "trl console [--http URL] [--approver]   print a one-time login URL for the web console")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if !noArgs(fs, stderr) {
		return 2
	}
	name := "TRL_AUTH_TOKEN"
	if *approver {
		name = "TRL_APPROVER_TOKEN"
	}
	token := os.Getenv(name)
	if token == "" {
		fmt.Fprintf(stderr, "trl console: set %s to the daemon's token\n", name)
		return 2
	}
	u := *base
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(u, "/")+"/console/api/login-url", nil)
	if err != nil {
		fmt.Fprintln(stderr, "trl console:", err)
		return 2
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "trl console: no daemon answers at %s (%v): pass the address of a daemon started with `trl serve --http ADDR --console` as --http ADDR\n", u, err)
		return 1
	}
	defer resp.Body.Close()
	var out struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&out)
	if resp.StatusCode != http.StatusOK || out.URL == "" {
		msg := out.Error
		if msg == "" {
			msg = resp.Status + " (is the daemon serving --http with --console?)"
		}
		fmt.Fprintln(stderr, "trl console:", msg)
		return 1
	}
	fmt.Fprintln(stdout, out.URL)
	return 0
}
