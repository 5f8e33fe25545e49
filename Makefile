# trl — the terminal runtime layer. `make run` starts the daemon on the
# default socket (/tmp/trl-default.sock), or on $TRL_SOCKET when it is set,
# or on /tmp/trl-NAME.sock with `make run INSTANCE=NAME`; `make test` runs
# every test; `make install` puts trl, its version stamped, on PATH.

GO      ?= go
BIN     ?= bin/trl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/trl-project/trl/runtime.Version=$(VERSION)

.PHONY: all build run install test test-short check vet fmt fuzz bench clean lint-deploy deploy-manifests mcp-inspector

all: vet test

# The daemon is built static (CGO_ENABLED=0), as the container image is:
# trl needs nothing from libc (the pure-Go resolver and user lookup do),
# and not mapping libc keeps 1.5 MiB off the idle daemon's RSS. Tests
# keep cgo: -race needs it.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/trl

# INSTANCE=NAME serves /tmp/trl-NAME.sock; without it `trl serve` takes
# $TRL_SOCKET (the variable `trl call` and the Python client read), else
# the default instance.
INSTANCE ?=
run: build
	$(BIN) serve $(if $(INSTANCE),--instance $(INSTANCE))

# install puts trl in $(go env GOBIN), else $(go env GOPATH)/bin, which
# should be on PATH (the MCP configs run `trl mcp`).
install:
	CGO_ENABLED=0 $(GO) install -ldflags "$(LDFLAGS)" ./cmd/trl
	@echo "installed $$(GOBIN=$$($(GO) env GOBIN); echo $${GOBIN:-$$($(GO) env GOPATH)/bin})/trl $(VERSION)"

# staticcheck, pinned, installed through the module proxy into bin/.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := bin/staticcheck-$(STATICCHECK_VERSION)

test: check
	$(GO) test -race -count=1 -timeout 15m ./...

test-short:
	$(GO) test -race -short -count=1 -timeout 5m ./...

# check is the hygiene CI runs before the tests: vet, gofmt, a tidy
# go.mod, staticcheck.
check: vet $(STATICCHECK)
	$(GO) mod tidy -diff
	./$(STATICCHECK) ./...

$(STATICCHECK):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/.staticcheck/staticcheck $@ && rmdir bin/.staticcheck

# The npm MCP inspector CLI, pinned by test/mcp's lockfile, for cmd/trl's
# TestMCPInspector (which skips, saying why, when it is not installed and
# npm cannot install it).
mcp-inspector:
	@if ! command -v npm >/dev/null 2>&1; then echo "npm is not installed: TestMCPInspector will be skipped"; \
	elif [ -x test/mcp/node_modules/.bin/mcp-inspector ]; then echo "the MCP inspector is installed"; \
	else cd test/mcp && npm ci --no-audit --no-fund || echo "npm could not install the MCP inspector: TestMCPInspector will be skipped"; fi

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
	$(GO) test -run XXX -fuzz FuzzDuplicateKey -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run XXX -fuzz FuzzOutputEncoding -fuzztime $(FUZZTIME) ./protocol
	$(GO) test -run XXX -fuzz FuzzFramer -fuzztime $(FUZZTIME) ./transport
	$(GO) test -run XXX -fuzz FuzzParseRequest -fuzztime $(FUZZTIME) ./gateway

bench: build
	$(BIN) bench

# Deployment checks: helm (pinned, built through the Go module proxy into
# bin/tools) lints the chart and renders it; the rendered manifests in
# deploy/kubernetes must match; the image is built where a Docker engine runs.
HELM_VERSION ?= v3.19.0
TOOLS        := $(CURDIR)/bin/tools
HELM         := $(TOOLS)/helm-$(HELM_VERSION)
CHART        := deploy/helm/trl

$(HELM):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(TOOLS)/helm $(HELM)

lint-deploy: $(HELM)
	$(HELM) lint --strict $(CHART) --set auth.token=lint
	$(HELM) template trl $(CHART) --set auth.token=lint >/dev/null
	$(HELM) lint --strict $(CHART) --set auth.token=lint --set isolation.enabled=true
	@! $(HELM) template trl $(CHART) >/dev/null 2>&1 || { echo "the chart rendered without a token; it must refuse"; exit 1; }
	@$(MAKE) --no-print-directory deploy-manifests MANIFESTS=bin/trl-manifests.yaml MANIFESTS_ISOLATED=bin/trl-isolated-manifests.yaml
	@diff -u deploy/kubernetes/trl.yaml bin/trl-manifests.yaml || { echo "deploy/kubernetes/trl.yaml is stale: run make deploy-manifests"; exit 1; }
	@diff -u deploy/kubernetes/trl-isolated.yaml bin/trl-isolated-manifests.yaml || { echo "deploy/kubernetes/trl-isolated.yaml is stale: run make deploy-manifests"; exit 1; }
	@if docker info >/dev/null 2>&1; then \
	  docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t trl:ci . ; \
	else echo "lint-deploy: no Docker engine here (docker info failed): skipping docker build"; fi

# deploy/kubernetes: the chart rendered twice, a pod per sandbox (no
# capabilities) and one pod for many tenants with --isolate; see
# deploy/README.md, "Which variant".
MANIFESTS ?= deploy/kubernetes/trl.yaml
MANIFESTS_ISOLATED ?= deploy/kubernetes/trl-isolated.yaml
deploy-manifests: $(HELM)
	@mkdir -p $(dir $(MANIFESTS)) $(dir $(MANIFESTS_ISOLATED))
	{ echo "# Rendered from deploy/helm/trl by \`make deploy-manifests\`; do not edit (make lint-deploy checks it)."; \
	  echo "# A pod per sandbox, no capabilities. First: kubectl create secret generic trl-token --from-literal=token=\"\$$(openssl rand -hex 32)\""; \
	  $(HELM) template trl $(CHART) --set auth.existingSecret=trl-token; } > $(MANIFESTS)
	{ echo "# Rendered from deploy/helm/trl by \`make deploy-manifests\` with isolation.enabled=true; do not edit (make lint-deploy checks it)."; \
	  echo "# Many tenants per pod, sessions under their own uids (--isolate). First: kubectl create secret generic trl-token --from-literal=token=\"\$$(openssl rand -hex 32)\""; \
	  $(HELM) template trl $(CHART) --set auth.existingSecret=trl-token --set isolation.enabled=true; } > $(MANIFESTS_ISOLATED)

clean:
	rm -rf bin
