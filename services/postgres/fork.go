package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/services/contract"
)

// Forks (sandboxer fork, issue 32). A running instance's data directory
// is copied at the file level from one instant: a CHECKPOINT first (so
// the copies' crash recovery replays little, and no WAL segment written
// before it is copied: spent or recycled ones, up to max_wal_size of
// them), then the data directory is copied beside itself in two passes (a reflink clone where the
// filesystem has them, a copy within memory on a tmpfs, a file copy
// otherwise): every file while the server runs, then, with every
// PostgreSQL process of the container stopped (SIGSTOP, from an exec as
// the server's own user: no `docker pause`, so a tmpfs data directory
// works too), again the files written or renamed since the first pass
// began, and the files removed since dropped; then the processes go on
// (SIGCONT). The hold is the second pass: it grows with what was
// written during the first, not with the size. Stopped processes make
// no write, so the copy is what a crash at that instant would leave:
// every commit whose WAL the server had written is in it (CHECKPOINT
// writes all WAL before it; synchronous_commit=off only delays the
// write of later commits, which then began during the fork), none
// after. The copies start from it (ForkStartScript) and recover as from
// a crash, in single-user mode, before they set their own passwords.
//
// The script that holds the server ends the hold itself: it resumes
// the processes when it exits, whatever ends it (its input closed when
// the runtime goes away, a failed copy; a watchdog when it is killed),
// so no fork leaves a source stopped.

// stagePattern is what a fork's stage name may be: it is written into
// shell scripts.
var stagePattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// ForkStageDir is the stage's directory name inside the data directory.
func ForkStageDir(stage string) string { return ".sbx-" + stage }

// ForkSize is the size of the data directory, in bytes.
func (Service) ForkSize(ctx context.Context, in contract.Instance) (int64, error) {
	var out strings.Builder
	if err := in.Run.Exec(ctx, OSUser, []string{"sh", "-c", `du -sk "$PGDATA" | cut -f 1`}, &out); err != nil {
		return 0, fmt.Errorf("measure the data directory: %w", err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("measure the data directory: du said %q", strings.TrimSpace(out.String()))
	}
	return kb * 1024, nil
}

// ForkCapture checkpoints (once the hold script has set its marker),
// copies the data directory into ForkStageDir(stage) beside the data,
// stops the server's processes, copies what changed again, runs during
// while the processes are stopped, and resumes them.
func (Service) ForkCapture(ctx context.Context, in contract.Instance, stage string, during func(context.Context) error) (contract.ForkCopy, error) {
	if !stagePattern.MatchString(stage) {
		return contract.ForkCopy{}, fmt.Errorf("fork stage %q: want letters, digits and '-'", stage)
	}
	run, ok := in.Run.(contract.StdinRunner)
	if !ok {
		return contract.ForkCopy{}, errors.New("this runtime cannot hold PostgreSQL for a fork (no exec with input)")
	}
	c := in.Creds
	conn, err := connectAs(ctx, c, c.AdminUser, c.AdminPassword, "postgres")
	if err != nil {
		return contract.ForkCopy{}, fmt.Errorf("connect as the admin: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run.ExecStdin(ctx, OSUser, []string{"sh", "-c", forkHoldScript(ForkStageDir(stage))}, inR, outW)
		outW.CloseWithError(err)
		inR.CloseWithError(io.ErrClosedPipe) // a write to a script gone fails
		done <- err
	}()
	var (
		out        contract.ForkCopy
		frozenAt   time.Time
		duringErr  error
		pointErr   error
		scriptNS   int64
		scriptSaid bool
		lines      = bufio.NewScanner(outR)
	)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 1 && f[0] == "marked":
			// The copies recover from this checkpoint: little to replay,
			// and no WAL segment the script's marker predates is needed.
			if _, pointErr = conn.Exec(ctx, "CHECKPOINT"); pointErr != nil {
				_ = inW.Close()
				continue
			}
			_, _ = io.WriteString(inW, "checkpointed\n")
		case len(f) == 1 && f[0] == "frozen":
			frozenAt = time.Now()
			// The other services are captured while the script makes
			// its second pass; its input's end lets it resume the server
			// as soon as both are done.
			if during != nil {
				duringErr = during(ctx)
			}
			_ = inW.Close()
		case len(f) == 1 && f[0] == "resumed":
		case len(f) == 2 && f[0] == "held":
			if n, perr := strconv.ParseInt(f[1], 10, 64); perr == nil {
				scriptNS, scriptSaid = n, true
			}
			if !frozenAt.IsZero() && out.Held == 0 {
				out.Held = time.Since(frozenAt)
			}
		case len(f) >= 2 && f[0] == "steps":
			out.Steps = strings.Join(f[1:], " ")
		case len(f) == 2 && f[0] == "path":
			out.Path = f[1]
		case len(f) == 2 && f[0] == "method":
			out.Method = f[1]
		}
	}
	_ = inW.Close()
	_, _ = io.Copy(io.Discard, outR)
	err = <-done
	if !frozenAt.IsZero() && out.Held == 0 {
		out.Held = time.Since(frozenAt)
	}
	// The script's own clock, from its first SIGSTOP to its last
	// SIGCONT (in 10 ms ticks), is the hold itself; the time seen here
	// adds the exec stream's latency and misses the stop itself, so it
	// is the figure only when the script said nothing.
	if scriptSaid {
		out.Held = time.Duration(scriptNS)
	}
	switch {
	case pointErr != nil:
		return out, fmt.Errorf("checkpoint: %w", pointErr)
	case err != nil:
		return out, fmt.Errorf("hold and copy the data directory: %w", err)
	case duringErr != nil:
		return out, duringErr
	case out.Path == "" || out.Method == "":
		return out, errors.New("hold and copy the data directory: the script ended without its copy")
	}
	return out, nil
}

