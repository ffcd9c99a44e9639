# kubectl-vmctl. `make demo` runs it on a local control plane; `make test` runs
# every test. Both build only what they run, and each build step says what it
# builds and how long it takes the first time. A first `make demo` in a fresh
# clone with empty Go caches builds kubectl-vmctl, the control plane and
# KubeVirt v1.9.0 from source, 1,180 to 1,380 CPU-seconds (10 to 13 minutes
# on a 2-core machine), and metrics-server at the lowest priority beside
# them, whose rest the walkthrough's last step waits for; later runs reuse
# the builds and are up in a minute (docs/development.md, "CI, and build
# times").
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# Evaluated once, so every target of one make run (the image and the e2e run
# that loads it) agrees on them, even if the tree changes meanwhile.
VERSION := $(VERSION)
COMMIT := $(COMMIT)
DATE := $(DATE)
LDFLAGS := -s -w \
	-X github.com/kubectl-vmctl/kubectl-vmctl/internal/version.version=$(VERSION) \
	-X github.com/kubectl-vmctl/kubectl-vmctl/internal/version.commit=$(COMMIT) \
	-X github.com/kubectl-vmctl/kubectl-vmctl/internal/version.date=$(DATE)
export PATH := $(BIN):$(PATH)
# KubeVirt v1.9.0, which the test cluster runs, requires
# kubevirt.io/virt-template-api and -client-go v0.2.0. Where the module proxy
# refuses them, a file-based module proxy that serves them may sit beside the
# clone, in ../shared/goproxy: it goes first on GOPROXY. go.sum pins their
# hashes either way.
SHARED_GOPROXY := $(abspath $(CURDIR)/../shared/goproxy)
ifneq ($(wildcard $(SHARED_GOPROXY)/kubevirt.io),)
ifeq ($(findstring file://$(SHARED_GOPROXY),$(GOPROXY)),)
export GOPROXY := file://$(SHARED_GOPROXY),$(shell $(GO) env GOPROXY)
endif
endif
# The agent image: hack/image.sh names its tarballs after the version, with
# "+" made "_" as in image tags.
IMAGE_TAG := $(subst +,_,$(VERSION))
IMAGE := ghcr.io/kubectl-vmctl/kubectl-vmctl:$(IMAGE_TAG)
IMAGE_PLATFORMS := linux/amd64 linux/arm64
HOST_ARCH := $(shell $(GO) env GOARCH)
IMAGE_ARCHIVE = $(CURDIR)/dist/kubectl-vmctl-image_$(IMAGE_TAG)_linux_$(HOST_ARCH).tar

DEMO_TOOLS_MODULES := internal/testcluster/tools internal/testcluster/kubevirt/tools internal/testcluster/metricsserver/tools

# Every build and test compiles as `make build` does, without cgo and with
# -trimpath, but the race detector's, which needs cgo: the packages they
# share, the product's dependencies and the control plane's (client-go,
# k8s.io/api and the rest), then compile once into Go's build cache
# instead of once for each set of flags. Nothing reads DWARF here (the
# binaries link with -s -w, and no test runs a debugger), so the compiler
# writes none: that takes about 7 % off a cold compile (docs/development.md,
# "CI, and build times").
export CGO_ENABLED := 0
export GOFLAGS := $(GOFLAGS) -trimpath -gcflags=all=-dwarf=false

.PHONY: all build image node-deps test unit unit-tests race race-compile e2e bench bench-adapter bench-start bench-versus bench-handover soak lint release-check demo demo-real clean

all: build

## build: bin/kubectl-vmctl, which kubectl finds as the `vmctl` plugin once bin/ is on PATH; bin/vmctl-agent, the agent image's entrypoint, which the tests' kubelet double runs; and bin/vmctl-metrics-adapter, the custom metrics server of the guests' CPU
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/kubectl-vmctl ./cmd/vmctl-agent ./cmd/vmctl-metrics-adapter

## image: the agent image (/vmctl-agent, and /vmctl-metrics-adapter beside it), one tarball per platform: dist/kubectl-vmctl-image_<version>_linux_<arch>.tar,
## tagged $(IMAGE); no Docker needed. Load it with kind load image-archive,
## minikube image load, docker load or ctr -n k8s.io images import.
image:
	@rm -f $(CURDIR)/dist/kubectl-vmctl-image_*.tar
	@set -e; for p in $(IMAGE_PLATFORMS); do \
		dir=$(CURDIR)/dist/image-bin/$${p/\//_}; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$dir/ ./cmd/vmctl-agent ./cmd/vmctl-metrics-adapter; \
		IMAGE_REVISION=$(COMMIT) ADAPTER_BINARY=$$dir/vmctl-metrics-adapter hack/image.sh build $$dir/vmctl-agent $$p $(VERSION); \
	done

## node-deps: what the e2e suite's real node needs from the OS (runc, CNI plugins, iptables, nft), and cpio for a unit test, apt-installed when missing
node-deps:
	hack/node-deps.sh

## test: unit tests, then the end-to-end suite on a real local control plane; the race detector's pass compiles beside it and runs after its first lane
test: E2E_BESIDE := $(MAKE) --no-print-directory race-compile
test: E2E_AFTER := $(MAKE) --no-print-directory race
test: unit-tests e2e

# The packages that start goroutines (the agent, its command, the watches
# in internal/kube) run again under the race detector. Not ./... whole: the
# race detector compiles every dependency once more, which `make build` and
# the e2e suite cannot reuse: 1,112 CPU-seconds with empty caches on 2
# cores, against 557 for internal/agent's and internal/kube's.
RACE_PACKAGES := ./internal/agent/... ./internal/agentcmd/... ./internal/kube/...

unit: unit-tests race

# node-deps: the guest's initramfs is read back with cpio.
unit-tests: node-deps
	$(GO) test -count=1 ./...
	$(GO) -C hack/image test -count=1 ./...
	$(GO) -C hack/krew-tools test -count=1 ./...

race:
	CGO_ENABLED=1 $(GO) test -race -count=1 $(RACE_PACKAGES)

# The race pass compiled and linked, its tests not run (-exec true):
# `make test` builds it beside the e2e suite at the lowest priority, where
# its tests' time bounds would not hold, and runs it after the first lane.
race-compile:
	CGO_ENABLED=1 $(GO) test -race -count=1 -exec true $(RACE_PACKAGES)

# In lanes (hack/e2e.sh says which): the e2e package in front, then
# E2E_AFTER, if set; beside it, niced, the builds the real node needs, then
# the real node's packages and the harness's; E2E_BESIDE, if set, at the
# lowest priority.
# The tests load only this machine's platform of the image (`image` as a
# prerequisite of e2e or demo-real builds that one alone).
e2e demo-real: IMAGE_PLATFORMS := linux/$(HOST_ARCH)
e2e: build image node-deps
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent VMCTL_ADAPTER_BINARY=$(BIN)/vmctl-metrics-adapter VMCTL_IMAGE=$(IMAGE) VMCTL_IMAGE_ARCHIVE=$(IMAGE_ARCHIVE) GO=$(GO) E2E_BESIDE='$(E2E_BESIDE)' E2E_AFTER='$(E2E_AFTER)' hack/e2e.sh

bench: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent VMCTL_ADAPTER_BINARY=$(BIN)/vmctl-metrics-adapter $(GO) test -tags e2e -run '^$$' -bench . -benchtime 1x -count=1 -timeout 120m ./internal/e2e/...

## bench-start: how much CPU kubectl-vmctl and vmctl-agent take to start, against /bin/true, 30 runs each (BenchmarkStart)
bench-start: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent $(GO) test -run '^$$' -bench '^BenchmarkStart$$' -benchtime 30x -count=1 ./cmd/vmctl-agent/

## bench-versus: KubeVirt's VirtualMachinePool and a vmctl Deployment side by side (BenchmarkVersusPool); VMCTL_VERSUS_VMS=N sizes it (default 100)
bench-versus: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent $(GO) test -tags e2e -run '^$$' -bench '^BenchmarkVersusPool$$' -benchtime 1x -count=1 -timeout 120m ./internal/e2e/

## bench-adapter: vmctl-metrics-adapter at VMCTL_FLEET agent Pods (default 1,000): the HPA's question, its memory, its requests (BenchmarkMetricsAdapter)
bench-adapter: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent VMCTL_ADAPTER_BINARY=$(BIN)/vmctl-metrics-adapter $(GO) test -tags e2e -run '^$$' -bench '^BenchmarkMetricsAdapter$$' -benchtime 1x -count=1 -timeout 60m ./internal/e2e/

## bench-handover: the ways an agent can hand its Pod's room to its VM's launcher Pod, side by side on one burst (BenchmarkHandover)
bench-handover: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent $(GO) test -tags e2e -run '^$$' -bench '^BenchmarkHandover$$' -benchtime 1x -count=1 -timeout 60m ./internal/e2e/

## soak: the chaos soak (TestSoak) at 1,000 operations; VMCTL_SOAK_SEED=N replays a run, VMCTL_SOAK_OPS=N sets its length (make e2e runs 100)
soak: build
	VMCTL_BINARY=$(BIN)/kubectl-vmctl VMCTL_AGENT_BINARY=$(BIN)/vmctl-agent VMCTL_SOAK_OPS=$${VMCTL_SOAK_OPS:-1000} VMCTL_SOAK_LOGS=$(CURDIR)/.soak-logs $(GO) test -tags e2e -count=1 -timeout 6h -v -run '^TestSoak$$' ./internal/e2e/

## lint: gofmt, golangci-lint (.golangci.yml; its govet runs go vet's analyzers, and more) and deadcode over the commands (hack/tools.sh builds the pinned versions once)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@lint=$$(hack/tools.sh golangci-lint) && set -x && \
		{ $$lint run ./...; main=$$?; } && \
		{ (cd hack/krew-tools && $$lint run --config ../../.golangci.yml ./...); tools=$$?; } && \
		{ (cd hack/image && $$lint run --config ../../.golangci.yml ./...); image=$$?; } && \
		exit $$((main | tools | image))
	@dead=$$(hack/tools.sh deadcode) && out=$$($$dead ./cmd/...) && \
		if [ -n "$$out" ]; then echo "deadcode: unreachable from ./cmd/... (delete it, or move what only tests use next to them):"; echo "$$out"; exit 1; fi

## release-check: goreleaser check + snapshot into dist/, archive checks, krew manifest render/validate/install
release-check:
	hack/release-check.sh

## demo: a local control plane with 3 fake nodes, KubeVirt v1.9.0's real virt-api and virt-controller, kubectl-vmctl's agents, and an HPA scaling VMs on their guests' CPU (metrics-server, vmctl-metrics-adapter); Ctrl-C stops it
# kubectl-vmctl, vmctl-metrics-adapter and the harness (bin/vmctl-cluster)
# share most packages: one build with the same flags compiles them once.
# The harness, not `go run`, answers Ctrl-C: on a terminal it takes the
# Ctrl-C for itself, so make exits 0 too once the cluster stopped cleanly.
# It builds metrics-server itself, niced, beside the cluster's start and
# the first steps, which do not need it.
demo:
	@echo "building kubectl-vmctl, vmctl-metrics-adapter and the demo's harness vmctl-cluster into $(BIN) (3-4 minutes on 2 cores with empty Go caches)..."
	@# Meanwhile download the modules the control plane, KubeVirt and
	@# metrics-server build from (1.2 GB): that waits on the network, the
	@# compile on the CPUs.
	@for m in $(DEMO_TOOLS_MODULES); do \
		(cd $$m && GOWORK=off GONOSUMDB=k8s.io GOFLAGS="$$GOFLAGS -mod=readonly" $(GO) mod download >/dev/null 2>&1 &); \
	done
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/kubectl-vmctl ./cmd/vmctl-metrics-adapter ./internal/testcluster/cmd/vmctl-cluster
	$(BIN)/vmctl-cluster demo --vmctl-binary $(BIN)/kubectl-vmctl --adapter-binary $(BIN)/vmctl-metrics-adapter

## demo-real: as root, a control plane and a real node (kubelet, containerd) booting real guests under qemu's emulation in KubeVirt v1.7.0's own virt-launcher; Ctrl-C stops it
demo-real: build image node-deps
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./internal/testcluster/cmd/vmctl-cluster
	$(BIN)/vmctl-cluster demo-real --vmctl-binary $(BIN)/kubectl-vmctl --image $(IMAGE) --image-archive $(IMAGE_ARCHIVE)

clean:
	rm -rf $(BIN) dist
