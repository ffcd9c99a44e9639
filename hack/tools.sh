#!/usr/bin/env bash
# hack/tools.sh TOOL: print the path of a pinned build tool, building it into
# .cache/tools/<name>-<version>/ from the Go module proxy the first time.
#
#   goreleaser      github.com/goreleaser/goreleaser/v2 (v2.17+ needs modules
#                   the proxy refuses here, v2.18+ needs Go 1.27)
#   golangci-lint   github.com/golangci/golangci-lint/v2
#   deadcode        golang.org/x/tools/cmd/deadcode
#   krew            sigs.k8s.io/krew's krew, from hack/krew-tools (go.sum-pinned)
#   validate-krew-manifest  krew's manifest validator, from hack/krew-tools
#
# Builds go to a temporary directory first, so an interrupted or concurrent
# build never leaves a half-written tool behind.
set -euo pipefail

GORELEASER_VERSION=v2.15.4
GOLANGCI_LINT_VERSION=v2.15.0
DEADCODE_VERSION=v0.52.0

root="$(cd "$(dirname "$0")/.." && pwd)"
# TOOLS_CACHE lets a scratch clone reuse the tools built in another checkout.
cache="${TOOLS_CACHE:-$root/.cache/tools}"
krew_tools="$root/hack/krew-tools"

krew_version() {
	awk '$1 == "sigs.k8s.io/krew" { print $2 }' "$krew_tools/go.mod"
}

# build NAME DIR CMD...: run CMD with GOBIN set to a temporary directory, then
# move the result to DIR.
build() {
	local name=$1 dir=$2
	shift 2
	local tmp
	tmp="$(mktemp -d "$cache/.build-XXXXXX")"
	chmod 755 "$tmp"
	local start=$SECONDS
	echo "hack/tools.sh: building $name into $dir (first run only)" >&2
	if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:-} -mod=readonly" "$@" >&2; then
		rm -rf "$tmp"
		echo "hack/tools.sh: building $name failed" >&2
		return 1
	fi
	# Another build may have finished first; keep whichever landed.
	mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
	echo "hack/tools.sh: built $name in $((SECONDS - start))s" >&2
}

tool=${1:?usage: hack/tools.sh goreleaser|golangci-lint|deadcode|krew|validate-krew-manifest}
mkdir -p "$cache"
case "$tool" in
goreleaser)
	dir="$cache/goreleaser-$GORELEASER_VERSION"
	[[ -x "$dir/goreleaser" ]] ||
		build goreleaser "$dir" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
	;;
golangci-lint)
	dir="$cache/golangci-lint-$GOLANGCI_LINT_VERSION"
	[[ -x "$dir/golangci-lint" ]] ||
		build golangci-lint "$dir" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
	;;
deadcode)
	dir="$cache/deadcode-$DEADCODE_VERSION"
	[[ -x "$dir/deadcode" ]] ||
		build deadcode "$dir" go install "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION"
	;;
krew | validate-krew-manifest)
	dir="$cache/krew-$(krew_version)"
	[[ -x "$dir/krew" && -x "$dir/validate-krew-manifest" ]] ||
		build "krew $(krew_version)" "$dir" go -C "$krew_tools" install sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest
	;;
*)
	echo "hack/tools.sh: unknown tool $tool" >&2
	exit 2
	;;
esac
echo "$dir/$tool"
