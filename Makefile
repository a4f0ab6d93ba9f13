# banyand — see README.md. Tools are pinned in tools/go.mod and
# tools/protoc/go.mod and run with `go tool`, so nothing needs installing.
GO        ?= go
BUF       := $(GO) tool -modfile=tools/go.mod buf
LINT      := $(GO) tool -modfile=tools/go.mod golangci-lint
PKGS      := ./...
TEST_FLAGS ?= -race -timeout 15m

.PHONY: all generate build test test-faults fuzz lint verify run clean

all: build

## generate: regenerate Go code from the protos (and any other generated files)
generate:
	$(BUF) generate
	$(GO) generate $(PKGS)

## build: compile everything and produce bin/banyand
build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/banyand ./cmd/banyand

## test: vet and race-enabled tests of the whole module
test:
	$(GO) vet $(PKGS)
	$(GO) test $(TEST_FLAGS) $(PKGS)

## test-faults: fault suite with real processes (needs etcd on PATH); see docs/design/faults.md
test-faults:
	$(GO) test -tags faults -race=false -count=1 -timeout 10m -v ./test/faults/

## fuzz: run every fuzz target for FUZZTIME each (-fuzz takes one target per
## package, so one invocation per target); fails if a Fuzz function is not listed
FUZZTIME ?= 20s
FUZZ_TARGETS := \
	./pkg/route:FuzzSeriesKey \
	./pkg/route:FuzzSeriesKeyRoundTrip \
	./pkg/queue/sub:FuzzDecodeStreamRequest \
	./pkg/wire:FuzzParseStreamRequest \
	./pkg/wire:FuzzParseMeasureRequest \
	./pkg/wire:FuzzParseStreamWrite \
	./pkg/wire:FuzzParseMeasureWrite \
	./pkg/wire:FuzzParseTraceRequest \
	./pkg/wire:FuzzParseTraceWrite \
	./pkg/tagindex:FuzzParseSpec \
	./banyand/storage/tsdb:FuzzReplayLog \
	./banyand/liaison:FuzzStreamWriteValidation \
	./banyand/liaison:FuzzMeasureWriteValidation \
	./banyand/liaison:FuzzTraceWriteValidation
fuzz:
	@listed=$$(echo $(FUZZ_TARGETS) | tr ' ' '\n' | sed 's/.*://' | sort); \
	found=$$(grep -rhoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | sed 's/^func //' | sort); \
	if [ "$$listed" != "$$found" ]; then echo "fuzz: FUZZ_TARGETS does not list exactly the Fuzz functions:"; \
		echo "listed: "$$listed; echo "found:  "$$found; exit 1; fi
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t##*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

## lint: golangci-lint plus the layering rules
lint:
	$(LINT) run $(PKGS)
	./scripts/check-layering.sh

## verify: regenerate and fail if anything generated is out of date
verify: generate
	@if [ -n "$$(git status --porcelain -- api docs)" ]; then \
		echo "generated files are out of date; run 'make generate' and commit:"; \
		git status --porcelain -- api docs; git --no-pager diff --stat -- api docs; exit 1; \
	fi
	$(GO) mod tidy -diff

## run: start banyand standalone with embedded defaults
run:
	$(GO) run ./cmd/banyand standalone

clean:
	rm -rf bin
