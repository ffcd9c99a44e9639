package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Agent keeps one derived VM for one Pod.
type Agent struct {
	cfg    Config
	vms    vmAPI
	pods   podAPI
	kube   kubernetes.Interface
	status *readiness
	report reporter

	// pod is cfg.Pod with Node and PodUID filled in.
	pod Identity
	// wasReady remembers the last readiness logged, to log changes only.
	wasReady bool
}

// New returns an Agent for cfg, which must have passed Validate.
func New(cfg Config, kv kubevirt.Interface, kube kubernetes.Interface) *Agent {
	return newAgent(cfg, kubevirtVMs{kv}, kube)
}

func newAgent(cfg Config, vms vmAPI, kube kubernetes.Interface) *Agent {
	status := newReadiness(ReadyzStarting)
	return &Agent{
		cfg:    cfg,
		vms:    vms,
		pods:   kubePods{kube},
		kube:   kube,
		status: status,
		report: reporter{status: status},
	}
}

// Handler serves /healthz and /readyz, as Run does on cfg.ProbeAddress.
func (a *Agent) Handler() http.Handler {
	return probeHandler(a.status)
}

// VMName is the derived VM's name.
func (a *Agent) VMName() string {
	return derive.Name(a.cfg.Prototype, a.cfg.Pod.PodName)
}

// Run serves the probes, creates the derived VM and keeps it until ctx is
// canceled (the shutdown signal), then deletes it and waits until it is gone
// or cfg.DeleteTimeout passes. Problems on the way are retried, never fatal:
// Run returns an error only when it cannot serve the probes. An Event still
// being sent when Run returns is abandoned, though client-go's sender may
// log that a moment later.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues(
		"vm", klog.KRef(a.cfg.Namespace, a.VMName()),
		"prototype", klog.KRef(a.cfg.PrototypeNamespace, a.cfg.Prototype))
	ctx = klog.NewContext(ctx, logger)

	ln, err := net.Listen("tcp", a.cfg.ProbeAddress)
	if err != nil {
		return fmt.Errorf("serving probes: %w; choose another --probe-address", err)
	}
	srv := probeServer(a.Handler(), defaultProbeLimits)
	go func() {
		if err := srv.Serve(defaultProbeLimits.limit(ln)); !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Probe server stopped")
		}
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("Serving probes", "address", ln.Addr().String())

	// Events outlive the shutdown signal: a failed delete is worth one.
	ectx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEvents()

	var owned *kubevirtv1.VirtualMachine
	if a.resolvePod(ctx) {
		a.report.startEvents(ectx, a.kube.CoreV1(), a.pod)
		owned = a.keep(ctx)
	}
	a.release(ctx, owned)
	return nil
}

