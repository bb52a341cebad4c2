package loadgen

import (
	"context"
	"net/http"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestScrapeMetricsSumsSeries reads a real server's /metrics: a gauge
// without labels is its value, a labelled counter the sum over its series.
func TestScrapeMetricsSumsSeries(t *testing.T) {
	srv := ringtest.Start(t, ringtest.Config())
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	m, err := scrapeMetrics(context.Background(), hc, srv.URL+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m["ringcast_head_seq"]; !ok || v != 1 {
		t.Errorf("ringcast_head_seq = %v (present %v), want 1", v, ok)
	}
	if v, ok := m["ringcast_subscribes_total"]; !ok || v != 0 {
		t.Errorf("ringcast_subscribes_total = %v (present %v), want 0 summed over its pre-registered series", v, ok)
	}
	mem, err := scrapeServer(context.Background(), hc, srv.URL+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	if mem.RSSBytes <= 0 || mem.Goroutines <= 0 {
		t.Errorf("server figures %+v, want RSS and goroutines", mem)
	}
	if _, err := scrapeMetrics(context.Background(), hc, srv.URL+"/nothing-here", ""); err == nil {
		t.Error("scraping a 404 succeeded")
	}
}
