package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// Agent keeps one derived VM for one Pod.
type Agent struct {
	cfg     Config
	vms     vmAPI
	vmis    vmiAPI
	revs    revisionAPI
	pods    podAPI
	kube    kubernetes.Interface
	status  *readiness
	report  reporter
	metrics *metrics

	// pod is cfg.Pod with Node and PodUID filled in.
	pod Identity
	// final ends cfg.DeleteTimeout after the shutdown signal: the one
	// deadline for all the work the agent still does then.
	final context.Context
	// cutShort names a VM whose create the final deadline cut short: it
	// may exist, and the agent cannot tell.
	cutShort string
	// warnedGrace is set once the guest's grace period was found too long;
	// warnedEviction once the prototype's eviction strategy was overridden.
	warnedGrace, warnedEviction bool
	// evacuation is where a stop for a drain stands (evacuationState).
	evacuation atomic.Int32
	// wasReady remembers the last readiness logged, to log changes only.
	wasReady bool
	// vmLost is set when someone else deleted the agent's VM: the next VM
	// it makes is a recreation.
	vmLost bool
	// resized is set once the agent gave back the room its Pod held for
	// its VM (giveBack).
	resized atomic.Bool
	// handover is where the handing of that room to the VM's launcher Pod
	// stands (handOver); it lasts at most handoverGrace after the room is
	// given back, on clock, which tests advance themselves.
	handover handover
	clock    clock.Clock
	// reservationStale is set once the VM's launcher Pod was seen to ask
	// for another size than the Pod's template holds (checkReservation).
	reservationStale atomic.Bool
	// latest is the VM as observe last saw it.
	latest atomic.Pointer[kubevirtv1.VirtualMachine]
	// observing serializes observe: the VM's watch and the end of a
	// handover both call it.
	observing sync.Mutex
	// move gives up the node when the VM cannot be scheduled on it.
	move *mover
	// own follows the Pod's VM by name, from the first attempt to make
	// one until the agent stops (followOwn); looked is set once the agent
	// has looked for a VM made for its Pod before (madeBefore).
	own    *ownVM
	looked bool
	// stateDir is cfg.StateDir, or "" once the agent found no such
	// directory; recorded is the VM name it holds (record.go).
	stateDir, recorded string
}

// New returns an Agent for cfg, which must have passed Validate.
func New(cfg Config, kv kubevirt.Interface, kube kubernetes.Interface, dyn dynamic.Interface) *Agent {
	return newAgent(cfg, kubevirtVMs{kv}, kubevirtVMs{kv}, kubeRevisions{dyn}, kube)
}

func newAgent(cfg Config, vms vmAPI, vmis vmiAPI, revs revisionAPI, kube kubernetes.Interface) *Agent {
	m := newMetrics(time.Now())
	status := newReadiness(ReadyzStarting, m.setReady)
	a := &Agent{
		cfg:     cfg,
		final:   context.Background(),
		vms:     countingVMs{vms, m},
		vmis:    countingVMIs{vmis, m},
		revs:    countingRevisions{revs, m},
		pods:    countingPods{kubePods{kube}, m},
		kube:    kube,
		status:  status,
		report:  reporter{status: status, metrics: m},
		metrics: m,
	}
	a.stateDir = cfg.StateDir
	a.handover.vmChanged = make(chan struct{}, 1)
	a.clock = clock.RealClock{}
	a.move = &mover{after: cfg.MoveAfter, giveUp: a.giveUp}
	return a
}

// Handler serves /healthz, /readyz and /metrics, as Run does on
// cfg.ProbeAddress.
func (a *Agent) Handler() http.Handler {
	return probeHandler(a.status, a.metrics.handler())
}

// VMName is the derived VM's name.
func (a *Agent) VMName() string {
	return derive.Name(a.cfg.Prototype, a.cfg.Pod.PodName, a.cfg.Pod.PodUID)
}

