package scaffold

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// ParseServicePort parses "PORT" or "PORT:TARGETPORT", where TARGETPORT is a
// number or a port name, as `kubectl expose --port --target-port` take them.
func ParseServicePort(s string) (*ServicePort, error) {
	port, target, hasTarget := strings.Cut(s, ":")
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("invalid service port %q: use PORT or PORT:TARGETPORT with ports from 1 to 65535, such as 80:8080", s)
	}
	sp := &ServicePort{Port: int32(n)}
	if hasTarget {
		if target == "" {
			return nil, fmt.Errorf("invalid service port %q: TARGETPORT after ':' is empty; use PORT or PORT:TARGETPORT such as 80:8080", s)
		}
		sp.TargetPort = intstr.Parse(target)
		if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal == 0 {
			return nil, fmt.Errorf("invalid service target port %q: use a port from 1 to 65535 or a port name", target)
		}
		if err := validateTargetPort(sp.TargetPort); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// ParseMinAvailable parses a PodDisruptionBudget's minAvailable: a number of
// Pods or a percentage.
func ParseMinAvailable(s string) (*intstr.IntOrString, error) {
	m := intstr.Parse(s)
	if m.Type == intstr.String && !strings.HasSuffix(s, "%") {
		return nil, fmt.Errorf("invalid PodDisruptionBudget minAvailable %q: give a number of Pods or a percentage such as 50%%", s)
	}
	if err := validateMinAvailable(m); err != nil {
		return nil, err
	}
	return &m, nil
}
