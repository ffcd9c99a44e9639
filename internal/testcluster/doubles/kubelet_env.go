package doubles

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet double's pure half for a container's environment and command
// line, resolved the way the kubelet does it.

// containerEnv resolves c's environment for pod like the kubelet: literal
// values, with $(VAR) references to variables defined before them expanded,
// and downward-API field references. podIP and hostIP stand in for the
// status fields, which the kubelet knows before it writes them. ConfigMap,
// Secret references are not supported: the error says which. A resource
// reference reads the container's own spec (the kubelet reads what it
// allocated, which is the spec on a node that admitted the Pod).
func containerEnv(pod *corev1.Pod, c *corev1.Container, podIP, hostIP string) ([]string, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not supported by the kubelet double; use env with value or fieldRef", c.Name)
	}
	env := make([]string, 0, len(c.Env))
	defined := map[string]string{}
	for _, e := range c.Env {
		value := e.Value
		switch {
		case e.ValueFrom == nil:
			value = expandVars(value, defined)
		case e.ValueFrom.FieldRef != nil:
			v, err := podFieldValue(pod, e.ValueFrom.FieldRef.FieldPath, podIP, hostIP)
			if err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
			value = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := resourceFieldValue(c, e.ValueFrom.ResourceFieldRef)
			if err != nil {
				return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
			}
			value = v
		default:
			return nil, fmt.Errorf("container %s: env %s: only value, fieldRef and resourceFieldRef are supported by the kubelet double", c.Name, e.Name)
		}
		defined[e.Name] = value
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// podFieldValue returns the value of a downward-API fieldPath that env
// variables may use.
func podFieldValue(pod *corev1.Pod, path, podIP, hostIP string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	return "", fmt.Errorf("fieldPath %q is not supported", path)
}

// subscript returns key for a path of the form prefix['key'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// expandVars expands $(VAR) references to the variables in defined, as the
// kubelet does for env values, command and args: $$ is a literal $, and a
// reference to an undefined variable stays as written.
func expandVars(s string, defined map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if v, ok := defined[s[i+2:i+2+end]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += len(ref) - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// agentArgs returns the arguments for the agent binary: the container's
// command without its first word (the image runs `kubectl-vmctl agent`, and
// the double runs the binary it was given instead) and its args, with $(VAR)
// references expanded from env (NAME=value pairs).
func agentArgs(c *corev1.Container, env []string) []string {
	defined := make(map[string]string, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		defined[name] = value
	}
	var args []string
	if len(c.Command) > 0 {
		for _, a := range c.Command[1:] {
			args = append(args, expandVars(a, defined))
		}
	} else {
		args = append(args, "agent")
	}
	for _, a := range c.Args {
		args = append(args, expandVars(a, defined))
	}
	return args
}

// resourceFieldValue is a container's request or limit in units of the
// divisor, rounded up, as the kubelet's ExtractContainerResourceValue
// writes it; a limit not set is left out here (the kubelet would write the
// node's allocatable).
func resourceFieldValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	list := c.Resources.Requests
	switch {
	case !ok:
		return "", fmt.Errorf("resource %q is not requests.NAME or limits.NAME", ref.Resource)
	case kind == "limits":
		list = c.Resources.Limits
	case kind != "requests":
		return "", fmt.Errorf("resource %q is not requests.NAME or limits.NAME", ref.Resource)
	}
	q := list[corev1.ResourceName(name)]
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// emptyDirs makes, under podDir, a directory for each emptyDir volume that
// c mounts, one set per Pod UID, and returns them by mount path. The
// double runs the agent as a host process, with no mount namespace of its
// own: what the container would find at a mount path, the process finds in
// that directory, and mountedArgs points its arguments there. Like an
// emptyDir, the directories outlive restarts of the process, not the Pod.
func emptyDirs(pod *corev1.Pod, c *corev1.Container, podDir string) (map[string]string, error) {
	empty := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		empty[v.Name] = v.EmptyDir != nil
	}
	dirs := map[string]string{}
	for _, m := range c.VolumeMounts {
		if !empty[m.Name] {
			continue
		}
		dir := filepath.Join(podDir, "volumes", string(pod.UID), m.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		dirs[m.MountPath] = dir
	}
	return dirs, nil
}

// mountedArgs returns args with each value that is a mount path of dirs,
// or a path below one (as --flag=PATH or PATH), pointing into its
// directory instead.
func mountedArgs(args []string, dirs map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		prefix, value, ok := strings.Cut(a, "=")
		if !ok {
			prefix, value = "", a
		} else {
			prefix += "="
		}
		for path, dir := range dirs {
			if value == path || strings.HasPrefix(value, path+"/") {
				value = dir + strings.TrimPrefix(value, path)
			}
		}
		out[i] = prefix + value
	}
	return out
}
