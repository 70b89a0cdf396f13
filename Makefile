# sandboxer: `make run` provisions the quick-start sandboxes on this
# machine; `make test` runs vet, the whole test suite and a short fuzz.
GO       ?= go
# Fuzz budgets are counts, not durations: with a duration Go 1.26's
# fuzzing coordinator can fail a run that found nothing ("context deadline
# exceeded" at the deadline on a loaded machine, golang/go#75804). 50,000
# cases are about 10 s of FuzzLoadSources here.
FUZZTIME ?= 50000x
# Sandboxes (postgres+redis each) in the scale run of `make bench`.
SCALE_N  ?= 200
# The state-file fuzz (damaged bbolt files) is slower per case (about
# 1,300 a second here).
STATE_FUZZTIME ?= 15000x
BIN      := bin/sandboxer

.PHONY: build image helm integresql images test-images test vet unit benchcheck fuzz bench bench-kube run clean kube kube-down kube-smoke kube-cycle

# sandboxer and, beside it, sandboxer-kubernetes: the kubernetes runtime
# runs in a program of its own (internal/plugin). Static (no cgo): nothing
# needs libc, and loading it cost every command about 1 ms and 4 MiB.
build:
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN)) ./cmd/sandboxer ./cmd/sandboxer-kubernetes

# The image of sandboxer itself, sandboxer.local/sandboxer:VERSION: the
# two static programs of `make build` on an empty base (no shell), run as
# uid 65532 (images/sandboxer). After a build, ~10 s of docker build; an
# unchanged build leaves the image as it was. `make test` checks it
# (images/sandboxer's tests).
image: build
	bash images/sandboxer/build.sh $(dir $(BIN))

# helm, for deploy/helm's chart and its test: built from the Go module
# proxy into .kube/bin/helm (scripts/helm); skipped when it is there.
helm:
	@bash scripts/helm/build.sh

# IntegreSQL's server from the Go module proxy into bin/integresql
# (scripts/integresql), the third side of the database benchmarks;
# skipped when it is there.
integresql:
	@bash scripts/integresql/build.sh

# Local images built from Debian packages (no registry here); existing
# ones are kept, FORCE=1 rebuilds.
images:
	bash images/build.sh

# The test image matrix: small builds on top of the local images that do
# what real users' images do differently (another service uid, modules the
# entrypoint loads, the PostgreSQL 18 layout); images/variants/README.md.
test-images: images
	bash images/variants/build.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

unit:
	$(GO) test -count=1 -timeout 45m ./...

# Every CPU benchmark once, so a benchmark that no longer passes fails
# the tests rather than `make bench` (two had, unnoticed).
# The database throughput benchmark too, once at a small size on the
# real engine (issue 33: sandboxer's pool beside pgtestdb).
benchcheck:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./config ./plan ./cmd/sandboxer/... ./state ./state/pgstate ./internal/server
	SANDBOXER_THROUGHPUT_N=16 $(GO) test -run '^$$' -bench 'DatabaseThroughput$$' -benchtime 1x .

fuzz:
	$(GO) test ./config -run '^$$' -fuzz FuzzLoadSources -fuzztime $(FUZZTIME)
	$(GO) test ./config -run '^$$' -fuzz 'FuzzFastParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./config -run '^$$' -fuzz FuzzFastParseGenerated -fuzztime $(FUZZTIME)
	$(GO) test ./state -run '^$$' -fuzz FuzzStateFile -fuzztime $(STATE_FUZZTIME)

test: test-images image helm vet unit benchcheck fuzz

bench: images build integresql
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./config ./plan ./cmd/sandboxer/... ./state ./state/pgstate ./internal/server
	$(GO) run ./scripts/benchplan -bin $(BIN) -profile 10
	$(GO) run ./scripts/bench -bin $(BIN)
	$(GO) run ./scripts/benchondemand -bin $(BIN)
	$(GO) run ./scripts/benchtenants -bin $(BIN)
	$(GO) run ./scripts/benchpool -bin $(BIN)
	$(GO) run ./scripts/benchfork -bin $(BIN)
	$(GO) run ./scripts/benchservices -bin $(BIN)
	$(GO) run ./scripts/benchpool -bin $(BIN) -services mysql -n 50 -cli 10 -cold 3 -size 3
	$(GO) run ./scripts/benchpool -bin $(BIN) -services valkey -n 50 -cli 10 -cold 3 -size 3
	SANDBOXER_INTEGRESQL_BIN=$(CURDIR)/bin/integresql $(GO) test -run '^$$' -bench 'DatabasePerTest$$' -benchtime 1000x .
	$(GO) test -run '^$$' -bench 'DatabaseDensity$$' -benchtime 1x .
	SANDBOXER_INTEGRESQL_BIN=$(CURDIR)/bin/integresql SANDBOXER_THROUGHPUT_SECONDS=60 $(GO) test -run '^$$' -bench 'DatabaseThroughput$$' -benchtime 1x -timeout 30m .
	$(GO) run ./scripts/benchscale -bin $(BIN) -n $(SCALE_N)
	@if [ -n "$$KUBECONFIG" ] || [ -f .kube/kubeconfig ]; then $(MAKE) --no-print-directory bench-kube; \
	else echo "no cluster (KUBECONFIG unset, no .kube/kubeconfig): the Kubernetes benchmarks are skipped; make kube starts one"; fi

