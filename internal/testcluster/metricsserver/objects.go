package metricsserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Namespace is where metrics-server's ServiceAccount, Service and the
// RoleBinding that reads the front proxy's CA live, as upstream deploys them.
const Namespace = metav1.NamespaceSystem

// APIServiceName is the APIService of the resource metrics API.
const APIServiceName = "v1beta1.metrics.k8s.io"

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// serviceHost is the name the aggregator checks metrics-server's serving
// certificate for: the Service's DNS name.
const serviceHost = Name + "." + Namespace + ".svc"

// rbac is what upstream's deploy/ manifests grant metrics-server: reading
// nodes, their metrics and Pods, delegated authentication and authorization
// (system:auth-delegator), and the front proxy's CA in kube-system
// (extension-apiserver-authentication-reader). Its aggregated-metrics-reader
// role is left out: only the tests' admin and the HPA controller, whose
// bootstrap role covers it, read the metrics here.
func rbac() (*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding) {
	sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:" + Name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:" + Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   sa,
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: Name + ":system:auth-delegator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   sa,
		},
	}
	reader := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: Name + "-auth-reader", Namespace: Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   sa,
	}
	return role, bindings, reader
}

// installRBAC creates the ServiceAccount and rbac's objects, recording the
// removal of each it created.
func (s *Server) installRBAC(ctx context.Context) error {
	role, bindings, reader := rbac()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace}}
	err := s.create(ctx, "ServiceAccount "+sa.Name, func() error {
		_, err := s.kube.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		return s.kube.CoreV1().ServiceAccounts(Namespace).Delete(ctx, sa.Name, metav1.DeleteOptions{})
	})
	if err != nil {
		return err
	}
	rbacAPI := s.kube.RbacV1()
	err = s.create(ctx, "ClusterRole "+role.Name, func() error {
		_, err := rbacAPI.ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		return rbacAPI.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	if err != nil {
		return err
	}
	for _, b := range bindings {
		err := s.create(ctx, "ClusterRoleBinding "+b.Name, func() error {
			_, err := rbacAPI.ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
			return err
		}, func(ctx context.Context) error {
			return rbacAPI.ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{})
		})
		if err != nil {
			return err
		}
	}
	return s.create(ctx, "RoleBinding "+reader.Name, func() error {
		_, err := rbacAPI.RoleBindings(Namespace).Create(ctx, reader, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error {
		return rbacAPI.RoleBindings(Namespace).Delete(ctx, reader.Name, metav1.DeleteOptions{})
	})
}

// register points the aggregator at metrics-server on loopback, as package
// kubevirt does virt-api: a Service of type ExternalName that names
// localhost, whose name and port the aggregator dials, and an APIService
// that trusts caBundle. Both are made anew, in case a run that was killed
// left them with another port or CA.
func (s *Server) register(ctx context.Context, port int, caBundle []byte) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(port)}},
		},
	}
	services := s.kube.CoreV1().Services(Namespace)
	if err := services.Delete(ctx, Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove an old Service %s: %w", Name, err)
	}
	err := s.create(ctx, "Service "+Name, func() error {
		_, err := services.Create(ctx, svc, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error { return services.Delete(ctx, Name, metav1.DeleteOptions{}) })
	if err != nil {
		return err
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": APIServiceName},
		"spec": map[string]any{
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"service":              map[string]any{"name": Name, "namespace": Namespace, "port": int64(port)},
			"caBundle":             base64.StdEncoding.EncodeToString(caBundle),
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
		},
	}}
	apis := s.dyn.Resource(apiServicesResource)
	if err := apis.Delete(ctx, APIServiceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove an old APIService %s: %w", APIServiceName, err)
	}
	return s.create(ctx, "APIService "+APIServiceName+" (port "+strconv.Itoa(port)+")", func() error {
		_, err := apis.Create(ctx, apiService, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context) error { return apis.Delete(ctx, APIServiceName, metav1.DeleteOptions{}) })
}

// create runs do unless Stop began, and records undo for Stop when do made
// the object. An object that exists already is left to whoever made it.
func (s *Server) create(ctx context.Context, what string, do func() error, undo func(context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := do()
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("create %s: %w", what, err)
	}
	s.undo = append(s.undo, func(ctx context.Context) error {
		if err := undo(ctx); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove %s: %w", what, err)
		}
		return nil
	})
	return nil
}
