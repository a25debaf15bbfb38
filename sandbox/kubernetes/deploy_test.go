package kubernetes

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	manifests "github.com/nondet-sandbox/nondet-sandbox/deploy/kubernetes"
)

// TestDeployManifests: every object in deploy/kubernetes decodes strictly
// (no unknown or misspelt field), the Job splits the scan by its index,
// the Role grants what this runtime calls, and the NetworkPolicy denies
// both ways to exactly the pods this runtime labels.
func TestDeployManifests(t *testing.T) {
	objs, err := manifests.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 3 {
		t.Fatalf("deploy/kubernetes holds %d objects", len(objs))
	}
	var job *batchv1.Job
	var role *rbacv1.Role
	var policy *networkingv1.NetworkPolicy
	for _, o := range objs {
		switch v := o.(type) {
		case *batchv1.Job:
			job = v
		case *rbacv1.Role:
			role = v
		case *networkingv1.NetworkPolicy:
			policy = v
		}
	}
	if job == nil || role == nil || policy == nil {
		t.Fatalf("want a Job, a Role and a NetworkPolicy; got %d objects", len(objs))
	}
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("the Job is not Indexed")
	}
	cmd := strings.Join(job.Spec.Template.Spec.Containers[0].Command, " ")
	for _, want := range []string{"--runtime kubernetes", "--shard", "JOB_COMPLETION_INDEX", "--seed", "--format json"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("the Job's command lacks %q: %s", want, cmd)
		}
	}
	grants := func(resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, need := range [][2]string{{"pods", "create"}, {"pods", "get"}, {"pods", "list"}, {"pods", "watch"}, {"pods", "delete"},
		{"pods/attach", "create"}, {"pods/log", "get"}, {"leases", "create"}, {"leases", "update"}, {"leases", "list"}, {"leases", "delete"}} {
		if !grants(need[0], need[1]) {
			t.Errorf("the Role does not grant %s on %s", need[1], need[0])
		}
	}
	if policy.Spec.PodSelector.MatchLabels["app.kubernetes.io/managed-by"] != "nondet-sandbox" ||
		len(policy.Spec.Ingress) != 0 || len(policy.Spec.Egress) != 0 || len(policy.Spec.PolicyTypes) != 2 {
		t.Errorf("the NetworkPolicy does not deny all to the probe pods: %+v", policy.Spec)
	}
}