// forkHoldScript is ForkCapture's script, run as the server's user in
// the source's container. It prints "marked" once its marker is set and
// waits for a line on its input (the CHECKPOINT is done; the input's end
// instead ends it with an error); "frozen" once every PostgreSQL
// process is stopped, "path P" and "method M" once the copy is made,
// and resumes the processes as soon as both the copy is made and its
// input has ended (or at once, on any failure); then "held NS" (the
// hold as the script measured it, from the first SIGSTOP to the last
// SIGCONT, in nanoseconds counted in the kernel's 10 ms ticks), "steps
// …" (the hold's parts, in milliseconds) and "resumed".
//
// sandboxer's own markers (ForkStarted, ForkFilled, TemplateMarker) are
// not captured: a copy of a copy must set its own passwords, and its
// start script skips that when it finds ForkStarted.
//
// Inside the hold it forks few processes, each a few milliseconds on a
// loaded host: the process listing reads /proc with the shell's own
// read, the second pass is one find and one tar pipe whatever the
// number of changed files, and the files removed since the first pass
// are dropped from the stage after the server goes on, from a listing
// taken while it stood still.
func forkHoldScript(stageDir string) string {
	return `stage="$PGDATA/` + stageDir + `"
since="$stage.since"
pids=""
# tick is the kernel's uptime in hundredths of a second, read without a
# process, for the hold's steps.
tick() { read -r u _ < /proc/uptime; u=${u%.*}${u#*.}; eval "$1=\${u#0}"; }
stop_all() {
	read -r pm < "$PGDATA/postmaster.pid" 2>/dev/null || pm=""
	case "$pm" in *[!0-9]*|"") ;; *) kill -STOP "$pm" 2>/dev/null && pids=" $pm" ;; esac
	for round in 1 2 3 4; do
		new=""
		for d in /proc/[0-9]*; do
			p=${d#/proc/}
			case " $pids " in *" $p "*) continue ;; esac
			c=""
			read -r c < "$d/comm" 2>/dev/null
			[ "$c" = postgres ] && new="$new $p"
		done
		[ -z "$new" ] && return 0
		kill -STOP $new 2>/dev/null
		pids="$pids $new"
	done
}
if ! grep -qx postgres /proc/[0-9]*/comm 2>/dev/null; then
	echo "sandboxer: no PostgreSQL process to hold" >&2
	exit 1
fi
rm -rf "$stage"
mkdir -m 0700 "$stage" || exit 1
# A runtime gone before it copied the stage out leaves it for at most
# half an hour.
( sleep 1800; rm -rf "$stage" "$since" "$since".* ) >/dev/null 2>&1 &
method=copy
case "$(stat -f -c %T "$PGDATA" 2>/dev/null)" in tmpfs|ramfs) method=memory ;; esac
flag=""
if [ "$method" = copy ] && cp -a --reflink=always "$PGDATA/PG_VERSION" "$stage/.probe" 2>/dev/null; then
	method=reflink
	flag=--reflink=always
fi
rm -f "$stage/.probe"
# GNU find and cp do the second pass in two processes; others (busybox)
# in four.
gnu=""
find "$PGDATA" -maxdepth 0 -fprint /dev/null >/dev/null 2>&1 && cp --help 2>&1 | grep -q -e --parents && gnu=1
# copy_changed copies the files written or renamed since the marker $1
# (a file written after it, and after the pause that puts later writes
# on a later clock tick, has a newer time), listing them in $2; with
# GNU find it lists every file in $3 too.
copy_changed() {
	if [ -n "$gnu" ] && [ -n "$3" ]; then
		find . -path './.sbx-*' -prune -o -type f -fprint "$3" \( -newer "$1" -o -cnewer "$1" \) ! -name postmaster.pid ! -name postmaster.opts ! -name ` + ForkStarted + ` ! -name ` + ForkFilled + ` ! -name ` + TemplateMarker + ` -print > "$2" || return 1
	else
		find . -path './.sbx-*' -prune -o -type f \( -newer "$1" -o -cnewer "$1" \) ! -name postmaster.pid ! -name postmaster.opts ! -name ` + ForkStarted + ` ! -name ` + ForkFilled + ` ! -name ` + TemplateMarker + ` -print > "$2" || return 1
	fi
	tick t2
	[ -s "$2" ] || return 0
	list=$2
	if [ -n "$gnu" ]; then
		set --
		while read -r f; do set -- "$@" "$f"; done < "$list"
		cp -a $flag --parents "$@" "$stage/" || return 1
	else
		tar -c -f - -T "$list" | tar -x -f - -C "$stage" || return 1
	fi
}
# The marker every later pass compares with, set before the runtime's
# CHECKPOINT ("marked", then a line on the input once it is done: its
# end instead is a failure).
touch "$since" || exit 1
sleep 0.05
echo marked
read -r _ || exit 1
# Pass 1, the server running: every file but the WAL segments not
# written since the marker (recovery starts at that CHECKPOINT; the
# rest are spent or recycled segments, up to max_wal_size of them).
# Then more passes while it runs, each of the files changed since the
# one before began, so the pass in the hold has only what changed
# during the last, short one.
for f in "$PGDATA"/*; do
	case "${f##*/}" in postmaster.pid|postmaster.opts|` + ForkStarted + `|` + ForkFilled + `|` + TemplateMarker + `) continue ;; esac
	if [ "${f##*/}" = pg_wal ] && [ -d "$f" ] && [ ! -L "$f" ]; then
		mkdir "$stage/pg_wal" && chmod "$(stat -c %a "$f")" "$stage/pg_wal" || exit 1
		for w in "$f"/*; do
			case "${w##*/}" in
			[0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F][0-9A-F])
				[ "$w" -nt "$since" ] || continue ;;
			esac
			# A checkpoint may recycle a segment meanwhile.
			cp -a $flag "$w" "$stage/pg_wal/" || [ ! -e "$w" ] || exit 1
		done
		continue
	fi
	cp -a $flag "$f" "$stage/" || exit 1
done
cd "$PGDATA" || exit 1
# Until what a pass copied is small (16 MiB, GNU du tells; two passes
# without it), at most ten: a table rewritten throughout (an autovacuum
# over a freshly loaded gigabyte) is copied again here, not in the hold.
round=0
while [ "$round" -lt 10 ]; do
	round=$((round + 1))
	touch "$since.next" || exit 1
	sleep 0.05
	copy_changed "$since" "$since.copy" "" || exit 1
	mv -f "$since.next" "$since" || exit 1
	if [ -n "$gnu" ]; then
		kb=0
		if [ -s "$since.copy" ]; then
			kb=$(tr '\n' '\0' < "$since.copy" | du -ck --files0-from=- 2>/dev/null | tail -n 1 | cut -f 1)
		fi
		case "$kb" in *[!0-9]*|"") kb=0 ;; esac
		[ "$kb" -le 16384 ] && [ "$round" -ge 2 ] && break
	else
		[ "$round" -ge 2 ] && break
	fi
done
# Should this shell die by a signal it cannot trap, the watchdog resumes
# every PostgreSQL process as soon as it is gone (started before the
# hold: a fork inside it costs the writers time).
( while kill -0 $$ 2>/dev/null; do sleep 0.1; done
  for d in /proc/[0-9]*; do c=""; read -r c < "$d/comm" 2>/dev/null; [ "$c" = postgres ] && kill -CONT "${d#/proc/}" 2>/dev/null; done ) >/dev/null 2>&1 &
trap 'kill -CONT $pids 2>/dev/null' EXIT
tick ts
stop_all
if [ -z "$pids" ]; then
	echo "sandboxer: no PostgreSQL process to hold" >&2
	exit 1
fi
echo frozen
tick t1
# Pass 2, the server stopped: the files written or renamed since the
# last marker again; and the list of every file, so the files gone
# since pass 1 can leave the stage once the server goes on.
copy_changed "$since" "$since.copy" "$since.all" || exit 1
tick t3
if [ -z "$gnu" ]; then
	find . -path './.sbx-*' -prune -o -type f -print > "$since.all" || exit 1
fi
tick t4
echo "path $stage"
echo "method $method"
read -r _ || true
tick t5
kill -CONT $pids 2>/dev/null
tick te
trap - EXIT
# The hold in the kernel's 10 ms ticks, read without a process (a clock
# read by a process would count its start, tens of ms on a loaded host).
echo "held $(((te - ts) * 10000000))"
echo "steps stop+notify=$(((t1 - ts) * 10))ms find=$(((t2 - t1) * 10))ms copy=$(((t3 - t2) * 10))ms($(wc -l < "$since.copy")files) list=$(((t4 - t3) * 10))ms wait=$(((t5 - t4) * 10))ms (10ms ticks)"
# The files removed since pass 1 (recycled WAL, dropped relations)
# leave the stage; the server is running again.
(cd "$stage" && find . -type f -print) > "$since.staged" || exit 1
grep -vxF -f "$since.all" "$since.staged" | while read -r f; do rm -f "$stage/$f"; done
rm -f "$since" "$since".*
echo resumed
`
}

