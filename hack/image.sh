#!/usr/bin/env bash
# hack/image.sh: the agent image, made the same way by `make image` and by the
# release (.goreleaser.yaml runs it after building each linux vmctl-agent, and
# its publisher runs `push`). No Docker, no registry: hack/image builds an
# empty-base image with one layer holding the static binary, entrypoint
# /vmctl-agent, and beside it /vmctl-metrics-adapter (ADAPTER_BINARY, else
# built here for the platform, stamped as the release's), user 65532:65532,
# and checks it.
#
#   hack/image.sh build BINARY OS/ARCH VERSION
#       writes and checks $DIST/kubectl-vmctl-image_VERSION_OS_ARCH.tar, the
#       image tagged $IMAGE_REPOSITORY:VERSION (what `scaffold` of that
#       version puts in its Pods)
#   hack/image.sh push VERSION [REPOSITORY]
#       pushes $DIST/kubectl-vmctl-image_VERSION_linux_{amd64,arm64}.tar as one
#       multi-platform index tagged VERSION and latest
#
# Environment: DIST (default <repo>/dist), IMAGE_REPOSITORY (default
# ghcr.io/kubectl-vmctl/kubectl-vmctl), IMAGE_REVISION (commit), IMAGE_CREATED
# (unix seconds; default the commit's time, so a binary always makes the same
# image), IMAGE_INSECURE=1 for a plain-HTTP registry (release rehearsal).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dist="$(realpath -m "${DIST:-$root/dist}")"
repository="${IMAGE_REPOSITORY:-ghcr.io/kubectl-vmctl/kubectl-vmctl}"
platforms=(linux/amd64 linux/arm64)

# A Go version may carry "+": image tags cannot (scaffold's DefaultImage does the same).
tag_of() { echo "${1//+/_}"; }

image() { go -C "$root/hack/image" run . "$@"; }

cmd=${1:?usage: hack/image.sh build BINARY OS/ARCH VERSION | push VERSION [REPOSITORY]}
case "$cmd" in
build)
	[[ $# -eq 4 ]] || { echo "usage: hack/image.sh build BINARY OS/ARCH VERSION" >&2; exit 2; }
	binary="$(realpath "$2")" platform=$3 version=$4
	tag="$(tag_of "$version")"
	out="$dist/kubectl-vmctl-image_${tag}_${platform//\//_}.tar"
	revision="${IMAGE_REVISION:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}"
	created="${IMAGE_CREATED:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"
	adapter="${ADAPTER_BINARY:-}"
	if [[ -z "$adapter" ]]; then
		adapter="$dist/image-bin/${platform//\//_}/vmctl-metrics-adapter"
		pkg=github.com/kubectl-vmctl/kubectl-vmctl/internal/version
		CGO_ENABLED=0 GOOS="${platform%/*}" GOARCH="${platform#*/}" go -C "$root" build -trimpath \
			-ldflags "-s -w -X $pkg.version=$version -X $pkg.commit=$revision -X $pkg.date=$(date -u -d "@$created" +%Y-%m-%dT%H:%M:%SZ)" \
			-o "$adapter" ./cmd/vmctl-metrics-adapter
	fi
	image build -binary "$binary" -path /vmctl-agent -program "$(realpath "$adapter")=/vmctl-metrics-adapter" -platform "$platform" \
		-tag "$repository:$tag" -created "$created" -out "$out" \
		-label org.opencontainers.image.source=https://github.com/kubectl-vmctl/kubectl-vmctl \
		-label org.opencontainers.image.licenses=Apache-2.0 \
		-label "org.opencontainers.image.version=$version" \
		-label "org.opencontainers.image.revision=$revision"
	image check -platform "$platform" -path /vmctl-agent -program /vmctl-metrics-adapter -binary "$binary" -tag "$repository:$tag" "$out"
	;;
push)
	[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: hack/image.sh push VERSION [REPOSITORY]" >&2; exit 2; }
	tag="$(tag_of "$2")"
	repository="${3:-$repository}"
	files=()
	for p in "${platforms[@]}"; do
		files+=("$dist/kubectl-vmctl-image_${tag}_${p//\//_}.tar")
	done
	flags=()
	[[ "${IMAGE_INSECURE:-}" == 1 ]] && flags+=(-insecure)
	image push "${flags[@]}" -tag "$repository:$tag" -tag "$repository:latest" "${files[@]}"
	;;
*)
	echo "hack/image.sh: unknown command $cmd" >&2
	exit 2
	;;
esac
