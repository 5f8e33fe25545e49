// Package clients holds trl's client libraries in languages other than Go
// (clients/python). Its tests build the daemon, start it on a temporary
// socket and HTTP port, and run each client's own test suite against it,
// so `make test` checks the clients against the real wire protocol.
package clients