// ForkClean removes the stage from the source's data directory.
func (Service) ForkClean(ctx context.Context, in contract.Instance, stage string, _ contract.ForkCopy) error {
	if !stagePattern.MatchString(stage) {
		return fmt.Errorf("fork stage %q: want letters, digits and '-'", stage)
	}
	d := `"$PGDATA/` + ForkStageDir(stage)
	return in.Run.Exec(ctx, OSUser, []string{"sh", "-c", `rm -rf ` + d + `" ` + d + `.since"*`}, nil)
}

// ForkArgs is nil: the runtime starts a copy from its data directory
// (ForkStartScript).
func (Service) ForkArgs(string, contract.ForkCopy) []string { return nil }

// ForkFilled and ForkStarted are a copy's markers in its data
// directory: the runtime writes ForkFilled once the captured data is
// unpacked there (ForkFillCommand); the start script writes ForkStarted
// once the copy has its own passwords, so a restarted container starts
// the server at once.
const (
	ForkFilled  = "sandboxer-fork.filled"
	ForkStarted = "sandboxer-fork.started"
)

// ForkFillCommand unpacks the tar stream on its input (the stage's
// contents, ForkCaptureCommand's output) into the copy's $PGDATA and
// writes ForkFilled; run as OSUser in the copy's started container.
func ForkFillCommand() []string {
	return []string{"sh", "-c", `tar -x -f - -C "$PGDATA" && touch "$PGDATA/` + ForkFilled + `"`}
}

