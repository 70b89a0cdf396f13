package eventsink

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/events"
)

func TestFileAppendsOneLinePerEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	var want []events.Event
	var wg sync.WaitGroup
	for i := range 2 { // two writers, as a CLI request next to serve
		f, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				f.Emit(events.Event{Time: time.Unix(int64(j), 0).UTC(), Event: events.Reused, Address: `sandbox.a["k"]`, Key: "k", Generation: i + 1})
			}
		}()
		for j := range 50 {
			want = append(want, events.Event{Time: time.Unix(int64(j), 0).UTC(), Event: events.Reused, Address: `sandbox.a["k"]`, Key: "k", Generation: i + 1})
		}
	}
	wg.Wait()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	counts := map[int]int{}
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d is not one JSON event: %v: %q", n+1, err, sc.Text())
		}
		counts[e.Generation]++
		n++
	}
	if n != len(want) || counts[1] != 50 || counts[2] != 50 {
		t.Fatalf("got %d lines (%v), want %d", n, counts, len(want))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("events file mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestWebhookRetriesThenDelivers(t *testing.T) {
	var calls atomic.Int32
	got := make(chan events.Event, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		var e events.Event
		_ = json.NewDecoder(r.Body).Decode(&e)
		got <- e
	}))
	defer srv.Close()
	w, err := NewWebhook(srv.URL, WebhookOptions{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := events.Event{Time: time.Unix(1, 0).UTC(), Event: events.Provisioned, Address: "sandbox.a[\"k\"]", Key: "k", Generation: 1, Reason: "new"}
	w.Emit(want)
	select {
	case e := <-got:
		if d := cmp.Diff(want, e); d != "" {
			t.Errorf("delivered event (-want +got):\n%s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("event not delivered")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sent, dropped, failed := w.Stats(); sent != 1 || dropped != 0 || failed != 0 {
		t.Errorf("stats sent=%d dropped=%d failed=%d", sent, dropped, failed)
	}
}

func TestWebhookNeverBlocksAndCountsDrops(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // a receiver that hangs
	}))
	defer srv.Close()
	defer close(release)
	w, err := NewWebhook(srv.URL, WebhookOptions{QueueSize: 4, Attempts: 1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 100 {
		w.Emit(events.Event{Event: events.Reused, Address: "sandbox.a[\"k\"]"})
	}
	if el := time.Since(start); el > 100*time.Millisecond {
		t.Errorf("100 Emits against a hung receiver took %s", el)
	}
	_, dropped, _ := w.Stats()
	// One event is in flight, four are queued, the rest are dropped.
	if dropped < 95 {
		t.Errorf("dropped %d, want at least 95", dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); err == nil {
		t.Error("Close with a hung receiver should report what is left")
	}
	w.Emit(events.Event{}) // after Close: dropped, no panic
}

func TestWebhookRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "localhost:80", "http://"} {
		if _, err := NewWebhook(u, WebhookOptions{}); err == nil {
			t.Errorf("NewWebhook(%q) succeeded", u)
		}
	}
}
