#!/usr/bin/env bash
# hack/release-check.sh: rehearse a release without publishing anything. Run
# it before tagging one; CI does not (docs/development.md, "Releasing").
#
#  1. goreleaser check, then a snapshot release into dist/ (every archive,
#     the agent image's tarballs and checksums; publishing is all it skips).
#  2. Every archive holds what the release promises; checksums.txt matches;
#     the linux/amd64 binary prints the snapshot's version and
#     kubectl_complete-vmctl completes through it.
#  2b. Each image tarball holds vmctl-agent as goreleaser built it, as the
#     entrypoint, user 65532, one layer; the release's publisher command
#     pushes them as one index to a loopback registry, and both platforms
#     pull back intact.
#  3. krew/vmctl.yaml rendered against dist/ as krew-release-bot would on a
#     tag, checked by krew's own validator, installed with krew from the
#     linux/amd64 archive and run as `kubectl vmctl`.
#  4. With kubectl on PATH: krew's validator installs the manifest for every
#     platform from a loopback file server, and kubectl completes
#     `kubectl vmctl ...` through kubectl_complete-vmctl.
#
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
dist="$root/dist"
work="$(mktemp -d)"
server_pid=""
registry_pid=""
cleanup() {
	if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
	if [[ -n "$registry_pid" ]]; then kill "$registry_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The platforms of .goreleaser.yaml's builds (hack/krew-tools' tests check
# they agree).
archive_platforms=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
image_platforms=(linux/amd64 linux/arm64)

step() { printf '\n== %s\n' "$*"; }
fail() {
	echo "release-check: $*" >&2
	exit 1
}

goreleaser="$(hack/tools.sh goreleaser)"
krew="$(hack/tools.sh krew)"
validate="$(hack/tools.sh validate-krew-manifest)"

step "goreleaser check"
"$goreleaser" check

step "goreleaser release --snapshot --clean"
"$goreleaser" release --snapshot --clean --parallelism "${RELEASE_PARALLELISM:-2}"

version="$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")"
[[ -n "$version" ]] || fail "no version in dist/metadata.json"
tag="v$version"

step "archives of $tag"
(cd "$dist" && sha256sum --check --strict checksums.txt)
for p in "${archive_platforms[@]}"; do
	os=${p%/*} arch=${p#*/}
	bin=kubectl-vmctl
	archive="$dist/kubectl-vmctl_${os}_${arch}.tar.gz"
	list=(tar -tzf "$archive")
	if [[ $os == windows ]]; then
		bin=kubectl-vmctl.exe
		archive="$dist/kubectl-vmctl_${os}_${arch}.zip"
		list=(unzip -Z1 "$archive")
	fi
	[[ -f "$archive" ]] || fail "missing $archive"
	grep -q " ${archive##*/}\$" "$dist/checksums.txt" || fail "${archive##*/} not in checksums.txt"
	members="$("${list[@]}")"
	for want in "$bin" LICENSE README.md kubectl_complete-vmctl; do
		grep -qx "$want" <<<"$members" || fail "${archive##*/} lacks $want; it has: $members"
	done
	echo "${archive##*/}: $(tr '\n' ' ' <<<"$members")"
done

