package metrics_test

import (
	"testing"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/core/hub"
	"github.com/ringcast/ringcast/server/internal/face/names"
	"github.com/ringcast/ringcast/server/internal/ops/metrics"
)

// TestOutcomeLabelsAreReasonNames checks that every outcome label but new
// and resumed is the text name of a reason the client is told, spelled as
// the SSE face and the command line spell it, and that every reason a
// subscribe can end in has its label.
func TestOutcomeLabelsAreReasonNames(t *testing.T) {
	reasons := map[string]bool{}
	d := ringcastv1.Reason(0).Descriptor()
	for i := range d.Values().Len() {
		r := ringcastv1.Reason(d.Values().Get(i).Number())
		if r != ringcastv1.Reason_REASON_UNSPECIFIED && r != ringcastv1.Reason_REASON_SUBSCRIBER_LAGGING {
			reasons[names.ReasonName(r)] = true
		}
	}
	labels := map[string]bool{}
	for _, o := range metrics.Outcomes {
		l := metrics.Label(o)
		labels[l] = true
		if o != hub.OutcomeNew && o != hub.OutcomeResumed && !reasons[l] {
			t.Errorf("outcome %q has label %q, not a reason's name", o, l)
		}
	}
	for r := range reasons {
		if !labels[r] {
			t.Errorf("reason %q has no outcome label", r)
		}
	}
	if l := metrics.Label(hub.OutcomeTooOld); l != "cursor_too_old" {
		t.Errorf("too-old label %q, want cursor_too_old", l)
	}
}
