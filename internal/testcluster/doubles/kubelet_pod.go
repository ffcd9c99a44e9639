package doubles

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Restart backoff for a crashed agent: shorter than the kubelet's 10s..5m so
// tests see restarts quickly, reset once a process ran for backoffReset.
const (
	backoffInitial = 250 * time.Millisecond
	backoffMax     = 5 * time.Second
	backoffReset   = 10 * time.Second
)

// podWorker runs one agent Pod: its process, restarts, status and deletion.
type podWorker struct {
	k             *Kubelet
	log           *slog.Logger
	pod           *corev1.Pod // as first seen; containers cannot change
	uid           types.UID
	podIP, hostIP string
	dir           string

	parent context.Context    // the kubelet's, for the final delete
	ctx    context.Context    // cancelled by kill
	cancel context.CancelFunc // kill
	done   chan struct{}      // closed when run returns

	termOnce sync.Once
	termCh   chan struct{} // closed by terminate
	grace    time.Duration // written before termCh closes

	statusCh chan struct{} // a state change to report

	mu    sync.Mutex
	state containerRun
	proc  *agentProcess // the running process, nil between processes
}

// agentProcess is one run of the agent binary.
type agentProcess struct {
	cmd       *exec.Cmd
	id        string
	startedAt time.Time
	done      chan struct{} // closed once cmd.Wait returned
}

func (k *Kubelet) newWorker(ctx context.Context, pod *corev1.Pod) *podWorker {
	wctx, cancel := context.WithCancel(ctx)
	now := time.Now()
	w := &podWorker{
		k:        k,
		log:      k.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID),
		pod:      pod.DeepCopy(),
		uid:      pod.UID,
		podIP:    k.allocatePodIP(),
		hostIP:   "127.0.0.1",
		dir:      k.podDir(pod.Namespace, pod.Name),
		parent:   ctx,
		ctx:      wctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		termCh:   make(chan struct{}),
		statusCh: make(chan struct{}, 1),
		state:    containerRun{PodStarted: now, ReadyChanged: now, Resources: *pod.Spec.Containers[0].Resources.DeepCopy()},
	}
	w.notify()
	return w
}

// resize actuates a resize of the container at once, as a kubelet with
// room to spare does: the status reports r as allocated and running.
func (w *podWorker) resize(r corev1.ResourceRequirements) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if equality.Semantic.DeepEqual(w.state.Resources, r) {
		return
	}
	w.state.Resources = *r.DeepCopy()
	w.log.Info("resized", "requests", r.Requests, "limits", r.Limits)
	w.notify()
}

// terminate asks for a graceful stop: SIGTERM, SIGKILL after grace, then the
// Pod's removal. Only the first call counts.
func (w *podWorker) terminate(grace time.Duration) {
	w.termOnce.Do(func() {
		w.grace = grace
		close(w.termCh)
	})
}

func (w *podWorker) terminating() bool {
	select {
	case <-w.termCh:
		return true
	default:
		return false
	}
}

// kill stops the agent with SIGKILL and leaves the Pod alone.
func (w *podWorker) kill() { w.cancel() }

// running reports whether an agent process runs now.
func (w *podWorker) running() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.proc != nil
}

func (w *podWorker) signal(sig os.Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil {
		return fmt.Errorf("the agent of Pod %s/%s is not running now; retry once it restarted", w.pod.Namespace, w.pod.Name)
	}
	return w.proc.cmd.Process.Signal(sig)
}

func (w *podWorker) notify() {
	select {
	case w.statusCh <- struct{}{}:
	default:
	}
}

// run is the worker's life: run the agent until the Pod is deleted or gone,
// then, for a deletion, remove the Pod.
func (w *podWorker) run() {
	defer close(w.done)
	defer w.cancel()
	statusCtx, stopStatus := context.WithCancel(w.ctx)
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		w.reportStatus(statusCtx)
	}()

	w.runAgent()
	stopStatus()
	<-statusDone
	if w.ctx.Err() == nil && w.terminating() {
		w.removePod()
	}
}

// pause waits for d and reports false if the worker should stop instead.
func (w *podWorker) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.termCh:
		return false
	case <-w.ctx.Done():
		return false
	}
}

