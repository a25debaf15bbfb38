package kubernetes

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// TestSweepTellsMachinesApart: a scan whose lease was taken on this
// machine (host name and mount namespace) is alive only when its lock
// says so, however fresh its lease; a scan of another machine, or of
// another container with this host name (a pod on the node's network),
// is alive while its lease is renewed, and swept once it is not.
func TestSweepTellsMachinesApart(t *testing.T) {
	host, _ := os.Hostname()
	now, old := time.Now(), time.Now().Add(-time.Hour)
	type scan struct {
		id, holder string
		renewed    time.Time
		lockHeld   bool
		kept       bool
	}
	scans := []scan{
		{"here-running", machine() + "/1", now, true, true},
		{"here-dead-fresh-lease", machine() + "/2", now, false, false},
		{"same-name-other-container", host + "+4026599999/3", now, false, true},
		{"old-format-same-host", host + "/4", now, false, true},
		{"same-name-other-container-expired", host + "+4026599999/5", old, false, false},
		{"elsewhere", "builder-7/6", now, false, true},
	}
	cs := fake.NewSimpleClientset()
	ctx := context.Background()
	for _, s := range scans {
		labels := map[string]string{ScanLabel: s.id}
		if _, err := cs.CoordinationV1().Leases("ns").Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: leaseName(s.id), Labels: labels},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(s.holder), LeaseDurationSeconds: ptr.To(int32(leaseTerm / time.Second)),
				RenewTime: &metav1.MicroTime{Time: s.renewed}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + s.id, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runtime{core: cs.CoreV1(), leases: cs.CoordinationV1(), ns: "ns"}
	removed, err := r.Sweep(ctx, func(id string) bool {
		i := slices.IndexFunc(scans, func(s scan) bool { return s.id == id })
		return i >= 0 && scans[i].lockHeld
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scans {
		gone := slices.Contains(removed, "pod pod-"+s.id)
		if gone == s.kept {
			t.Errorf("%s (held by %s): swept %v, want %v", s.id, s.holder, gone, !s.kept)
		}
	}
}
