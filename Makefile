# trove: the two set-up commands on a fresh machine are `make demo` and `make test`.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.8.2
export TROVE_AZURITE ?= $(TOOLS)/azurite/node_modules/.bin/azurite-blob

.PHONY: demo deps install test unit conformance bench bench-search bench-append bench-checkpoint bench-checkpoint-cli probe-checkpoint probe-checkpoint-age bench-sessions torture fleet lint fmt

# A trove binary built without cgo is static: it starts about 1 ms sooner
# than one linked to the C library (no dynamic loader, no libc start-up and
# its CPUID probes), a seventh of its start (docs/checkpoint.md). The trove
# command also leaves BLAKE3 out (TROVE_TAGS): zeebo/blake3 brings
# klauspost/cpuid, whose initialisation traps to the hypervisor dozens of
# times, 0.3-0.8 ms of every command's start here (trove --version
# 0.4 ms sooner without it); trove-cloud, built
# without the tag, reads blob:blake3 refs (cas.Algorithm.Linked).
TROVE_TAGS := trove_noblake3
BUILD_STATIC := CGO_ENABLED=0 $(GO) build
BUILD_TROVE := $(BUILD_STATIC) -tags $(TROVE_TAGS)

## demo: run the main job on the default local store and print what it did
demo:
	$(GO) run ./cmd/trove demo

## install: trove and trove-cloud into GOBIN (default ~/go/bin), static (no
## cgo), trove without BLAKE3 (TROVE_TAGS), copied into place: a binary the
## linker wrote (go install renames it into GOBIN) starts 0.5-1 ms slower
## here than a copy of it (tools/internal/trovebin)
install:
	@bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; tmp=$$(mktemp -d); \
	$(BUILD_TROVE) -o $$tmp/ ./cmd/trove && $(BUILD_STATIC) -o $$tmp/ ./cmd/trove-cloud && mkdir -p $$bin && \
	for c in trove trove-cloud; do cp $$tmp/$$c $$bin/$$c.new && mv $$bin/$$c.new $$bin/$$c || exit 1; done; \
	rc=$$?; rm -rf $$tmp; [ $$rc -ne 0 ] || echo "installed trove and trove-cloud in $$bin"; exit $$rc

## deps: download Go modules and install the local bucket servers the Go
## modules do not bring with scripts/install-test-servers: azurite (npm), and
## SeaweedFS's weed, built from its Go module into the user's cache in the
## background (first time only, ~12 min on 2 cores) while the unit tests
## run; the seaweedfs tests wait for it
deps:
	$(GO) mod download
	@if [ -f scripts/install-test-servers ]; then bash scripts/install-test-servers --seaweedfs-background; fi

## test: install what the tests need, then run every test and the conformance matrix
test: deps unit conformance

## unit: every package's tests, then those that differ in the trove
## command's build (TROVE_TAGS): cas and the catalog without BLAKE3, and the
## command line as make install builds it
unit:
	$(GO) vet ./...
	$(GO) vet -tags $(TROVE_TAGS) ./cas/ ./catalog/ ./cmd/...
	TROVE_REQUIRE_ALL=1 $(GO) test -race -count=1 $$($(GO) list ./... | grep -v '/conformance$$')
	$(GO) test -race -count=1 -tags $(TROVE_TAGS) -run 'BLAKE3' ./cas/ ./catalog/
	$(GO) test -count=1 -tags $(TROVE_TAGS) ./cmd/internal/cli/

## conformance: every suite on every backend, one line per backend and suite
## (SeaweedFS plain and encrypted each in a go test process of its own, beside
## the others': a suite that bounds what a read allocates counts the whole
## process, so no two backends share one at once); azurite, the slowest
## server (a third of the rest's time), in a process of its own too; and
## beside them the append cost on fileblob, the S3 fake and SeaweedFS (grown by
## 4 KiB Syncs to 64 MiB: bytes per Sync <= 1.5x those at 1 MiB, folds counted,
## read whole in <= 80 calls; TestAppendCostFlat, too slow under -race for `unit`,
## which runs it on memblob; ~2.5 min)
MATRIX_AZURE := ^TestMatrix$$/^(crypt-)?azure$$
MATRIX_APART := ^TestMatrix$$/^(crypt-)?(seaweedfs|azure)$$
conformance:
	@tmp=$$(mktemp -d); \
	TROVE_REQUIRE_ALL=1 TROVE_APPEND_COST=seaweedfs,s3,fileblob $(GO) test -count=1 -timeout 20m -run '^TestAppendCostFlat$$' ./backend/cloud/ >$$tmp/cost 2>&1 & cost=$$!; \
	TROVE_REQUIRE_ALL=1 $(GO) test -count=1 -timeout 45m -json -run '^TestMatrix$$/^seaweedfs$$' ./conformance/ >$$tmp/engine.json 2>&1 & engine=$$!; \
	TROVE_REQUIRE_ALL=1 $(GO) test -count=1 -timeout 45m -json -run '^TestMatrix$$/^crypt-seaweedfs$$' ./conformance/ >$$tmp/cengine.json 2>&1 & cengine=$$!; \
	TROVE_REQUIRE_ALL=1 $(GO) test -count=1 -timeout 45m -json -run '$(MATRIX_AZURE)' ./conformance/ >$$tmp/azure.json 2>&1 & azure=$$!; \
	rc=0; TROVE_REQUIRE_ALL=1 $(GO) test -count=1 -timeout 45m -json -run '^TestMatrix$$' -skip '$(MATRIX_APART)' ./conformance/ >$$tmp/rest.json 2>&1 || rc=$$?; \
	wait $$engine || rc=$$?; wait $$cengine || rc=$$?; wait $$azure || rc=$$?; \
	cat $$tmp/rest.json $$tmp/engine.json $$tmp/cengine.json $$tmp/azure.json | $(GO) run ./tools/conftable || rc=$$?; \
	crc=0; wait $$cost || crc=$$?; echo "append cost on seaweedfs, s3 and fileblob:"; cat $$tmp/cost; rm -rf $$tmp; \
	test $$rc -eq 0 -a $$crc -eq 0

