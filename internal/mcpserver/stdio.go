package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one message on stdin (the SDK's own default).
const MaxLine = mcp.DefaultMaxLineLength

// RunStdio serves one session over in and out (`sandboxer mcp`) until in
// ends or ctx does.
//
// The SDK's stdio transport (mcp.IOTransport, go-sdk v1.8) decodes stdin
// as one JSON stream and ends the connection at the first value it cannot
// decode or read as JSON-RPC, without an answer; with
// --release-on-disconnect one bad line cost the agent its sandbox. So
// the messages are framed by lines here, in front of the SDK: each line
// is checked on its own and either handed to the SDK or answered with
// the JSON-RPC error the specification names (-32700 parse error for
// what is not JSON, -32600 invalid request for JSON that is not one
// message), and reading goes on with the next line. A bad line never
// swallows the next one, and nothing on stdin ends the session but its
// end. Batches are answered -32600 too: MCP removed them in 2025-06-18,
// and the SDK ends the connection on one it refuses. (The fix belongs
// upstream: ioConn could answer a decode error and resynchronise at the
// next newline instead of returning it from Read.)
func (s *Server) RunStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.frame(in, pw, w)) }()
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{w}})
	_ = pr.Close()
	return err
}

// frame copies the valid lines of in to sdk and answers the rest on out.
// It returns nil at the end of in: the SDK then sees the end of its
// input.
func (s *Server) frame(in io.Reader, sdk io.Writer, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64*1024)
	for {
		line, tooLong, err := readLine(r, MaxLine)
		if tooLong {
			s.refuseLine(out, jsonrpc.CodeParseError, nil, fmt.Sprintf("Parse error: a message longer than %d bytes", MaxLine))
		} else if len(bytes.TrimSpace(line)) > 0 {
			if code, id, why := checkLine(line); code != 0 {
				s.refuseLine(out, code, id, why)
			} else if _, werr := sdk.Write(append(bytes.TrimRight(line, "\r\n"), '\n')); werr != nil {
				return nil // the SDK is done (ctx ended)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// readLine reads up to and including the next newline; a line longer
// than max is read to its end and dropped (tooLong).
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// checkLine says what is wrong with one line: 0 when it is one JSON-RPC
// message the SDK reads; else the error code, the request's id when one
// can be told, and the message.
func checkLine(line []byte) (code int64, id any, why string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, nil, "Parse error: the line is not JSON (one JSON-RPC message per line)"
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		if trimmed[0] == '[' {
			return jsonrpc.CodeInvalidRequest, nil, "Invalid Request: batches are not supported (MCP 2025-06-18 removed them); send one message per line"
		}
		return jsonrpc.CodeInvalidRequest, nil, "Invalid Request: a message is a JSON object"
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		if json.Unmarshal(trimmed, &probe) == nil {
			switch probe.ID.(type) {
			case string, float64:
				id = probe.ID
			}
		}
		return jsonrpc.CodeInvalidRequest, id, "Invalid Request: " + err.Error()
	}
	return 0, nil, ""
}

// refuseLine answers a line the SDK never sees.
func (s *Server) refuseLine(out io.Writer, code int64, id any, msg string) {
	s.opts.Logger.Warn("refused a message on stdin", "code", code)
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n'))
}

// lockedWriter keeps the SDK's messages and the framer's answers whole:
// each Write is one message.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// nopWriteCloser: closing the session closes nothing the process still
// needs.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
