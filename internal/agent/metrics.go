package agent

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Values of the reason label of vmctl_agent_vms_total: how the agent came to
// hold its VM. All but Recreated are also the reasons of the Events it
// records for them.
const (
	MetricCreated   = ReasonCreated
	MetricRecreated = "Recreated"
	MetricAdopted   = ReasonAdopted
	MetricReplaced  = ReasonReplaced
)

// metrics are what the agent serves on /metrics, in a registry of its own:
// no package-level state, so every Agent (and every test) counts apart.
//
// The library is Prometheus' own client_golang, not Kubernetes'
// component-base/metrics: that wraps the same library with stability levels
// and a process-wide legacy registry, which a single-purpose agent has no use
// for, and would link Kubernetes' feature gates and version packages too.
type metrics struct {
	registry *prometheus.Registry
	// start is when the agent started, for the start-to histograms.
	start time.Time

	vmReady       prometheus.Gauge
	vms           *prometheus.CounterVec
	apiErrors     *prometheus.CounterVec
	watchRestarts prometheus.Counter
	toCreated     prometheus.Histogram
	toReady       prometheus.Histogram
	shutdown      prometheus.Histogram

	// createdSeen and readySeen make the start-to histograms observe once
	// per agent: they measure a start, not the VM's later life.
	createdSeen, readySeen bool
}

// startupBuckets span a VM created in tens of milliseconds to one whose
// guest takes minutes to boot.
var startupBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

func newMetrics(start time.Time) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		start:    start,
		vmReady: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vmctl_agent_vm_ready",
			Help: "1 while the derived VM is ready (the Pod's readiness), else 0.",
		}),
		vms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmctl_agent_vms_total",
			Help: "VMs the agent took charge of, by reason: Created (its first), Recreated (after someone else deleted it), " +
				"Adopted (made earlier for this Pod, by a restarted container), Replaced (left by an earlier Pod of the same name).",
		}, []string{"reason"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vmctl_agent_api_errors_total",
			Help: "Requests to the API server that failed, by verb (get, list, watch, create, delete, patch, evict).",
		}, []string{"verb"}),
		watchRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vmctl_agent_watch_restarts_total",
			Help: "Watches opened again after the first of a follow: after a timeout, a dropped connection, 410 Gone or an API server restart.",
		}),
		toCreated: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vmctl_agent_start_to_vm_created_seconds",
			Help:    "Time from the agent's start to its VM created (not observed when it adopted one).",
			Buckets: startupBuckets,
		}),
		toReady: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vmctl_agent_start_to_vm_ready_seconds",
			Help:    "Time from the agent's start to its VM first ready.",
			Buckets: startupBuckets,
		}),
		shutdown: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vmctl_agent_shutdown_vm_deletion_seconds",
			Help: "Time from the shutdown signal's deletion request to the VM gone. Observed as the agent exits, " +
				"so only a scrape in that moment sees it; the agent's log line \"Deleted VM\" carries it too.",
			Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 300},
		}),
	}
	m.vmReady.Set(0)
	for _, r := range []string{MetricCreated, MetricRecreated, MetricAdopted, MetricReplaced} {
		m.vms.WithLabelValues(r) // present at 0, so rate() sees the first
	}
	// The Go runtime's metrics (goroutines, heap, GC), but not the process
	// collector's: the kubelet already reports the container's CPU and
	// memory, and reading /proc on every scrape left the agent 0.8 MiB
	// more private memory after ten scrapes (measured).
	m.registry.MustRegister(m.vmReady, m.vms, m.apiErrors, m.watchRestarts, m.toCreated, m.toReady, m.shutdown,
		collectors.NewGoCollector())
	return m
}

// handler serves the registry in Prometheus' text format (or OpenMetrics,
// when the scraper asks for it).
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		// A scrape may come while the agent is busy; never let one pile up
		// behind another.
		MaxRequestsInFlight: 2,
		Timeout:             4 * time.Second,
		// A few kilobytes are not worth gzip's buffers: with them, ten
		// scrapes left the agent 3 MiB more private memory (measured).
		DisableCompression: true,
	})
}

// setReady mirrors readiness on the gauge.
func (m *metrics) setReady(ready bool) {
	if ready {
		m.vmReady.Set(1)
		return
	}
	m.vmReady.Set(0)
}

// tookVM counts a VM the agent now holds, and the first creation since the
// start. Called from the agent's one goroutine.
func (m *metrics) tookVM(reason string, now time.Time) {
	m.vms.WithLabelValues(reason).Inc()
	if reason != MetricAdopted && !m.createdSeen {
		m.createdSeen = true
		m.toCreated.Observe(now.Sub(m.start).Seconds())
	}
}

// becameReady observes the first time the VM is ready.
func (m *metrics) becameReady(now time.Time) {
	if !m.readySeen {
		m.readySeen = true
		m.toReady.Observe(now.Sub(m.start).Seconds())
	}
}

