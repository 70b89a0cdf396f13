package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// A server that is slow to answer its first command (as a just-started
// one on a loaded host is) costs the module listing a retry, not the
// create: the first connection never answers, the second does.
func TestModuleVersionsPatient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := conns.Add(1)
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					cmd, err := readCommand(r)
					if err != nil {
						return
					}
					switch {
					case n == 1:
						time.Sleep(5 * time.Second) // past the client's read timeout
						return
					case cmd == "AUTH":
						fmt.Fprint(c, "+OK\r\n")
					case cmd == "INFO":
						body := "# Modules\r\nmodule:name=search,ver=10202,api=1,filters=0,usedby=[],using=[],options=[]\r\n"
						fmt.Fprintf(c, "$%d\r\n%s\r\n", len(body), body)
					default:
						fmt.Fprintf(c, "-ERR unknown %s\r\n", cmd)
					}
				}
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	admin := Client("127.0.0.1", port, "admin", state.Secret("pw"), nil)
	defer admin.Close()
	v, err := moduleVersionsPatient(context.Background(), admin)
	if err != nil {
		t.Fatalf("module versions after one slow answer: %v", err)
	}
	if v["search"] != "1.2.2" || conns.Load() != 2 {
		t.Errorf("got %v over %d connections, want search 1.2.2 over 2", v, conns.Load())
	}
}

// readCommand reads one RESP array of bulk strings and returns its first
// element, upper-cased.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d", &n); err != nil {
		return "", err
	}
	var first string
	for i := range n {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return "", err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = strings.ToUpper(strings.TrimSpace(arg))
		}
	}
	return first, nil
}
