package main

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// The autoscaling step's numbers. Four guests at busyCPU of their one vCPU
// (90 %) against a target of 50 % want 4 × 90 / 50 = 7.2, so 8 VMs:
// maxVMs caps them. At idleCPU (5 %), 6 × 5 / 50 wants 1: minVMs holds 2.
const (
	busyCPU      = "900m"
	idleCPU      = "50m"
	minVMs       = 2
	maxVMs       = 6
	targetPct    = 50
	usageCPUAnno = "kwok.x-k8s.io/usage-cpu"
)

// scaleTimeout bounds each wait for the HPA. metrics-server reports a
// changed usage after one or two scrapes (metricsserver.Resolution apart),
// the adapter and the HPA (every 2 s here) follow within seconds; a busy
// 2-core machine stretches that, as the e2e suite's bound for the same
// wait allows.
const scaleTimeout = 4 * time.Minute

// autoscale starts metrics-server and vmctl-metrics-adapter, makes the
// guests busy (kwok's simulated CPU), puts web under an HPA of kubectl
// vmctl autoscale, waits until it scaled web out to maxVMs with every VM
// ready, shows top and the HPA, then idles the guests and waits until the
// HPA scaled web back in to minVMs.
func (r *demoRunner) autoscale(ctx context.Context, c *testcluster.Cluster, proto, workload string, build *backgroundBuild, adapterBinary string) error {
	r.step("Autoscaling on the guests' own CPU: metrics-server and vmctl-metrics-adapter")
	r.printf("\nIn a cluster, metrics-server's manifests and `kubectl vmctl scaffold metrics-adapter -n vmctl-system | kubectl apply -f -`\n" +
		"install them. Here both run as processes on loopback, behind their APIServices (scaffold's, for the adapter).\n")
	msBinary, err := build.wait(ctx, r)
	if err != nil {
		return fmt.Errorf("build metrics-server: %w", err)
	}
	ms, err := metricsserver.Start(ctx, c, metricsserver.Options{Binary: msBinary, Log: r.errOut})
	if err != nil {
		return err
	}
	adapter, err := metricsadapter.Start(ctx, c, metricsadapter.Options{Binary: adapterBinary, Namespace: metav1.NamespaceSystem, Log: r.errOut})
	if err != nil {
		return err
	}
	// The cluster's Stop stops both (they registered with OnStop).
	logs := fmt.Sprintf("their logs, %s and %s", c.LogFile(metricsserver.Name), adapter.LogFile())
	r.printf("metrics-server up in %s, vmctl-metrics-adapter in %s; %s\n",
		ms.StartupTime.Round(100*time.Millisecond), adapter.StartupTime.Round(100*time.Millisecond), logs)

	r.step("The guests get busy. Simulated: nothing runs in them here; kwok reports each launcher Pod's CPU from its annotation " + usageCPUAnno)
	if err := r.run(ctx, "kubectl", "annotate", "pods", "-l", "kubevirt.io=virt-launcher", usageCPUAnno+"="+busyCPU, "--overwrite"); err != nil {
		return err
	}

	r.step(fmt.Sprintf("An HPA keeps %s's guests %d %% busy on average, with %d to %d VMs", workload, targetPct, minVMs, maxVMs))
	if err := r.run(ctx, "kubectl", "vmctl", "autoscale", "deployment", workload,
		fmt.Sprintf("--min=%d", minVMs), fmt.Sprintf("--max=%d", maxVMs), fmt.Sprintf("--vm-cpu-percent=%d", targetPct)); err != nil {
		return err
	}
	r.printf("\nAn HPA scales in only after 5 minutes of lower figures; the demo's scales in at once:\n")
	if err := r.run(ctx, "kubectl", "patch", "hpa", workload, "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`); err != nil {
		return err
	}
	took, hpa, err := r.waitScaled(ctx, workload, maxVMs, logs)
	if err != nil {
		return err
	}
	r.printf("the HPA scaled %s out to %d after %s: its guests' CPU averaged %s of their vCPUs against a target of %d %%;\n"+
		"4 × 90 / %d = 7.2 asks for 8 VMs, and --max=%d caps them\n", workload, maxVMs, took, averageOf(hpa), targetPct, targetPct, maxVMs)
	if err := r.waitPaired(ctx, proto, workload, maxVMs); err != nil {
		return err
	}
	r.printf("\nThe new guests start idle (kwok's default, 1m). A guest shows <none> until metrics-server has scraped its launcher twice.\n")
	if err := r.run(ctx, "kubectl", "vmctl", "top"); err != nil {
		return err
	}
	if err := r.getHPA(ctx, workload, maxVMs); err != nil {
		return err
	}

	r.step("The guests idle (simulated as before): the HPA scales " + workload + " back in")
	if err := r.run(ctx, "kubectl", "annotate", "pods", "-l", "kubevirt.io=virt-launcher", usageCPUAnno+"="+idleCPU, "--overwrite"); err != nil {
		return err
	}
	took, hpa, err = r.waitScaled(ctx, workload, minVMs, logs)
	if err != nil {
		return err
	}
	r.printf("the HPA scaled %s in to %d after %s: its guests' CPU averaged %s against %d %%, which asks for 1 VM, and --min=%d keeps %d;\n"+
		"the Pods it removed took their VMs along\n", workload, minVMs, took, averageOf(hpa), targetPct, minVMs, minVMs)
	if err := r.waitPaired(ctx, proto, workload, minVMs); err != nil {
		return err
	}
	return r.getHPA(ctx, workload, minVMs)
}