## bench: benchmarks of every layer on every backend (ns/op, MB/s), then the
## session store's table on LS_SESSIONS sessions (trove, baseline, ratio, goal;
## see bench-sessions; 100,000 by default, issue 34's ls row: ~4 GB under the
## temporary directory, 10+ minutes), bench-append and bench-search
LS_SESSIONS ?= 100000
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./conformance/ ./cas/ ./session/ ./runlog/ 2>/dev/null | grep -E '^(Benchmark|ok|FAIL|goos|goarch|cpu|pkg)'
	$(GO) run ./tools/sessbench -sessions $(LS_SESSIONS)
	@$(MAKE) --no-print-directory bench-append
	@$(MAKE) --no-print-directory bench-search

## bench-search: the catalog's goal rows on 10,000 generated sessions (~35 KB):
## a word and a phrase through the CLI vs ripgrep, Store.Search warm, the build
## vs C SQLite FTS5 (Python's sqlite3), size vs text, peak RSS, a message
## another process flushed found by the next search. ripgrep is
## installed for the baseline if missing (the tests never need it)
bench-search:
	@command -v rg >/dev/null || apt-get install -y -q ripgrep >/dev/null 2>&1 || echo "no ripgrep: its rows say n/a"
	$(GO) run ./tools/searchbench

## bench-append: one 4 KiB append + Sync by a writer that stays open on a bucket
## file grown from empty to 1, 16 and 64 MiB (fileblob, memblob, s3, and SeaweedFS when
## scripts/install-test-servers built it, on 127.0.0.1): time, bytes uploaded and
## read back per Sync (every fold counted), bucket calls; 1024 syncs each
bench-append:
	$(GO) test -run '^$$' -bench '^BenchmarkAppendSync$$' -benchtime 1024x -timeout 30m ./backend/cloud/ | grep -E '^(Benchmark|ok|FAIL)'

## bench-checkpoint: trove checkpoints vs a shadow git repository (5,000 files, ~100 MB)
bench-checkpoint:
	$(GO) run ./tools/cpbench

## bench-checkpoint-cli: the same rows as whole `trove checkpoint` processes
## against git processes, alternated (issue 35: create >= 2x, rewind >= 1.5x,
## diff and rewind --dry-run >= 1x), on 5,000 files, ~120 MB
bench-checkpoint-cli:
	$(BUILD_TROVE) -o $(TOOLS)/bin/trove-bench ./cmd/trove
	$(GO) run ./tools/cpbench -cli $(TOOLS)/bin/trove-bench -mb 120 -rounds 9 -size-files 0

## probe-checkpoint: create, diff, rewind and undo through the CLI on a tree with
## symlinks, an executable, a 200 MB file and changed directories; undo must
## give back the workspace exactly, each rewind within 128 MiB
probe-checkpoint:
	$(BUILD_TROVE) -o $(TOOLS)/bin/trove-probe ./cmd/trove
	bash tools/ckprobe.sh $(TOOLS)/bin/trove-probe

## probe-checkpoint-age: rewinds (and dry runs) to a checkpoint 100 snapshots
## old and to the newest, changing the same 10 files, before and after gc
probe-checkpoint-age:
	$(BUILD_TROVE) -o $(TOOLS)/bin/trove-probe ./cmd/trove
	bash tools/ckage.sh $(TOOLS)/bin/trove-probe

## bench-sessions: the session store's table (listing 10,000 sessions, ls --json,
## durable appends, load) against baselines run in the same process
bench-sessions:
	$(GO) run ./tools/sessbench

## torture: kill real trove processes (SIGKILL) N times mid-write and check
## that nothing they acknowledged was lost; prints kills=N acked=N lost=0 torn=0
N ?= 200
torture:
	$(GO) run ./tools/torture -n $(N)

## fleet: MACHINES processes (8) on one bucket of a real object store
## (SeaweedFS when scripts/install-test-servers built it, or once its background
## build ends, else the S3 fake in a process of its own), KILLS SIGKILLs (200) and
## at least GC GC runs (20), writers pacing their work (2s, 4s under faults);
## checks every journal against the bucket; its last line is
## fleet: machines=N kills=N gc=N acked=N lost=0 two_writers=0 ...
## FAULTS=1 puts the fault proxy between the machines and the engine
MACHINES ?= 8
KILLS ?= 200
GC ?= 20
ENGINE ?= auto
fleet:
	$(GO) run ./tools/fleet -machines $(MACHINES) -kills $(KILLS) -gc $(GC) -engine $(ENGINE) $(if $(filter 1 true yes,$(FAULTS)),-faults)

## lint: gofmt, go vet and staticcheck must all be clean
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@test -x $(TOOLS)/bin/staticcheck || GOBIN=$(TOOLS)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(TOOLS)/bin/staticcheck ./...
	$(TOOLS)/bin/staticcheck -tags $(TROVE_TAGS) ./cas/ ./catalog/ ./cmd/...

fmt:
	gofmt -w .
