#!/usr/bin/env bash
# make e2e: the end-to-end suite, in lanes, as its tests mostly wait on their
# clusters and leave about half of 2 CPUs idle.
#
#   first lane, in front: the e2e package (kwok's nodes, KubeVirt's newest
#     release). It builds the control plane and that release when they are
#     not in .cache yet (progress shows thanks to -v).
#   second lane, nice 10, lines marked "[node] ": vmctl-prebuild node, what
#     the real node needs (KubeVirt v1.7.0 with cgo, its node side and
#     images, the guest, the kubelet, kube-proxy and containerd; its
#     progress in .cache/prebuild-node.log); then, one package at a time,
#     each on a control plane of its own, the real node's packages (which
#     run the image `make image` built, VMCTL_IMAGE_ARCHIVE) and the
#     harness's own. Meanwhile, at nice 15, vmctl-prebuild releases builds
#     the other KubeVirt releases the e2e package's last tests run on: they
#     wait for it on the caches' locks, or, when they come first (with cold
#     caches), build a release themselves.
#   beside both, nice 19, lines marked "[beside] ": the command in
#     E2E_BESIDE, if any (`make test` compiles the race detector's pass
#     there). Once it and the e2e package are done, the command in
#     E2E_AFTER, if any, at nice 0 (`make test` runs that pass's tests, whose
#     time bounds do not hold at nice 19 beside the lanes).
#
# With warm caches the lanes run side by side. With cold ones the second
# lane's tests start when the real node's builds are done, which take the
# CPU the first lane's builds and tests leave. The e2e package's time bounds
# hold with niced work beside it, not with a second lane of e2e tests at its
# own priority (docs/development.md, "CI, and build times").
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
e2e_test=("$go" test -tags e2e -count=1 -timeout 60m -v)
mkdir -p .cache

# prebuild NICE WHAT: vmctl-prebuild WHAT, niced. A failed build fails no
# test by itself: the tests that need it build it again, and say why.
prebuild() {
	local log=.cache/prebuild-$2.log
	nice -n "$1" "$go" run ./internal/testcluster/cmd/vmctl-prebuild "$2" > "$log" 2>&1 ||
		{ echo "vmctl-prebuild $2 failed:"; tail -20 "$log"; }
}

node_lane() {
	prebuild 10 node
	prebuild 15 releases &
	local releases=$! rc=0
	nice -n 10 "${e2e_test[@]}" -p 1 ./internal/e2e/realguest ./internal/e2e/realnode ./internal/testcluster/... || rc=1
	wait "$releases"
	return $rc
}

# mark NAME: prefix a lane's lines with "[NAME] ", and keep them in
# .cache/e2e-NAME.log for failed() to show again at the end.
mark() {
	sed -u "s/^/[$1] /" | tee ".cache/e2e-$1.log"
}

# failed NAME: say the lane failed, and show its failures again, as its
# lines came long before the end (and CI shows only the end of a run).
failed() {
	echo "[$1] failed; its failures (whole in .cache/e2e-$1.log):"
	grep -E -B3 -- '--- FAIL|\] FAIL|panic: |DATA RACE|Error [0-9]|failed:$' ".cache/e2e-$1.log" | tail -40
}

beside=
if [[ -n ${E2E_BESIDE:-} ]]; then
	{ nice -n 19 bash -c "$E2E_BESIDE" 2>&1 | mark beside; } &
	beside=$!
fi
{ node_lane 2>&1 | mark node; } &
node=$!

rc=0
"${e2e_test[@]}" ./internal/e2e || rc=1
if [[ -n $beside ]]; then
	wait "$beside" || { failed beside; rc=1; }
fi
if [[ -n ${E2E_AFTER:-} ]]; then
	bash -c "$E2E_AFTER" || { echo "$E2E_AFTER failed"; rc=1; }
fi
wait "$node" || { failed node; rc=1; }
exit $rc
