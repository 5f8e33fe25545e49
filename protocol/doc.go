// Package protocol owns trl's wire format: the request and response
// envelopes of the two dialects (the TRL envelope of seed 001 and JSON-RPC
// 2.0), the method names and their parameter and result types, the error
// codes, and the Handler interface through which transports reach the
// method table.
//
// It knows nothing of sockets, sessions or processes, and uses only the
// standard library. A transport turns bytes into one message at a time and
// calls Decode; the method table sees a Request and answers with a Reply or
// an *Error; the transport writes the Encode* output back, one line per
// message.
package protocol
