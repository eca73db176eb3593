package consumer_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/orderflow-audit/orderflow-audit/evidence"
	"github.com/orderflow-audit/orderflow-audit/runner/fault"
	"github.com/orderflow-audit/orderflow-audit/runner/internal/consumer"
)

// A failed offset commit (refused, or its answer lost after the broker
// took it) is recorded as call_failed with the outcome the consumer read,
// and rewinds the record's partition: the replay is rejected by the
// inbox and the offset committed again. One effect, the offset at the
// end.
func TestOffsetCommitFails(t *testing.T) {
	for _, tt := range []struct {
		mode    fault.CallMode
		err     error
		outcome string
	}{
		{fault.CallBefore, kerr.UnknownServerError, consumer.OutcomeAnswered},
		{fault.CallAfter, fmt.Errorf("answer lost: %w", io.ErrUnexpectedEOF), consumer.OutcomeUnknown},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			b := setup(t)
			b.produce(t, 1)
			in := &fault.Injector{}
			in.ArmCall("consumer.offset.commit", tt.mode, func(fault.CallSite, fault.CallMode) error { return tt.err })
			c := b.consumer(t, "consumer-1", func(cfg *consumer.Config) { cfg.Faults = in })
			ctx := deadline(t, 15*time.Second)
			st, err := c.PollUntil(ctx, func(s consumer.Stats) bool { return s.OffsetsCommitted >= 1 })
			if err != nil || !in.DisarmCall() {
				t.Fatalf("PollUntil = %+v, %v", st, err)
			}
			if st.Received != 2 || st.InboxInserted != 1 || st.InboxRejected != 1 || st.Effects != 1 {
				t.Errorf("stats %+v; want the record received twice, one effect, the replay rejected", st)
			}
			var recorded []evidence.Event
			for _, e := range b.events(t) {
				if e.Kind == evidence.KindCallFailed {
					recorded = append(recorded, e)
				}
			}
			if len(recorded) != 1 || recorded[0].Target != "consumer.offset.commit" || recorded[0].Reason != tt.outcome {
				t.Errorf("call_failed events %+v; want one at consumer.offset.commit reading %s", recorded, tt.outcome)
			}
		})
	}
}
