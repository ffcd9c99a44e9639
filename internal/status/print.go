package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/styled"
)

// ListAPIVersion and ListKind head `status -o json|yaml`: a List-like
// object whose items are Rows.
const (
	ListAPIVersion = "vmctl.kubevirt.io/v1alpha1"
	ListKind       = "StatusList"
)

// TableOptions shape the human table.
type TableOptions struct {
	// Wide adds NAMESPACE, VM IP, PROTOTYPE, POD UID and CLAIMS (kubectl's
	// -o wide).
	Wide bool
	// WithNamespace puts NAMESPACE first, as kubectl does with -A.
	WithNamespace bool
	// Color renders a colored lipgloss table instead of plain columns.
	Color bool
}

// WriteTable prints rows as a table with ages as of now.
func WriteTable(w io.Writer, rows []Row, now time.Time, opts TableOptions) error {
	withNS := opts.WithNamespace || opts.Wide
	headers := []string{"POD", "NODE", "READY", "VM", "VM STATUS", "VMI NODE", "AGE", "PROBLEM"}
	if opts.Wide {
		headers = append(headers, "VM IP", "PROTOTYPE", "POD UID", "CLAIMS")
	}
	if withNS {
		headers = append([]string{"NAMESPACE"}, headers...)
	}
	cells := make([][]styled.Cell, 0, len(rows))
	for _, r := range rows {
		c := rowCells(r, now)
		if opts.Wide {
			c = append(c, orNone(r.VMIP), styled.Text(r.prototypeRef()), orNone(string(r.PodUID)), claimsCell(r.Claims))
		}
		if withNS {
			c = append([]styled.Cell{styled.Text(r.Namespace)}, c...)
		}
		cells = append(cells, c)
	}
	return styled.WriteTable(w, headers, cells, opts.Color)
}

func rowCells(r Row, now time.Time) []styled.Cell {
	pod := orNone(r.Pod)
	if r.PodUID == "" && r.Pod != "" {
		pod = styled.Cell{Text: r.Pod, Tone: styled.Faint} // a Pod that is gone
	}
	ready := orNone(r.Ready)
	if r.Ready != "" {
		ready.Tone = styled.Warn
		if r.PodReady {
			ready.Tone = styled.Good
		}
	}
	vmStatus := orNone(r.VMStatus)
	if r.VM != "" {
		vmStatus.Tone = styled.Warn
		if r.VMReady {
			vmStatus.Tone = styled.Good
		}
	}
	vm := r.VM
	if vm != "" && r.VMNamespace != r.Namespace {
		vm = r.VMNamespace + "/" + vm
	}
	age := "<unknown>"
	if !r.Created.IsZero() {
		age = duration.HumanDuration(now.Sub(r.Created.Time))
	}
	problem := styled.Cell{Text: strings.Join(r.Problems, ", "), Tone: styled.Bad}
	if len(r.Problems) == 0 && r.Waiting != "" {
		problem = styled.Cell{Text: r.Waiting, Tone: styled.Warn} // a wait, not a fault
	}
	return []styled.Cell{
		pod,
		orNone(r.Node),
		ready,
		orNone(vm),
		vmStatus,
		orNone(r.VMINode),
		styled.Text(age),
		problem,
	}
}

// claimsCell names a row's claims, each with its phase where it is not
// Bound, as "data-db-0,logs-db-0(Pending)".
func claimsCell(claims []Claim) styled.Cell {
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = c.Name
		if c.Phase != "Bound" {
			names[i] += "(" + c.Phase + ")"
		}
	}
	return orNone(strings.Join(names, ","))
}

func (r Row) prototypeRef() string {
	if r.Prototype == "" {
		return "<none>"
	}
	if r.PrototypeNamespace != "" && r.PrototypeNamespace != r.Namespace {
		return r.PrototypeNamespace + "/" + r.Prototype
	}
	return r.Prototype
}

func orNone(s string) styled.Cell {
	if s == "" {
		return styled.Cell{Text: "<none>", Tone: styled.Faint}
	}
	return styled.Text(s)
}

// WriteNames prints the VM of each row as kubectl's -o name does:
// virtualmachine.kubevirt.io/NAME, one a line; rows without a VM are skipped.
func WriteNames(w io.Writer, rows []Row) error {
	for _, r := range rows {
		if r.VM == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "virtualmachine.kubevirt.io/%s\n", r.VM); err != nil {
			return err
		}
	}
	return nil
}

// ToList turns rows into an unstructured List (apiVersion ListAPIVersion,
// kind ListKind) for cli-runtime's JSON, YAML, JSONPath and template
// printers.
func ToList(rows []Row) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetAPIVersion(ListAPIVersion)
	list.SetKind(ListKind)
	list.Items = make([]unstructured.Unstructured, 0, len(rows))
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: m})
	}
	return list, nil
}

// HasProblems reports whether any row has a problem, for --exit-code; a
// row that waits (Row.Waiting) has none.
func HasProblems(rows []Row) bool {
	for _, r := range rows {
		if len(r.Problems) > 0 {
			return true
		}
	}
	return false
}
