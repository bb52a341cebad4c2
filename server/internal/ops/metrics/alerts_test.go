package metrics_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// TestAlertRulesMatchDocsAndCheck keeps docs/alerts.yml and the rules shown
// in docs/metrics.md the same, checks that every ringcast metric their
// expressions name is served by a real server, and, when promtool is
// installed, that `promtool check rules` accepts the file.
func TestAlertRulesMatchDocsAndCheck(t *testing.T) {
	rules, err := os.ReadFile("../../../../docs/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/metrics.md shows no yaml rules")
	}
	if body := string(rules); !strings.HasSuffix(body, string(block[1])) {
		t.Fatalf("docs/alerts.yml and the rules in docs/metrics.md differ:\n%s\n---\n%s", body, block[1])
	}

	srv := ringtest.Start(t, ringtest.Config())
	served := map[string]bool{}
	for key := range scrape(t, srv.URL) {
		name, _, _ := strings.Cut(key, "{")
		served[name] = true
	}
	names := regexp.MustCompile(`ringcast_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) == 0 {
		t.Fatal("no ringcast metrics in the rules")
	}
	for _, n := range names {
		// Counters with no sample yet still print their series: every
		// name an expression uses must be on the first scrape.
		if !served[n] && !served[n+"_total"] {
			t.Errorf("rules use %s, which /metrics does not serve", n)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: rule syntax not checked (metric names were)")
		return
	}
	if out, err := exec.Command(promtool, "check", "rules", "../../../../docs/alerts.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
