package remote

import "testing"

func TestAckTrackerFollowsTheAcknowledgedPrefix(t *testing.T) {
	var a ackTracker
	steps := []struct{ off, n, want int64 }{
		{10, 10, 0}, // a write past a gap does not move the prefix
		{30, 5, 0},
		{0, 10, 20}, // the gap closes: 0..20 are in
		{20, 10, 35},
		{35, 1, 36},
	}
	for _, s := range steps {
		if got := a.ack(s.off, s.n); got != s.want {
			t.Fatalf("ack(%d, %d) = %d, want %d", s.off, s.n, got, s.want)
		}
	}
	if len(a.ahead) != 0 {
		t.Errorf("writes left past a gap: %v", a.ahead)
	}
}
