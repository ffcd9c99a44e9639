package plugin

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubectlstorage "k8s.io/kubectl/pkg/util/storage"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// nodeLocalClaims says, where the agents move their VMs (--move-after) and
// a claim they make per replica is of a class whose volumes are bound to a
// node or zone (WaitForFirstConsumer, which local volumes need, and so do
// local-path and TopoLVM), that such a VM cannot move: its replica's claim
// stays where its volume is, and so does the replacement Pod the scheduler
// places by it. One note per class; none where the class binds at once,
// or none can be read.
func (o *ScaffoldOptions) nodeLocalClaims(ctx context.Context) []string {
	p := o.params
	if !p.Moves() || len(p.ReplicaClaims) == 0 {
		return nil
	}
	classes, err := o.clients.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{fmt.Sprintf("cannot tell whether the replicas' claims are node-local, which --move-after cannot move (list storageclasses: %v)", err)}
	}
	var notes []string
	seen := map[string]bool{}
	for _, c := range p.ReplicaClaims {
		class := classOf(c, classes.Items)
		if class == nil || seen[class.Name] || bindingMode(class) != storagev1.VolumeBindingWaitForFirstConsumer {
			continue
		}
		seen[class.Name] = true
		notes = append(notes, fmt.Sprintf("--move-after=%s: claim %s is of storage class %s, whose volumes are bound to a node or zone "+
			"(volumeBindingMode WaitForFirstConsumer, provisioner %s): a replica's VM moves only where its claim's volume can be used, so on node-local storage "+
			"(local volumes, local-path, TopoLVM) it cannot move and its agent evicts its Pod every %s in vain; pass --move-after=0, or use network storage",
			p.MoveAfter, c.Name, class.Name, class.Provisioner, p.MoveAfter))
	}
	return notes
}

// classOf is the class claim c's volume comes from: the one it names, else
// the cluster's default; nil when there is none.
func classOf(c scaffold.ReplicaClaim, classes []storagev1.StorageClass) *storagev1.StorageClass {
	for i := range classes {
		sc := &classes[i]
		if c.StorageClass != nil && sc.Name == *c.StorageClass ||
			c.StorageClass == nil && kubectlstorage.IsDefaultAnnotationText(sc.ObjectMeta) == "Yes" {
			return sc
		}
	}
	return nil
}

func bindingMode(sc *storagev1.StorageClass) storagev1.VolumeBindingMode {
	if sc.VolumeBindingMode == nil {
		return storagev1.VolumeBindingImmediate
	}
	return *sc.VolumeBindingMode
}
