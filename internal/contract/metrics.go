package contract

// The custom metrics vmctl-metrics-adapter serves of agent Pods
// (custom.metrics.k8s.io), which HPAs scaffold and autoscale write name.
const (
	// MetricVMCPUUsage is the CPU, in cores, that the agent Pod's VM uses:
	// its launcher's compute container, where qemu runs the guest's vCPUs
	// (and does its own small share of work).
	MetricVMCPUUsage = "vm_cpu_usage"
	// MetricVMCPUUtilization is that CPU as a percentage of the VM's
	// vCPUs: 100 is every vCPU busy all the time.
	MetricVMCPUUtilization = "vm_cpu_utilization"
)
