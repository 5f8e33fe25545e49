# trl — the terminal runtime layer. `make run` starts the daemon on the
# default socket (/tmp/trl-default.sock); `make test` runs every test.

GO      ?= go
BIN     ?= bin/trl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/trl-project/trl/runtime.Version=$(VERSION)

.PHONY: all build run test test-short vet fmt fuzz bench clean

all: vet test

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/trl

run: build
	./$(BIN) serve

test:
	$(GO) test -race -count=1 -timeout 15m ./...

test-short:
	$(GO) test -race -short -count=1 -timeout 5m ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }

fmt:
	gofmt -w .

# Fuzz each decoder for a while (the seed corpora run in `make test`).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run XXX -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run XXX -fuzz FuzzDecodeParams -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run XXX -fuzz FuzzOutputEncoding -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run XXX -fuzz FuzzFramer -fuzztime $(FUZZTIME) ./transport
	$(GO) test -run XXX -fuzz FuzzParseRequest -fuzztime $(FUZZTIME) ./gateway

bench: build
	./$(BIN) bench

clean:
	rm -rf bin
