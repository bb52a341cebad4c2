package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// factPos is a fact line's position.
type factPos struct{ seq, index uint64 }

func (p factPos) String() string { return fmt.Sprintf("%d/%d", p.seq, p.index) }

// tailRun is what one tail process printed.
type tailRun struct {
	facts  []factPos
	killed bool
}

// runTailProcess starts the ringcast command (this test binary, see
// TestMain) as "tail args…", reads its lines and, after stopAfter of them
// (0: never), sends it sig. It returns the fact lines and whether sig
// ended it.
func runTailProcess(t *testing.T, sig syscall.Signal, stopAfter int, args ...string) tailRun {
	t.Helper()
	a, err := json.Marshal(append([]string{"tail"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(a))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hang := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // hang guard
	defer hang.Stop()
	var run tailRun
	sc := bufio.NewScanner(out)
	lines := 0
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if _, isSignal := m["signal"]; !isSignal {
			run.facts = append(run.facts, factPos{uint64(m["seq"].(float64)), uint64(m["index"].(float64))})
		}
		if lines == stopAfter {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == sig && sig == syscall.SIGKILL:
		run.killed = true
	case err != nil:
		t.Fatalf("tail %v: %v (stderr %s)", args, err, stderr.String())
	}
	return run
}

// TestTailCrashSemantics runs `ringcast tail --cursor-file` as a real
// process, again and again, against a server publishing 150 commits of
// 1–4 facts, and stops each run with a real signal after a random
// number of lines; a last run reads to head. Joined end to end the runs
// print every published fact:
//
//   - SIGTERM: exactly once;
//   - SIGKILL: at least once, the only repeat allowed being the last fact
//     line of a killed run printed again first by the next run;
//
// and no temporary file of an interrupted save survives the next run.
// RINGCAST_TEST_SEED replays a schedule.
func TestTailCrashSemantics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RINGCAST_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay with RINGCAST_TEST_SEED=%d", seed)
				}
			}()
			rng := rand.New(rand.NewPCG(seed, uint64(sig)))
			cfg := ringtest.Config()
			cfg.Window = 1 << 16
			srv := ringtest.Start(t, cfg)
			h := srv.Hub()

			var mu sync.Mutex
			var published []factPos
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				prng := rand.New(rand.NewPCG(seed, 1))
				for range 150 { // a few hundred facts: tail syncs its cursor file per line
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
					n := 1 + prng.IntN(4)
					facts := make([]*ringcastv1.Fact, n)
					for i := range facts {
						data, _ := structpb.NewStruct(map[string]any{"i": float64(i)})
						facts[i] = &ringcastv1.Fact{Topic: "gauges/eden/g-031", Type: "gauge.level", Payload: &ringcastv1.Fact_Data{Data: data}}
					}
					r, err := h.Publish(facts, "")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for i := range n {
						published = append(published, factPos{r.Seq, uint64(i)})
					}
					mu.Unlock()
				}
			})
			dir := t.TempDir()
			cf := filepath.Join(dir, "eden.cur")
			var runs []tailRun
			for range 6 {
				runs = append(runs, runTailProcess(t, sig, 1+rng.IntN(40), "--server", srv.URL, "--cursor-file", cf))
			}
			close(stop)
			wg.Wait()
			// A temporary file like the ones a kill in the middle of a
			// save leaves; the next run removes it with any real ones.
			if err := os.WriteFile(filepath.Join(dir, ".eden.cur.tmp123456"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, runTailProcess(t, sig, 0, "--server", srv.URL, "--cursor-file", cf, "--end-at-head"))

			var got []factPos
			repeats := 0
			for i, r := range runs {
				facts := r.facts
				if i > 0 && runs[i-1].killed && len(facts) > 0 && len(got) > 0 && facts[0] == got[len(got)-1] {
					facts, repeats = facts[1:], repeats+1 // the killed run's last line, printed again
				}
				got = append(got, facts...)
			}
			if sig == syscall.SIGTERM && repeats > 0 {
				t.Errorf("%d lines repeated across SIGTERM", repeats)
			}
			mu.Lock()
			want := published
			mu.Unlock()
			if i := firstDiff(got, want); i >= 0 {
				lo, hi := max(i-3, 0), i+3
				t.Fatalf("joined runs differ from what was published at fact %d (of %d printed, %d published):\n  printed   %v\n  published %v",
					i, len(got), len(want), got[lo:min(hi, len(got))], want[lo:min(hi, len(want))])
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "eden.cur" {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			t.Logf("%d runs, %d facts, %d repeated after a kill", len(runs), len(got), repeats)
		})
	}
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff(a, b []factPos) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}
