package eventsink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/events"
)

// WebhookOptions tune a Webhook; zero values take the defaults.
type WebhookOptions struct {
	// QueueSize bounds the events waiting to be sent (default 256). When
	// the queue is full, Emit drops the event and counts it.
	QueueSize int
	// Attempts is how many times one event is tried (default 4).
	Attempts int
	// Backoff is the wait before the first retry, doubled after each
	// (default 250ms).
	Backoff time.Duration
	// Timeout bounds one POST (default 5s).
	Timeout time.Duration
	// Client sends the requests (default: a client with Timeout).
	Client *http.Client
}

// Webhook POSTs each event as a JSON object to a URL from one background
// goroutine, retrying failures (connection errors, 408, 429 and 5xx) with
// exponential backoff. Emit never blocks.
type Webhook struct {
	url   string
	opts  WebhookOptions
	queue chan events.Event
	done  chan struct{}

	mu      sync.RWMutex // guards closed against a send on the closed queue
	closed  bool
	dropped atomic.Int64 // queue full or closed
	failed  atomic.Int64 // given up after every attempt
	sent    atomic.Int64
}

// NewWebhook validates rawURL (http or https) and starts the sender.
// Call Close to flush and stop it.
func NewWebhook(rawURL string, opts WebhookOptions) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook URL %q: must be an absolute http:// or https:// URL", rawURL)
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 256
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 250 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: opts.Timeout}
	}
	w := &Webhook{url: rawURL, opts: opts, queue: make(chan events.Event, opts.QueueSize), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// Emit enqueues e, or drops it when the queue is full (or the webhook is
// closed). It never blocks.
func (w *Webhook) Emit(e events.Event) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.dropped.Add(1)
		return
	}
	select {
	case w.queue <- e:
	default:
		w.dropped.Add(1)
	}
}

// Stats reports how many events were sent, dropped because the queue was
// full, and given up on after every attempt.
func (w *Webhook) Stats() (sent, dropped, failed int64) {
	return w.sent.Load(), w.dropped.Load(), w.failed.Load()
}

// Close stops accepting events and waits until the queue is drained or
// ctx ends, whichever comes first; what is left is counted as dropped.
func (w *Webhook) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("webhook: %d events still queued: %w", len(w.queue), ctx.Err())
	}
}

func (w *Webhook) run() {
	defer close(w.done)
	for e := range w.queue {
		if err := w.send(e); err != nil {
			w.failed.Add(1)
			continue
		}
		w.sent.Add(1)
	}
}

// send tries one event up to Attempts times.
func (w *Webhook) send(e events.Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	wait := w.opts.Backoff
	var last error
	for attempt := 1; attempt <= w.opts.Attempts; attempt++ {
		retry, err := w.post(body)
		if err == nil {
			return nil
		}
		last = err
		if !retry {
			break
		}
		if attempt < w.opts.Attempts {
			time.Sleep(wait)
			wait *= 2
		}
	}
	return last
}

var errPermanent = errors.New("rejected")

// post sends one attempt; retry says whether another attempt may succeed.
func (w *Webhook) post(body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sandboxer-events")
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		return true, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true, fmt.Errorf("webhook answered %s", resp.Status)
	default:
		return false, fmt.Errorf("webhook answered %s: %w", resp.Status, errPermanent)
	}
}