// Run serves the probes, creates the derived VM and keeps it until ctx is
// canceled (the shutdown signal), then deletes it and waits until it is
// gone. cfg.DeleteTimeout after the signal, whatever is still going on (a
// create in flight, the delete, the wait) gives up. Problems before the
// signal are retried, never fatal. Run returns an error when it cannot serve
// the probes, and when the VM may outlive the Pod: it could not be deleted
// in time, or a create was cut short. An Event still being sent when Run
// returns is abandoned, though client-go's sender may log that a moment
// later.
func (a *Agent) Run(ctx context.Context) error {
	a.metrics.start = time.Now()
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
	final, stopFinal := shutdownDeadline(ctx, a.cfg.DeleteTimeout)
	defer stopFinal()
	a.final = final

	var owned *kubevirtv1.VirtualMachine
	if a.resolvePod(ctx) {
		a.report.startEvents(ectx, a.kube.CoreV1(), a.pod)
		owned = a.keep(ctx)
	}
	return a.release(ctx, owned)
}

// shutdownDeadline returns a context that ends d after ctx does, and not
// before.
func shutdownDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	final, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		time.AfterFunc(d, func() {
			cancel(fmt.Errorf("the shutdown deadline (--delete-timeout=%v after the signal) passed", d))
		})
	})
	return final, func() {
		stop()
		cancel(context.Canceled)
	}
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
			p.msg = fmt.Sprintf("looking up Pod %s for its node and UID: not found; set %s and %s through the downward API, or --hostname-override to the Pod's name", ref, contract.EnvNodeName, contract.EnvPodUID)
		default:
			p.msg = fmt.Sprintf("looking up Pod %s for its node and UID: %v; set %s and %s through the downward API", ref, err, contract.EnvNodeName, contract.EnvPodUID)
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
		a.vmLost = true
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
	if a.needsLauncher() {
		// The VM is made while the Pod still holds its room: hand it over.
		a.handover.set(a.holdsRoom())
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		go a.handOver(hctx, vm)
	}
	wasReady = a.observe(ctx, vm)
	ref := vm.Namespace + "/" + vm.Name
	if a.cfg.StopOnEvacuation || a.cfg.EvictOnEvacuation {
		ectx, stop := context.WithCancel(ctx)
		defer stop()
		go a.onEvacuation(ectx, vm)
	}
	_ = a.followOwn(vm.Name).wait(ctx, func(err error) bool {
		a.report.fail(ctx, watchProblem(ref, err))
		return false // the reflector retries; readiness returns with the VM
	}, func() bool {
		cur, reached := a.own.byUID(vm.UID, vm.ResourceVersion)
		switch {
		case !reached || cur == latest:
			// Not yet in, or unchanged.
			return false
		case cur == nil:
			// Deleted, and perhaps its name taken by another VM while the
			// watch was down.
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

// The states of a stop for a drain: the agent deleted the VMI, then saw the
// VM not ready or a new VMI ready (vmiReplaced); when the VM is ready again,
// the stop is over. Until the VM was seen down, its status may still say
// ready from before the stop.
const (
	notEvacuated int32 = iota
	evacuationStopping
	evacuationDown
)

// observe mirrors vm's status.ready on /readyz and logs changes.
func (a *Agent) observe(ctx context.Context, vm *kubevirtv1.VirtualMachine) bool {
	a.observing.Lock()
	defer a.observing.Unlock()
	return a.observeLocked(ctx, vm)
}

// observeAgain looks again at the VM as observe last saw it, if it is the
// VM of uid. It reads that VM under observe's lock: read before, it could
// be older than one the watch observes meanwhile, and its state would
// then overwrite the newer one's.
func (a *Agent) observeAgain(ctx context.Context, uid types.UID) {
	a.observing.Lock()
	defer a.observing.Unlock()
	if cur := a.latest.Load(); cur != nil && cur.UID == uid {
		a.observeLocked(ctx, cur)
	}
}

// observeLocked is observe, with its lock held.
func (a *Agent) observeLocked(ctx context.Context, vm *kubevirtv1.VirtualMachine) bool {
	a.latest.Store(vm)
	ready := vm.Status.Ready && vm.DeletionTimestamp == nil
	switch a.evacuation.Load() {
	case evacuationStopping:
		if !ready {
			a.evacuation.CompareAndSwap(evacuationStopping, evacuationDown)
		}
		ready = false
	case evacuationDown:
		if ready && a.evacuation.CompareAndSwap(evacuationDown, notEvacuated) {
			klog.FromContext(ctx).Info("VM back after its stop for a drain")
		}
	}
	stuckIn, isStuck := stuck.Of(vm)
	// While the Pod hands its room to the VM's launcher Pod, the launcher
	// Pod waits for it: unschedulable, or refused by a quota that counts
	// the room twice, by design.
	handingOver := isStuck && a.handover.inProgress() &&
		(stuckIn.Reason == stuck.ReasonUnschedulable || stuckIn.Reason == stuck.ReasonLauncherRefused)
	// A Pod whose template holds too little for its VM does not move: its
	// replacement would hold as little.
	a.move.notice(ctx, isStuck && !handingOver && !a.reservationStale.Load() &&
		stuckIn.Reason == stuck.ReasonUnschedulable && a.evacuation.Load() == notEvacuated)
	switch {
	case ready:
		a.status.set(true, "")
		a.metrics.becameReady(time.Now())
	case vm.DeletionTimestamp != nil:
		a.status.set(false, ReadyzVMDeleting)
	case a.evacuation.Load() != notEvacuated:
		a.status.set(false, strings.TrimSuffix(ReadyzEvacuated+": "+string(vm.Status.PrintableStatus), ": "))
	case handingOver:
		a.status.set(false, ReadyzHandingOver)
	case isStuck:
		// A state KubeVirt does not leave by itself: say why at once, in
		// the words status uses, one Event per cause.
		a.report.fail(ctx, &problem{reason: stuckIn.Reason, msg: stuckIn.Message})
	case vm.Status.PrintableStatus != "":
		a.status.set(false, ReadyzVMNotReady+": "+string(vm.Status.PrintableStatus))
	default:
		a.status.set(false, ReadyzVMNotReady)
	}
	if !ready && vm.DeletionTimestamp == nil && a.evacuation.Load() == notEvacuated && !handingOver {
		// The likeliest cause of a VM that does not come up on a node
		// that has less room than the VM needs; the Events say more.
		if a.reservationStale.Load() && isStuck {
			a.status.set(false, ReasonReservationStale)
		}
	}
	notify(a.handover.vmChanged)
	if ready != a.wasReady {
		a.wasReady = ready
		klog.FromContext(ctx).Info("VM readiness changed", "ready", ready, "status", vm.Status.PrintableStatus)
	}
	// Each state observed, for debugging; tests wait for it before they
	// check that a state changed nothing.
	klog.FromContext(ctx).V(4).Info("Observed the VM", "resourceVersion", vm.ResourceVersion, "status", vm.Status.PrintableStatus, "ready", ready)
	return ready
}

// release deletes the VM the agent owns, if any, when the Pod is told to
// stop, within the final deadline. It returns an error when the VM may
// outlive the Pod.
func (a *Agent) release(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	logger := klog.FromContext(ctx)
	a.status.set(false, ReadyzShuttingDown)
	logger.Info("Shutting down", "cause", context.Cause(ctx))
	var err error
	switch {
	case vm != nil:
		start := time.Now()
		if err = a.deleteAndWait(a.final, vm); err != nil {
			err = fmt.Errorf("VM %s/%s may outlive the Pod: %w", vm.Namespace, vm.Name, err)
			break
		}
		took := time.Since(start)
		a.metrics.shutdown.Observe(took.Seconds())
		logger.Info("Deleted VM", "uid", vm.UID, "took", took.Round(time.Millisecond))
		return nil
	case a.cutShort != "":
		err = fmt.Errorf("VM %s/%s may outlive the Pod: its create was still going on when the shutdown deadline passed; "+
			"delete it if it exists, and give the Pod a longer terminationGracePeriodSeconds", a.cfg.Namespace, a.cutShort)
	default:
		logger.Info("No VM to delete")
		return nil
	}
	logger.Error(err, "VM may outlive the Pod", "timeout", a.cfg.DeleteTimeout)
	// Best effort: the process may exit before the Event is sent.
	a.report.event(corev1.EventTypeWarning, ReasonDeleteFailed, err.Error())
	return err
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
