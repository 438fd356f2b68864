package realkube_test

import (
	"bytes"
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestCloseStopsEverything: after Close, the thousands of goroutines of a
// control plane are gone, none of them left dialling or watching. Not
// parallel: it runs alone, before the parallel tests, so that the
// goroutine count is its own.
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	cp, _ := start(t, "close-cp")
	running := runtime.NumGoroutine()
	if err := cp.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var stacks string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		stacks = buf.String()
		for _, s := range []string{"go.etcd.io/", "google.golang.org/grpc", "k8s.io/client-go/tools/cache", "net/http.(*persistConn)", "net.(*Dialer)", "realkube."} {
			if strings.Contains(stacks, s) {
				return false, nil
			}
		}
		return runtime.NumGoroutine() <= before+5, nil
	})
	if err != nil {
		t.Fatalf("%d goroutines before, %d running, %d after Close:\n%s", before, running, runtime.NumGoroutine(), stacks)
	}
	t.Logf("goroutines: %d before, %d running, %d after Close", before, running, runtime.NumGoroutine())
}
