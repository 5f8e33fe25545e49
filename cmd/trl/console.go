package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
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
	if code, ok := parseCommand(fs, args, stdout, stderr); !ok {
		return code
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
	resp, err := askDaemon(req)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// The address may well be right: `trl serve ... & trl console`
		// asks before the daemon listens.
		fmt.Fprintf(stderr, "trl console: no daemon answered at %s within %s (connection refused). Start one with `trl serve --http ADDR --console` (TRL_AUTH_TOKEN set); a daemon on another address is named with --http ADDR\n", u, consoleWait)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "trl console: no daemon answers at %s (%v): pass the address of a daemon started with `trl serve --http ADDR --console` as --http ADDR\n", u, err)
		return 1
	}
	defer resp.Body.Close()
	var out struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&out)
	switch {
	case resp.StatusCode == http.StatusUnauthorized && *approver:
		fmt.Fprintf(stderr, "trl console: the daemon at %s refused the token: TRL_APPROVER_TOKEN here does not match the TRL_APPROVER_TOKEN the daemon was started with, or the daemon was started without --console-approve\n", u)
		return 1
	case resp.StatusCode == http.StatusUnauthorized:
		fmt.Fprintf(stderr, "trl console: the daemon at %s refused the token: TRL_AUTH_TOKEN here does not match the TRL_AUTH_TOKEN the daemon was started with\n", u)
		return 1
	case resp.StatusCode != http.StatusOK || out.URL == "":
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

// consoleWait is how long `trl console` keeps asking while nothing
// listens at the address (a variable for tests).
var consoleWait = 5 * time.Second

// askDaemon sends req, again every 100 ms while the connection is
// refused, for up to consoleWait: a daemon started in the background
// just before (`trl serve ... & trl console`) may not listen yet.
func askDaemon(req *http.Request) (*http.Response, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(consoleWait)
	for {
		resp, err := client.Do(req)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			return resp, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