// runAgent starts the agent and restarts it when it exits, until the worker
// is told to stop.
func (w *podWorker) runAgent() {
	c := &w.pod.Spec.Containers[0]
	kubeconfig := filepath.Join(w.dir, "kubeconfig")
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		w.setWaiting("CreateContainerError", err.Error())
		w.pause(time.Duration(1<<63 - 1))
		return
	}
	// The ServiceAccount may not exist yet: retry, as the kubelet does.
	backoff := wait.Backoff{Duration: backoffInitial, Factor: 2, Cap: backoffMax, Steps: 1 << 30}
	for {
		if w.terminating() || w.ctx.Err() != nil {
			return
		}
		err := w.k.writeAgentKubeconfig(w.ctx, w.pod, kubeconfig)
		if err == nil {
			break
		}
		w.log.Info("cannot set up the agent's credentials, will retry", "err", err)
		w.setWaiting("CreateContainerConfigError", err.Error())
		if !w.pause(backoff.Step()) {
			return
		}
	}
	env, err := containerEnv(w.pod, c, w.podIP, w.hostIP)
	if err != nil {
		// The spec cannot change, so neither can this.
		w.log.Info("cannot run the agent", "err", err)
		w.setWaiting("CreateContainerConfigError", err.Error())
		w.pause(time.Duration(1<<63 - 1))
		return
	}

	dirs, err := emptyDirs(w.pod, c, w.dir)
	if err != nil {
		w.log.Info("cannot make the Pod's emptyDir volumes", "err", err)
		w.setWaiting("CreateContainerError", err.Error())
		w.pause(time.Duration(1<<63 - 1))
		return
	}

	failures := 0
	for {
		p, probe, err := w.start(c, env, dirs, kubeconfig)
		if err != nil {
			w.log.Info("cannot start the agent", "err", err)
			w.setWaiting("RunContainerError", err.Error())
		} else if !w.supervise(p, probe) {
			return
		}
		if p != nil && time.Since(p.startedAt) >= backoffReset {
			failures = 0
		}
		delay := min(backoffInitial<<failures, backoffMax)
		failures = min(failures+1, 16)
		w.mu.Lock()
		if err == nil {
			w.state.WaitingMessage = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, w.pod.Name, w.pod.Namespace, w.uid)
		}
		w.mu.Unlock()
		w.notify()
		if !w.pause(delay) {
			return
		}
	}
}

// start runs the agent binary once for container c.
func (w *podWorker) start(c *corev1.Container, env []string, dirs map[string]string, kubeconfig string) (*agentProcess, readinessProbe, error) {
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		return nil, readinessProbe{}, err
	}
	probeAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	binary, args := w.k.opts.Binary, agentArgs(c, env)
	if w.k.opts.AgentBinary != "" && len(c.Command) == 0 {
		binary, args = w.k.opts.AgentBinary, args[1:] // no "agent": the image's entrypoint is the agent
	}
	args = append(mountedArgs(args, dirs),
		"--hostname-override="+w.pod.Name,
		"--kubeconfig="+kubeconfig,
		"--probe-address="+probeAddr,
	)
	args = append(args, w.k.opts.Args...)
	logFile, err := os.OpenFile(w.k.LogPath(w.pod.Namespace, w.pod.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, readinessProbe{}, fmt.Errorf("open the agent log: %w", err)
	}
	_, _ = fmt.Fprintf(logFile, "# kubelet double, Pod UID %s: %s %s\n", w.uid, binary, strings.Join(args, " "))

	cmd := exec.Command(binary, args...)
	cmd.Dir = w.dir
	// A container's environment, not the test's: no KUBECONFIG or the like.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "HOSTNAME=" + w.pod.Name}, w.k.opts.Env...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = testcluster.SysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, readinessProbe{}, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &agentProcess{
		cmd:       cmd,
		id:        fmt.Sprintf("process://%d", cmd.Process.Pid),
		startedAt: time.Now(),
		done:      make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()

	w.mu.Lock()
	w.proc = p
	if w.state.Started {
		w.state.Restarts++
	}
	w.state.Started, w.state.Running = true, true
	w.state.StartedAt, w.state.ContainerID = p.startedAt, p.id
	w.state.WaitingReason, w.state.WaitingMessage = "", ""
	restarts := w.state.Restarts
	w.mu.Unlock()
	w.notify()
	w.log.Info("started agent", "pid", cmd.Process.Pid, "probe", probeAddr, "restarts", restarts)
	return p, readinessProbeFor(c, probeAddr, w.k.probeAsSpecified.Load()), nil
}