// getHPA runs `kubectl get hpa` once the HPA's status counts want
// replicas: it reads them from the workload at its next sync, and Pods
// that are going still count until they are gone. A status that lags
// past demoTimeout is shown as it is.
func (r *demoRunner) getHPA(ctx context.Context, workload string, want int32) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, r.timeout, true, func(ctx context.Context) (bool, error) {
		h, err := r.kube.AutoscalingV2().HorizontalPodAutoscalers(demoNamespace).Get(ctx, workload, metav1.GetOptions{})
		return err == nil && h.Status.CurrentReplicas == want, nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.printf("\n(the HPA's status still does not count %d replicas after %s)\n", want, r.timeout)
	}
	return r.run(ctx, "kubectl", "get", "hpa")
}

// waitScaled waits until the HPA named workload has set the Deployment's
// replicas to want, and returns how long that took and the HPA as it then
// was. It gives up after scaleTimeout, saying what the HPA last said and
// pointing at logs.
func (r *demoRunner) waitScaled(ctx context.Context, workload string, want int32, logs string) (time.Duration, *autoscalingv2.HorizontalPodAutoscaler, error) {
	r.printf("\nwaiting for the HPA to scale %s to %d...\n", workload, want)
	begin := time.Now()
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	var seen string
	err := wait.PollUntilContextTimeout(ctx, time.Second, scaleTimeout, true, func(ctx context.Context) (bool, error) {
		h, err := r.kube.AutoscalingV2().HorizontalPodAutoscalers(demoNamespace).Get(ctx, workload, metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		hpa, seen = h, metricsadapter.DescribeHPA(h)
		d, err := r.kube.AppsV1().Deployments(demoNamespace).Get(ctx, workload, metav1.GetOptions{})
		if err != nil {
			seen = err.Error()
			return false, nil
		}
		return ptr.Deref(d.Spec.Replicas, 0) == want, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return 0, nil, fmt.Errorf("the HPA did not scale %s to %d within %s (last seen: %s); see `kubectl describe hpa %s`, and %s",
			workload, want, scaleTimeout, seen, workload, logs)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("waiting for the HPA to scale %s to %d: %w (last seen: %s)", workload, want, err, seen)
	}
	return time.Since(begin).Round(time.Second), hpa, nil
}

// averageOf is the average of the HPA's Pods metric as it last read it.
func averageOf(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	for _, m := range hpa.Status.CurrentMetrics {
		if m.Pods != nil && m.Pods.Current.AverageValue != nil {
			return fmt.Sprintf("%.0f %%", m.Pods.Current.AverageValue.AsApproximateFloat64())
		}
	}
	return "an unknown share"
}