# The Kubernetes runtime on the cluster KUBECONFIG names, else the one
# make kube started: cold time-to-ready through the provider against the
# same Secret and pod created directly with the same probes; cache-hit
# requests (CLI and HTTP API); API requests per sandbox created and
# deleted (real pods); a connection through the port-forward beside one
# to the pod IP (connect latency, round trip, throughput); warm-pool claims (API requests on the claim path,
# KUBE_CLAIMS claims' p50/p99 with refills running, and through serve);
# KUBE_SCALE_N sandboxes created and deleted on kwok's fake nodes
# (creates/s, deletes/s, requests per sandbox, the process's memory, and
# bare pods the same way beside it), then KUBE_SCALE_BIG_N (0, the
# default, skips it; 10000 needs 20 kwok nodes of 500 pods:
# scripts/kube/kwok-nodes.sh 24).
KUBE_SCALE_N ?= 1000
KUBE_SCALE_BIG_N ?= 0
KUBE_CLAIMS ?= 200
KUBE_ENV = KUBECONFIG="$${KUBECONFIG:-$(CURDIR)/.kube/kubeconfig}"
bench-kube: build
	$(KUBE_ENV) $(GO) test -run '^$$' -bench ColdCreate -benchtime 5x ./providers/kubernetes
	$(KUBE_ENV) $(GO) run ./scripts/benchondemand -bin $(BIN) -runtime kubernetes
	$(KUBE_ENV) $(GO) test -run 'TestRequestsPerSandbox$$' -count 1 -v ./providers/kubernetes
	$(KUBE_ENV) $(GO) test -run 'TestPortForwardFigures$$' -count 1 -v ./providers/kubernetes
	$(KUBE_ENV) SANDBOXER_REQUIRE_HELM=1 SANDBOXER_HELM_TIMING=1 $(GO) test -run 'TestChartInstallsOnTheCluster$$' -count 1 -v ./deploy/helm
	$(KUBE_ENV) SANDBOXER_KUBE_CLAIMS=$(KUBE_CLAIMS) $(GO) test -run 'TestPoolClaimMakesNoAPIRequests$$' -count 1 -v -timeout 30m ./providers/kubernetes
	$(KUBE_ENV) $(GO) run ./scripts/benchpool -bin $(BIN) -runtime kubernetes -n $(KUBE_CLAIMS) -cli 0 -cold 2
	$(KUBE_ENV) SANDBOXER_KUBE_SCALE=$(KUBE_SCALE_N) SANDBOXER_KUBE_SCALE_BASELINE=1 $(GO) test -run TestScaleOnFakeNodes -count 1 -v -timeout 30m ./providers/kubernetes
	@if [ "$(KUBE_SCALE_BIG_N)" -gt 0 ]; then $(KUBE_ENV) SANDBOXER_KUBE_SCALE=$(KUBE_SCALE_BIG_N) $(GO) test -run TestScaleOnFakeNodes -count 1 -v -timeout 60m ./providers/kubernetes; fi

# The main job: the quick-start example, applied on this machine.
run: images build
	cd examples/quickstart && ../../$(BIN) apply --auto-approve && ../../$(BIN) env sandbox.dev

# A local single-node Kubernetes cluster (scripts/kube/README.md): builds
# its binaries into .kube/bin, starts it with data under .kube/run and the
# project's images imported, and prints the kubeconfig's path last.
kube:
	@bash scripts/kube/build.sh >&2
	@bash scripts/kube/up.sh

# Stops it and restores the host (sysctls, iptables, cgroups, bridge, mounts).
kube-down:
	@bash scripts/kube/down.sh

kube-smoke:
	bash scripts/kube/smoke.sh

# With no cluster up: a failed start and a full up/smoke/down each leave
# the host identical (hostcheck.sh before and after).
kube-cycle:
	bash scripts/kube/cycletest.sh

clean:
	rm -rf bin