// resolvePod fills in the Pod's node and UID, with one GET when the
// environment did not give them. It reports false when ctx ended first.
func (a *Agent) resolvePod(ctx context.Context) bool {
	a.pod = a.cfg.Pod
	if a.pod.Known() {
		return true
	}
	ref := a.pod.PodNamespace + "/" + a.pod.PodName
	b := a.cfg.backoff()
	for {
		pod, err := a.pods.getPod(ctx, a.pod.PodNamespace, a.pod.PodName)
		if err == nil && pod.Spec.NodeName != "" {
			if a.pod.Node == "" {
				a.pod.Node = pod.Spec.NodeName
			}
			if a.pod.PodUID == "" {
				a.pod.PodUID = pod.UID
			}
			klog.FromContext(ctx).Info("Found the Pod", "pod", klog.KObj(pod), "node", a.pod.Node, "uid", a.pod.PodUID)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		p := &problem{reason: ReasonPodUnknown, err: err}
		switch {
		case err == nil:
			p.msg = fmt.Sprintf("Pod %s is not scheduled to a node yet", ref)
		case apierrors.IsNotFound(err):
			p.msg = fmt.Sprintf("looking up Pod %s for its node and UID: not found; set %s and %s through the downward API, or --hostname-override to the Pod's name", ref, EnvNodeName, EnvPodUID)
		default:
			p.msg = fmt.Sprintf("looking up Pod %s for its node and UID: %v; set %s and %s through the downward API", ref, err, EnvNodeName, EnvPodUID)
		}
		a.report.fail(ctx, p)
		if !sleep(ctx, b.Step()) {
			return false
		}
	}
}

// keep creates the VM and follows it until ctx is canceled, recreating it
// whenever someone else deletes it. It returns the VM the agent owns then.
func (a *Agent) keep(ctx context.Context) *kubevirtv1.VirtualMachine {
	recreate := a.cfg.backoff()
	for {
		vm := a.ensure(ctx)
		if vm == nil || ctx.Err() != nil {
			return vm
		}
		latest, gone, wasReady := a.follow(ctx, vm)
		if !gone {
			return latest
		}
		a.report.fail(ctx, &problem{reason: ReasonVMDeleted,
			msg: fmt.Sprintf("VM %s/%s was deleted while the Pod runs; recreating it", vm.Namespace, vm.Name)})
		// Something that deletes the VM again and again gets slower answers.
		if wasReady {
			recreate = a.cfg.backoff()
		} else if !sleep(ctx, recreate.Step()) {
			return nil
		}
	}
}

// follow watches vm and mirrors its readiness until ctx is canceled or the
// VM is gone. It returns the last state seen, whether the VM is gone, and
// whether it was ready at some point.
func (a *Agent) follow(ctx context.Context, vm *kubevirtv1.VirtualMachine) (latest *kubevirtv1.VirtualMachine, gone, wasReady bool) {
	latest = vm
	wasReady = a.observe(ctx, vm)
	ref := vm.Namespace + "/" + vm.Name
	_ = watchVM(ctx, a.vms, vm.Namespace, vm.Name, watchBackoff(a.cfg.backoff()), func(err error) bool {
		a.report.fail(ctx, watchProblem(ref, err))
		return false // the reflector retries; readiness returns with the VM
	}, func(cur *kubevirtv1.VirtualMachine) bool {
		if cur == nil || cur.UID != vm.UID {
			// Deleted, or deleted and its name taken by another VM while
			// the watch was down.
			gone = true
			return true
		}
		latest = cur
		if a.observe(ctx, cur) {
			wasReady = true
		}
		return false
	})
	if gone {
		a.status.set(false, ReasonVMDeleted)
		return nil, true, wasReady
	}
	return latest, false, wasReady
}

// observe mirrors vm's status.ready on /readyz and logs changes.
func (a *Agent) observe(ctx context.Context, vm *kubevirtv1.VirtualMachine) bool {
	ready := vm.Status.Ready && vm.DeletionTimestamp == nil
	switch {
	case ready:
		a.status.set(true, "")
	case vm.DeletionTimestamp != nil:
		a.status.set(false, ReadyzVMDeleting)
	case vm.Status.PrintableStatus != "":
		a.status.set(false, ReadyzVMNotReady+": "+string(vm.Status.PrintableStatus))
	default:
		a.status.set(false, ReadyzVMNotReady)
	}
	if ready != a.wasReady {
		a.wasReady = ready
		klog.FromContext(ctx).Info("VM readiness changed", "ready", ready, "status", vm.Status.PrintableStatus)
	}
	return ready
}

// release deletes the VM the agent owns, if any, when the Pod is told to stop.
func (a *Agent) release(ctx context.Context, vm *kubevirtv1.VirtualMachine) {
	logger := klog.FromContext(ctx)
	a.status.set(false, ReadyzShuttingDown)
	logger.Info("Shutting down", "cause", context.Cause(ctx))
	if vm == nil {
		logger.Info("No VM to delete")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.DeleteTimeout)
	defer cancel()
	if err := a.deleteAndWait(ctx, vm); err != nil {
		msg := fmt.Sprintf("VM %s/%s may outlive the Pod: %v", vm.Namespace, vm.Name, err)
		logger.Error(err, "VM may outlive the Pod", "timeout", a.cfg.DeleteTimeout)
		// Best effort: the process may exit before the Event is sent.
		a.report.event(corev1.EventTypeWarning, ReasonDeleteFailed, msg)
		return
	}
	logger.Info("Deleted VM", "uid", vm.UID)
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
