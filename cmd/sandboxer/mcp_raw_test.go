package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawMCP is `sandboxer mcp` driven by raw JSON-RPC lines over its pipes,
// as an MCP client other than the go-sdk would.
type rawMCP struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	outR   io.ReadCloser
	errR   io.ReadCloser
	mu     sync.Mutex
	stderr bytes.Buffer
	nextID int
	exited chan error
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

func startRawMCP(t *testing.T, dir string, args ...string) *rawMCP {
	t.Helper()
	m := &rawMCP{t: t, cmd: sandboxerCmd(t, dir, append([]string{"mcp"}, args...)...), exited: make(chan error, 1)}
	var err error
	if m.in, err = m.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if m.outR, err = m.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if m.errR, err = m.cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	m.out = bufio.NewReaderSize(m.outR, 1<<20)
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		b := make([]byte, 4096)
		for {
			n, err := m.errR.Read(b)
			m.mu.Lock()
			m.stderr.Write(b[:n])
			m.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		<-stderrDone
		m.exited <- m.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("mcp (pid %d) log:\n%s", m.cmd.Process.Pid, m.log())
		}
	})
	m.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func (m *rawMCP) log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

func (m *rawMCP) send(line string) {
	m.t.Helper()
	if _, err := io.WriteString(m.in, line+"\n"); err != nil {
		m.t.Fatalf("write to mcp: %v", err)
	}
}

// read returns the next response (notifications are skipped).
func (m *rawMCP) read(timeout time.Duration) rpcResponse {
	m.t.Helper()
	type got struct {
		line []byte
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		for {
			line, err := m.out.ReadBytes('\n')
			if err == nil && bytes.Contains(line, []byte(`"method"`)) && !bytes.Contains(line, []byte(`"id"`)) {
				continue // a notification
			}
			ch <- got{line, err}
			return
		}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			m.t.Fatalf("read from mcp: %v (the process ended?)", g.err)
		}
		var r rpcResponse
		if err := json.Unmarshal(g.line, &r); err != nil {
			m.t.Fatalf("mcp wrote a line that is not JSON: %v: %q", err, g.line)
		}
		return r
	case <-time.After(timeout):
		m.t.Fatalf("no answer from mcp in %s", timeout)
	}
	return rpcResponse{}
}

// call sends a request and returns its response.
func (m *rawMCP) call(method string, params any) rpcResponse {
	m.t.Helper()
	m.nextID++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.nextID, "method": method, "params": params})
	if err != nil {
		m.t.Fatal(err)
	}
	m.send(string(b))
	r := m.read(5 * time.Minute)
	if string(r.ID) != fmt.Sprint(m.nextID) {
		m.t.Fatalf("answer to id %s, want %d", r.ID, m.nextID)
	}
	return r
}

// tool calls a tool; it returns the structured result, or the tool
// error's text.
func (m *rawMCP) tool(name string, args map[string]any, out any) string {
	m.t.Helper()
	r := m.call("tools/call", map[string]any{"name": name, "arguments": args})
	if r.Error != nil {
		m.t.Fatalf("%s: protocol error %d: %s", name, r.Error.Code, r.Error.Message)
	}
	if r.Result.IsError {
		var texts []string
		for _, c := range r.Result.Content {
			texts = append(texts, c.Text)
		}
		return strings.Join(texts, "\n")
	}
	if out != nil {
		if err := json.Unmarshal(r.Result.StructuredContent, out); err != nil {
			m.t.Fatalf("%s: %v: %s", name, err, r.Result.StructuredContent)
		}
	}
	return ""
}

// hangUp is a client that ends: stdin closed.
func (m *rawMCP) hangUp() { _ = m.in.Close() }

// die is a client killed with SIGKILL: every pipe to the server closes
// at once, unread output included.
func (m *rawMCP) die() {
	_ = m.in.Close()
	_ = m.outR.Close()
	_ = m.errR.Close()
}

// wait waits for the process to exit; it fails the test after timeout.
func (m *rawMCP) wait(timeout time.Duration) error {
	m.t.Helper()
	select {
	case err := <-m.exited:
		return err
	case <-time.After(timeout):
		m.t.Fatalf("mcp (pid %d) still running after %s", m.cmd.Process.Pid, timeout)
	}
	return nil
}

func (m *rawMCP) kill9() { _ = m.cmd.Process.Signal(syscall.SIGKILL) }
