# Sandbar — see README.md. `make run` and `make test` install what they need.
SHELL := /bin/bash
.DEFAULT_GOAL := build

GO        ?= go
GOOS      := $(shell $(GO) env GOOS)
GOARCH    := $(shell $(GO) env GOARCH)
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
INIT_BIN  := guest/initbin/bin/sandbar-init
GUEST_SRC := $(shell find guest -name '*.go' -not -name '*_test.go' 2>/dev/null)
# Tests keep their data in temp dirs but share the built guest image.
IMAGE_DIR  = $(shell bin/sandbar image path)
TEST_FLAGS ?= -race -count=1 -timeout 60m

.PHONY: build run test test-short bench image lint clean deps go-deps init package

deps: ## install missing system packages (Debian/Ubuntu: apt; macOS: nothing needed)
	@scripts/install-deps.sh

go-deps:
	@echo "==> downloading Go modules"
	@$(GO) mod download

$(INIT_BIN): $(GUEST_SRC) go.mod
	@echo "==> building guest init (linux/$(GOARCH), static)"
	@CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags='-s -w' -o $@ ./guest/cmd/sandbar-init

init: $(INIT_BIN)

build: go-deps $(INIT_BIN) ## build bin/sandbar
	@echo "==> building bin/sandbar $(VERSION)"
	@$(GO) build -ldflags '$(LDFLAGS)' -o bin/sandbar .
	@if [ "$(GOOS)" = darwin ]; then packaging/codesign.sh bin/sandbar; fi

image: build ## build the guest image (cached; rebuilds only when inputs change)
	@echo "==> guest image"
	@bin/sandbar image build

run: deps image ## run Sandbar
	@echo "==> starting sandbar"
	@bin/sandbar

# The fyne CLI that builds the macOS bundle, at the release that matches
# the fyne.io/fyne/v2 in go.mod; installed into bin/tools when missing.
FYNE_TOOLS := v1.7.4
FYNE       := bin/tools/fyne

package: build ## Linux: dist/sandbar-VERSION-linux-ARCH.tar.gz; macOS: dist/Sandbar.app, signed
	@if [ "$(GOOS)" = darwin ]; then \
		if [ ! -x $(FYNE) ]; then \
			echo "==> installing the fyne CLI $(FYNE_TOOLS) into bin/tools"; \
			GOBIN="$(CURDIR)/bin/tools" $(GO) install fyne.io/tools/cmd/fyne@$(FYNE_TOOLS); \
		fi; \
		echo "==> packaging Sandbar.app $(VERSION)"; \
		PATH="$(CURDIR)/bin/tools:$$PATH" GOFLAGS="-ldflags=-X=main.version=$(VERSION)" packaging/package-macos.sh dist; \
	else \
		echo "==> packaging sandbar $(VERSION) for linux/$(GOARCH)"; \
		packaging/package-linux.sh bin/sandbar "$(VERSION)" $(GOARCH) dist; \
	fi

lint: ## gofmt, go vet, darwin type-check
	@echo "==> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-clean:"; echo "$$out"; exit 1; fi
	@echo "==> go vet"
	@$(GO) vet ./...
	@echo "==> darwin type-check"
	@$(GO) run ./tests/darwincheck ./...

# ./tests/ is named first: its real-VM tests are most of the run, and go
# test starts packages in the order named, so the others run beside it.
test: deps image lint ## everything: unit, integration with real VMs, darwin type-check
	@echo "==> go test (image in $(IMAGE_DIR))"
	@SANDBAR_IMAGE_DIR="$(IMAGE_DIR)" $(GO) test $(TEST_FLAGS) ./tests/ ./...

test-short: $(INIT_BIN) ## quick loop: no real VMs, no network
	@$(GO) test -short -race -count=1 ./...

bench: deps image ## benchmarks; prints figures (medians, ratios)
	@SANDBAR_IMAGE_DIR="$(IMAGE_DIR)" $(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -timeout 30m ./...

clean:
	rm -rf bin dist $(INIT_BIN)