// ForkCaptureCommand writes the stage at path (ForkCopy.Path) as a tar
// stream of its contents; run as OSUser in the source's container.
func ForkCaptureCommand(path string) []string {
	return []string{"tar", "-c", "-f", "-", "-C", path, "."}
}

// ForkStartScript is a copy's entrypoint, as TemplateStartScript's but
// filled by the runtime: it waits (up to ten minutes) until the
// runtime has unpacked the captured data directory into $PGDATA
// (ForkFillCommand), then the sessions (the copy's own passwords) run
// in single-user mode, which first recovers the data as after a crash,
// and only then does the image's entrypoint start the server. Nothing
// listens before every password is the copy's.
func ForkStartScript(sessions []Session, sessionFiles []string, serverArgs []string) []byte {
	return startScript(`[ -e "$PGDATA/`+ForkStarted+`" ]`, `mkdir -p "$PGDATA"
chmod 0700 "$PGDATA"
n=0
while [ ! -e "$PGDATA/`+ForkFilled+`" ]; do
	n=$((n + 1))
	if [ "$n" -gt 12000 ]; then
		echo "sandboxer: the forked data directory never arrived" >&2
		exit 1
	fi
	sleep 0.05
done
rm -f "$PGDATA/`+ForkFilled+`" "$PGDATA/postmaster.pid"
if [ ! -s "$PGDATA/PG_VERSION" ] || [ ! -s "$PGDATA/global/pg_control" ]; then
	echo "sandboxer: the forked data directory is incomplete" >&2
	exit 1
fi
`, sessions, sessionFiles, serverArgs, `touch "$PGDATA/`+ForkStarted+`"
`)
}
