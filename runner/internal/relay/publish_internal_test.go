package relay

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Only a non-retriable answer that a broker never gives after appending
// is a refusal; everything else leaves the outcome unknown.
func TestRefused(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{kerr.InvalidRecord, true},
		{fmt.Errorf("produce: %w", kerr.MessageTooLarge), true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.RequestTimedOut, false},
		{kerr.NotEnoughReplicasAfterAppend, false},
		{kerr.NotLeaderForPartition, false}, // retriable: kgo would have retried
		{context.DeadlineExceeded, false},
		{kgo.ErrRecordTimeout, false},
		{errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		if got := refused(tt.err); got != tt.want {
			t.Errorf("refused(%v) = %v; want %v", tt.err, got, tt.want)
		}
	}
}

// A planted RetryNewEventID rewrites the payload's eventId and nothing
// else; a payload that is not an object stays as it is.
func TestWithEventID(t *testing.T) {
	got := string(withEventID([]byte(`{"eventId":"e-1","orderId":1}`), "e-1.2"))
	if got != `{"eventId":"e-1.2","orderId":1}` {
		t.Errorf("withEventID = %s", got)
	}
	if got := string(withEventID([]byte(`[1]`), "x")); got != `[1]` {
		t.Errorf("withEventID(array) = %s", got)
	}
}
