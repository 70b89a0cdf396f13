package kit

// TailBuffer keeps the last 4 KiB written to it: enough of a command's
// stderr for an error.
type TailBuffer struct{ b []byte }

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - 4096; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *TailBuffer) String() string { return string(t.b) }