step "agent image of $tag"
image() { go -C hack/image run . "$@"; }
for p in "${image_platforms[@]}"; do
	arch=${p#*/}
	file="$dist/kubectl-vmctl-image_${tag}_linux_${arch}.tar"
	[[ -f "$file" ]] || fail "missing $file"
	grep -q " ${file##*/}\$" "$dist/checksums.txt" || fail "${file##*/} not in checksums.txt"
	agents=("$dist"/vmctl-agent_linux_"$arch"*/vmctl-agent)
	[[ ${#agents[@]} -eq 1 && -f "${agents[0]}" ]] || fail "want one vmctl-agent for linux/$arch in dist/, found: ${agents[*]}"
	image check -platform "linux/$arch" -path /vmctl-agent -program /vmctl-metrics-adapter -binary "${agents[0]}" \
		-tag "ghcr.io/kubectl-vmctl/kubectl-vmctl:$tag" "$file"
done

step "the release's image publisher, against a loopback registry"
go -C hack/image build -o "$work/image" .
"$work/image" registry -url-file "$work/registry" -timeout 10m &
registry_pid=$!
for _ in $(seq 100); do
	[[ -s "$work/registry" ]] && break
	kill -0 "$registry_pid" 2>/dev/null || fail "the loopback registry exited"
	sleep 0.1
done
[[ -s "$work/registry" ]] || fail "the loopback registry did not start"
repo="$(cat "$work/registry")/kubectl-vmctl/kubectl-vmctl"
IMAGE_INSECURE=1 hack/image.sh push "$tag" "$repo"
for ref in "$repo:$tag" "$repo:latest"; do
	for arch in amd64 arm64; do
		image check -remote -insecure -platform "linux/$arch" -path /vmctl-agent -program /vmctl-metrics-adapter "$ref"
	done
done
kill "$registry_pid"
registry_pid=""

step "linux/amd64 binary"
mkdir -p "$work/archive"
tar -xzf "$dist/kubectl-vmctl_linux_amd64.tar.gz" -C "$work/archive"
out="$("$work/archive/kubectl-vmctl" version)"
echo "$out"
grep -qF "kubectl-vmctl $tag " <<<"$out" || fail "version prints \"$out\", want kubectl-vmctl $tag"
[[ -x "$work/archive/kubectl_complete-vmctl" ]] || fail "kubectl_complete-vmctl is not executable in the archive"
out="$(PATH="$work/archive:$PATH" kubectl_complete-vmctl "" 2>/dev/null)"
grep -q '^version' <<<"$out" || fail "kubectl_complete-vmctl \"\" printed: $out"
echo "kubectl_complete-vmctl completes: $(grep -v '^:' <<<"$out" | cut -f1 | tr '\n' ' ')"

step "krew manifest for $tag"
manifest="$dist/krew/vmctl.yaml"
go -C hack/krew-tools run ./render-krew -template "$root/krew/vmctl.yaml" -dist "$dist" -tag "$tag" -out "$manifest"
grep -E '^\s+(uri|sha256):' "$manifest"
"$validate" -manifest "$manifest" -skip-install

step "krew install --manifest --archive (linux/amd64)"
export KREW_ROOT="$work/krew"
"$krew" install --manifest="$manifest" --archive="$dist/kubectl-vmctl_linux_amd64.tar.gz"
out="$("$KREW_ROOT/bin/kubectl-vmctl" version)"
echo "$out"
grep -qF "kubectl-vmctl $tag " <<<"$out" || fail "the krew-installed plugin prints \"$out\""
[[ -f "$KREW_ROOT/store/vmctl/$tag/LICENSE" ]] || fail "krew did not extract LICENSE"

if ! command -v kubectl >/dev/null; then
	step "no kubectl on PATH: skipping kubectl vmctl, plugin completion and the every-platform install"
	exit 0
fi

step "kubectl vmctl version (krew's bin on PATH)"
mkdir -p "$work/bin"
cp "$krew" "$work/bin/kubectl-krew"
export PATH="$KREW_ROOT/bin:$work/bin:$PATH"
out="$(kubectl vmctl version)"
echo "$out"
grep -qF "kubectl-vmctl $tag " <<<"$out" || fail "kubectl vmctl version printed \"$out\""

step "kubectl __complete vmctl (kubectl_complete-vmctl on PATH, as the caveats say)"
printf '#!/usr/bin/env sh\nexec kubectl-vmctl __complete "$@"\n' >"$KREW_ROOT/bin/kubectl_complete-vmctl"
chmod +x "$KREW_ROOT/bin/kubectl_complete-vmctl"
out="$(kubectl __complete vmctl "" 2>/dev/null)"
grep -q '^completion' <<<"$out" || fail "kubectl __complete vmctl \"\" printed: $out"
out="$(kubectl __complete vmctl completion f 2>/dev/null)"
grep -qx 'fish' <<<"$out" || fail "kubectl __complete vmctl completion f printed: $out"
echo "kubectl completes vmctl: $(kubectl __complete vmctl "" 2>/dev/null | grep -v '^:' | cut -f1 | tr '\n' ' ')"

step "krew's validator, installing every platform from a loopback server"
go -C hack/krew-tools build -o "$work/serve-dir" ./serve-dir
"$work/serve-dir" -dir "$dist" -url-file "$work/url" -timeout 10m &
server_pid=$!
for _ in $(seq 100); do
	[[ -s "$work/url" ]] && break
	kill -0 "$server_pid" 2>/dev/null || fail "serve-dir exited"
	sleep 0.1
done
[[ -s "$work/url" ]] || fail "serve-dir did not start"
mkdir -p "$work/local"
go -C hack/krew-tools run ./render-krew -template "$root/krew/vmctl.yaml" -dist "$dist" -tag "$tag" \
	-uri-prefix "$(cat "$work/url")" -out "$work/local/vmctl.yaml"
"$validate" -manifest "$work/local/vmctl.yaml"

step "release-check passed for $tag"