// apiError counts a failed request of verb, when err is one.
func (m *metrics) apiError(verb string, err error) {
	if err != nil {
		m.apiErrors.WithLabelValues(verb).Inc()
	}
}

// countingVMs counts the failed requests of a vmAPI by verb.
type countingVMs struct {
	vmAPI
	m *metrics
}

func (c countingVMs) get(ctx context.Context, namespace, name string) (*kubevirtv1.VirtualMachine, error) {
	vm, err := c.vmAPI.get(ctx, namespace, name)
	c.m.apiError("get", err)
	return vm, err
}

func (c countingVMs) create(ctx context.Context, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	created, err := c.vmAPI.create(ctx, vm)
	c.m.apiError("create", err)
	return created, err
}

func (c countingVMs) delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	err := c.vmAPI.delete(ctx, namespace, name, opts)
	c.m.apiError("delete", err)
	return err
}

func (c countingVMs) list(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineList, error) {
	list, err := c.vmAPI.list(ctx, namespace, sel, opts)
	c.m.apiError("list", err)
	return list, err
}

func (c countingVMs) watch(ctx context.Context, namespace string, sel kube.Selector, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.vmAPI.watch(ctx, namespace, sel, opts)
	c.m.apiError("watch", err)
	return w, err
}

// countingPods counts the failed requests of a podAPI.
type countingPods struct {
	podAPI
	m *metrics
}

func (c countingPods) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := c.podAPI.getPod(ctx, namespace, name)
	c.m.apiError("get", err)
	return pod, err
}

func (c countingPods) resize(ctx context.Context, namespace, name string, patch []byte) error {
	err := c.podAPI.resize(ctx, namespace, name, patch)
	c.m.apiError("patch", err)
	return err
}

func (c countingPods) evict(ctx context.Context, namespace, name string, uid types.UID) error {
	err := c.podAPI.evict(ctx, namespace, name, uid)
	c.m.apiError("evict", err)
	return err
}

func (c countingPods) podsIn(namespace string) kube.ListerWatcher[*corev1.PodList] {
	return countingPodList{c.podAPI.podsIn(namespace), c.m}
}

func (c countingPods) nominate(ctx context.Context, namespace, name, node string) error {
	err := c.podAPI.nominate(ctx, namespace, name, node)
	c.m.apiError("patch", err)
	return err
}

// countingPodList counts the failed lists and watches of Pods.
type countingPodList struct {
	kube.ListerWatcher[*corev1.PodList]
	m *metrics
}

func (c countingPodList) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	list, err := c.ListerWatcher.List(ctx, opts)
	c.m.apiError("list", err)
	return list, err
}

func (c countingPodList) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.ListerWatcher.Watch(ctx, opts)
	c.m.apiError("watch", err)
	return w, err
}

// countingEvents counts the failed requests of an EventSink: client-go's
// broadcaster creates an Event, then patches it for repeats.
type countingEvents struct {
	record.EventSink
	m *metrics
}

func (c countingEvents) Create(event *corev1.Event) (*corev1.Event, error) {
	e, err := c.EventSink.Create(event)
	c.m.apiError("create", err)
	return e, err
}

func (c countingEvents) Update(event *corev1.Event) (*corev1.Event, error) {
	e, err := c.EventSink.Update(event)
	c.m.apiError("update", err)
	return e, err
}

func (c countingEvents) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	e, err := c.EventSink.Patch(event, data)
	c.m.apiError("patch", err)
	return e, err
}

// countingVMIs counts the failed requests of a vmiAPI.
type countingVMIs struct {
	vmiAPI
	m *metrics
}

func (c countingVMIs) listVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*kubevirtv1.VirtualMachineInstanceList, error) {
	list, err := c.vmiAPI.listVMI(ctx, namespace, name, opts)
	c.m.apiError("list", err)
	return list, err
}

func (c countingVMIs) watchVMI(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.vmiAPI.watchVMI(ctx, namespace, name, opts)
	c.m.apiError("watch", err)
	return w, err
}

func (c countingVMIs) deleteVMI(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	err := c.vmiAPI.deleteVMI(ctx, namespace, name, opts)
	c.m.apiError("delete", err)
	return err
}

// countingRevisions counts the failed requests of a revisionAPI.
type countingRevisions struct {
	revisionAPI
	m *metrics
}

func (c countingRevisions) getRevisions(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	cr, err := c.revisionAPI.getRevisions(ctx, namespace, name)
	c.m.apiError("get", err)
	return cr, err
}

func (c countingRevisions) listRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	list, err := c.revisionAPI.listRevisions(ctx, namespace, name, opts)
	c.m.apiError("list", err)
	return list, err
}

func (c countingRevisions) watchRevisions(ctx context.Context, namespace, name string, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.revisionAPI.watchRevisions(ctx, namespace, name, opts)
	c.m.apiError("watch", err)
	return w, err
}
