package postgres

import (
	"path"

	"github.com/sandboxer/sandboxer/internal/scram"
	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// HBAFileName is the TLS-only hba file among the start's files.
const HBAFileName = "pg_hba.conf"

// Start is the official image's contract with sandboxer's admin as
// POSTGRES_USER, its password as a file, the init script (a SCRAM
// verifier, no clear password) among the image's own init scripts, the
// data directory a subdirectory of the runtime's data root (the
// entrypoint creates it as the postgres user: initdb and the server
// refuse a data directory they do not own), durability off and the lean
// settings; with TLS, TCP logins over TLS only.
func (Service) Start(in contract.StartInput, at contract.Placement) (contract.Start, error) {
	c := in.Creds
	verifier, err := scram.Verifier(c.Password.Reveal())
	if err != nil {
		return contract.Start{}, err
	}
	files := map[string][]byte{
		PasswordFile:   []byte(c.AdminPassword.Reveal()),
		InitScriptName: InitScript(c, verifier, in.Features, in.Allowed),
	}
	env := []string{
		"POSTGRES_USER=" + c.AdminUser,
		"POSTGRES_PASSWORD_FILE=" + path.Join(at.SecretDir, PasswordFile),
		"POSTGRES_DB=postgres",
		"POSTGRES_INITDB_ARGS=" + InitdbArgs,
		"PGDATA=" + path.Join(at.DataRoot, "pgdata"),
	}
	env = append(env, UTCUnlessSet(in.ImageEnv)...)
	env = append(env, ServerBinFirst(in.ImageEnv)...)
	args := []string{"postgres", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
	args = append(args, LeanArgs...)
	args = append(args, PreloadArgs(in.Features)...)
	if at.TLSCert != "" {
		files[HBAFileName] = TLSOnlyHBA()
		args = append(args, TLSArgs(at.TLSCert, at.TLSKey, path.Join(at.SecretDir, HBAFileName))...)
	}
	return contract.Start{
		Files: files,
		// The init script goes in beside whatever the image ships there
		// (postgis has 10_postgis.sh), as one file.
		Mounts:    map[string]string{path.Join(InitDir, InitScriptName): InitScriptName},
		Args:      args,
		Env:       env,
		Derived:   []state.Secret{state.Secret(verifier)},
		NeedsData: true,
	}, nil
}
