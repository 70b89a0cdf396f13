package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/services"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
)

// fileOwner is the uid and gid that own the files copied into a service's
// containers: the user the service runs as in that image. PostgreSQL
// refuses a TLS key owned by anyone but itself or root, and a 0600 file
// owned by another uid cannot be read at all, so this must be the image's
// own user, not an assumed one (999 on Debian, 70 on Alpine, others on
// vendors' images).
type fileOwner struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// serviceAccount is the account the official image of a service switches
// to when it starts as root.
func serviceAccount(service string) string {
	if s, ok := services.Lookup(service); ok {
		return s.Account()
	}
	return service
}

// maxAccountFile bounds reading /etc/passwd or /etc/group from an image.
const maxAccountFile = 1 << 20

// readOwner finds the service user of a created, not started container of
// the image: its USER, when that is not root, else the service's account
// in its /etc/passwd.
func (p *Provider) readOwner(ctx context.Context, id, service string, ii image.InspectResponse) (fileOwner, error) {
	passwd, err := p.readImageFile(ctx, id, "/etc/passwd")
	if err != nil {
		return fileOwner{}, err
	}
	group, err := p.readImageFile(ctx, id, "/etc/group")
	if err != nil {
		return fileOwner{}, err
	}
	user := ""
	if ii.Config != nil {
		user = ii.Config.User
	}
	return resolveOwner(user, serviceAccount(service), passwd, group)
}

// readImageFile returns one file of a container's file system; nil when
// it does not exist.
func (p *Provider) readImageFile(ctx context.Context, id, file string) ([]byte, error) {
	rc, _, err := p.cli.CopyFromContainer(ctx, id, file)
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, p.engineErr("read "+file+" from the image", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil || h.Typeflag != tar.TypeReg {
		return nil, nil // a link or something odd: as if absent
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxAccountFile))
	if err != nil {
		return nil, fmt.Errorf("read %s from the image: %w", file, err)
	}
	return b, nil
}

// resolveOwner applies the rule of readOwner to an image's USER (as
// Docker reads it: "name", "uid", "name:group", "uid:gid") and the
// contents of its /etc/passwd and /etc/group. An image that names no user
// and has no account for the service runs it as root, so root owns the
// files. A USER naming an account the image lacks is an error: the engine
// could not start such a container either.
func resolveOwner(user, account string, passwd, group []byte) (fileOwner, error) {
	users := parseAccounts(passwd, true)
	if u, g, _ := strings.Cut(user, ":"); u != "" && u != "0" && u != "root" {
		var o fileOwner
		var a accountEntry
		var known bool
		if n, err := strconv.Atoi(u); err == nil {
			o.UID = n
			a, known = findAccount(users, func(e accountEntry) bool { return e.id == n })
		} else if a, known = findAccount(users, func(e accountEntry) bool { return e.name == u }); known {
			o.UID = a.id
		} else {
			return fileOwner{}, fmt.Errorf("the image's USER %q names no account in its /etc/passwd", user)
		}
		switch {
		case g != "":
			n, err := strconv.Atoi(g)
			if err != nil {
				gr, ok := findAccount(parseAccounts(group, false), func(e accountEntry) bool { return e.name == g })
				if !ok {
					return fileOwner{}, fmt.Errorf("the image's USER %q names no group in its /etc/group", user)
				}
				n = gr.id
			}
			o.GID = n
		case known:
			o.GID = a.gid
		}
		return o, nil
	}
	if a, ok := findAccount(users, func(e accountEntry) bool { return e.name == account }); ok {
		return fileOwner{UID: a.id, GID: a.gid}, nil
	}
	return fileOwner{}, nil
}

// accountEntry is one line of /etc/passwd (name, uid, gid) or /etc/group
// (name, gid as id).
type accountEntry struct {
	name    string
	id, gid int
}

// parseAccounts reads passwd ("name:x:uid:gid:…", withGID) or group
// ("name:x:gid:…") lines in file order. Malformed lines are skipped, as
// the C library does.
func parseAccounts(b []byte, withGID bool) []accountEntry {
	var out []accountEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 3 || (withGID && len(f) < 4) {
			continue
		}
		e := accountEntry{name: f[0]}
		var err error
		if e.id, err = strconv.Atoi(f[2]); err != nil {
			continue
		}
		if withGID {
			if e.gid, err = strconv.Atoi(f[3]); err != nil {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// findAccount returns the first entry that matches, as getpwnam and
// getpwuid do.
func findAccount(entries []accountEntry, match func(accountEntry) bool) (accountEntry, bool) {
	for _, e := range entries {
		if match(e) {
			return e, true
		}
	}
	return accountEntry{}, false
}