// supervise probes p until it ends. It reports true when p exited on its own
// (restart it), false when the worker stopped it (termination or kill).
func (w *podWorker) supervise(p *agentProcess, probe readinessProbe) bool {
	probeCtx, stopProbe := context.WithCancel(w.ctx)
	defer stopProbe()
	go probe.run(probeCtx, func(ready bool) { w.setReady(p, ready) })

	select {
	case <-p.done:
		w.exited(p)
		return !w.terminating() && w.ctx.Err() == nil
	case <-w.termCh:
		if w.grace <= 0 {
			// A force delete, seen as an update before the Pod goes: the
			// agent gets no chance to clean up. (A real kubelet would still
			// allow 2s after SIGTERM; this double tests the worst case.)
			w.log.Info("Pod force-deleted, sending SIGKILL", "pid", p.cmd.Process.Pid)
			_ = p.cmd.Process.Kill()
			<-p.done
			break
		}
		w.log.Info("Pod deleted, sending SIGTERM", "pid", p.cmd.Process.Pid, "grace", w.grace)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(w.grace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			w.log.Info("grace period over, sending SIGKILL", "pid", p.cmd.Process.Pid)
			_ = p.cmd.Process.Kill()
			<-p.done
		case <-w.ctx.Done():
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	case <-w.ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	w.exited(p)
	return false
}

func (w *podWorker) setReady(p *agentProcess, ready bool) {
	w.mu.Lock()
	if w.proc != p || w.state.Ready == ready {
		w.mu.Unlock()
		return
	}
	w.state.Ready, w.state.ReadyChanged = ready, time.Now()
	w.mu.Unlock()
	w.log.Info("readiness changed", "ready", ready)
	w.notify()
}

// exited records the end of p.
func (w *podWorker) exited(p *agentProcess) {
	state := p.cmd.ProcessState
	code, sig := state.ExitCode(), 0
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig = int(ws.Signal())
	}
	w.mu.Lock()
	if w.proc == p {
		w.proc = nil
	}
	if w.state.Ready {
		w.state.Ready, w.state.ReadyChanged = false, time.Now()
	}
	w.state.Running = false
	w.state.LastExit = exitState(code, sig, p.startedAt, time.Now(), p.id)
	w.state.WaitingReason, w.state.WaitingMessage = "CrashLoopBackOff", ""
	w.mu.Unlock()
	w.log.Info("agent exited", "pid", p.cmd.Process.Pid, "state", state.String())
	w.notify()
}

func (w *podWorker) setWaiting(reason, message string) {
	w.mu.Lock()
	w.state.WaitingReason, w.state.WaitingMessage = reason, message
	w.mu.Unlock()
	w.notify()
}

// reportStatus patches the Pod's status whenever what the worker knows
// changes the status it would report.
func (w *podWorker) reportStatus(ctx context.Context) {
	pods := w.k.client.CoreV1().Pods(w.pod.Namespace)
	c := &w.pod.Spec.Containers[0]
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.statusCh:
		}
		w.mu.Lock()
		state := w.state
		w.mu.Unlock()
		patch, err := podStatusPatch(w.uid, podStatusFor(c, w.podIP, w.hostIP, state))
		if err != nil {
			w.log.Error("cannot encode the Pod status", "err", err)
			continue
		}
		if bytes.Equal(patch, last) {
			continue
		}
		_, err = pods.Patch(ctx, w.pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		switch {
		case err == nil:
			last = patch
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil:
			// Gone or replaced: sync kills this worker.
		default:
			w.log.Info("cannot update the Pod status, will retry", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				w.notify()
			}
		}
	}
}

// removePod deletes the Pod at the end of a graceful deletion, as the kubelet
// does once the containers are gone: grace period 0, only this Pod's UID.
func (w *podWorker) removePod() {
	opts := metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	}
	backoff := wait.Backoff{Duration: backoffInitial, Factor: 2, Cap: backoffMax, Steps: 10}
	err := wait.ExponentialBackoffWithContext(w.parent, backoff, func(ctx context.Context) (bool, error) {
		err := w.k.client.CoreV1().Pods(w.pod.Namespace).Delete(ctx, w.pod.Name, opts)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return true, nil
		}
		w.log.Info("cannot remove the Pod, will retry", "err", err)
		return false, nil
	})
	if err != nil {
		w.log.Error("gave up removing the Pod", "err", err)
		return
	}
	w.log.Info("agent exited, Pod removed")
}
