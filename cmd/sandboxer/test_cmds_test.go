package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJUnit reads a JUnit XML report of sandboxer test as a CI system
// does, strictly (well-formed, one testsuites root, nothing after it;
// times are seconds, timestamps RFC 3339), and prints what it holds
// without the times:
//
//	junit FILE
//
//	suite NAME tests=N failures=N errors=N skipped=N
//	  case NAME (CLASSNAME): pass | failure: MESSAGE | error: MESSAGE | skipped: MESSAGE
func cmdJUnit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: junit FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if !bytes.HasPrefix(b, []byte(xml.Header)) {
		ts.Fatalf("%s does not start with the XML declaration", args[0])
	}
	type problem struct {
		Message string `xml:"message,attr"`
		Body    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Timestamp string   `xml:"timestamp,attr"`
		Failure   *problem `xml:"failure"`
		Error     *problem `xml:"error"`
		Skipped   *problem `xml:"skipped"`
	}
	type testsuite struct {
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Errors    int        `xml:"errors,attr"`
		Skipped   int        `xml:"skipped,attr"`
		Time      string     `xml:"time,attr"`
		Timestamp string     `xml:"timestamp,attr"`
		Cases     []testcase `xml:"testcase"`
	}
	var doc struct {
		XMLName xml.Name    `xml:"testsuites"`
		Suites  []testsuite `xml:"testsuite"`
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s is not well-formed JUnit XML: %v", args[0], err)
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		ts.Check(err)
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			ts.Fatalf("%s has content after its root element", args[0])
		}
	}
	checkTime := func(what, secs, stamp string) {
		if _, err := strconv.ParseFloat(secs, 64); err != nil {
			ts.Fatalf("%s: time %q is not seconds", what, secs)
		}
		if _, err := time.Parse(time.RFC3339, stamp); err != nil {
			ts.Fatalf("%s: timestamp %q is not RFC 3339", what, stamp)
		}
	}
	var out strings.Builder
	for _, s := range doc.Suites {
		checkTime("suite "+s.Name, s.Time, s.Timestamp)
		fmt.Fprintf(&out, "suite %s tests=%d failures=%d errors=%d skipped=%d\n", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped)
		if s.Tests != len(s.Cases) {
			ts.Fatalf("suite %s: tests=%d but %d testcases", s.Name, s.Tests, len(s.Cases))
		}
		for _, c := range s.Cases {
			status := "pass"
			switch {
			case c.Failure != nil:
				status = "failure: " + c.Failure.Message
			case c.Error != nil:
				status = "error: " + c.Error.Message
			case c.Skipped != nil:
				status = "skipped: " + c.Skipped.Message
			}
			if c.Skipped == nil {
				checkTime("case "+c.Name, c.Time, c.Timestamp)
			}
			fmt.Fprintf(&out, "  case %s (%s): %s\n", c.Name, c.Classname, status)
		}
	}
	ts.Stdout().Write([]byte(out.String()))
}

// cmdAddressLabelled asserts how many containers, networks and volumes
// carry a sandbox address label, whatever their state's lineage (a
// sandboxer test's state is gone when it ends):
//
//	addresslabelled ADDR N
func cmdAddressLabelled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: addresslabelled ADDR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	filter := "label=dev.sandboxer.address=" + args[0]
	got := 0
	for _, argv := range [][]string{
		{"ps", "-aq", "--filter", filter},
		{"network", "ls", "-q", "--filter", filter},
		{"volume", "ls", "-q", "--filter", filter},
	} {
		out, err := exec.Command("docker", argv...).Output()
		ts.Check(err)
		got += len(strings.Fields(string(out)))
	}
	if got != want {
		ts.Fatalf("addresslabelled: %d containers, networks and volumes carry address %s, want %d", got, args[0], want)
	}
}
