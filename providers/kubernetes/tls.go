package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxer/sandboxer/internal/certs"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// TLS. Each TLS instance gets its own CA (internal/certs), whose key
// signs the one server certificate and is dropped. The certificate must
// name every address a client dials: the Service's DNS names and the
// pod's IP, which the cluster assigns only once the pod's sandbox exists,
// after its volumes (the Secret among them) are mounted. So the key and
// certificates cannot be in the Secret: they go, over the exec API, into
// an in-memory emptyDir that an init container holds open. The init
// container waits for a marker file; sandboxer sees the pod's IP, makes
// the certificate, writes key, certificates and marker in one tar
// stream, and the init container exits, after which the services start
// with the files in place. No key is ever in the pod's spec or the
// Secret, or on disk.
const (
	tlsCertName = "server.crt"
	tlsKeyName  = "server.key"
	tlsCAName   = "ca.crt"
	// tlsInitName is the init container; tlsInitMount where it sees the
	// emptyDir; tlsReady the marker it waits for.
	tlsInitName  = "tls"
	tlsInitMount = "/tls"
	tlsReady     = ".ready"
)

// tlsInitContainer waits for the TLS files, as the service user of
// writer (the first service: PostgreSQL's when it runs), so that user
// owns them: PostgreSQL refuses a key owned by anyone but itself or root.
func tlsInitContainer(writer serviceRun, res corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:            tlsInitName,
		Image:           writer.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", "until [ -e " + tlsInitMount + "/" + tlsReady + " ]; do sleep 0.05; done"},
		SecurityContext: containerSecurity(writer.Facts),
		Resources:       res,
		VolumeMounts:    []corev1.VolumeMount{{Name: "tls", MountPath: tlsInitMount}},
	}
}

// tlsFiles is the tar stream the init container extracts: one directory
// per service (each container mounts its own as tlsDir), the marker last.
// PostgreSQL's key is 0600 (owned by the writer, the postgres user); the
// others' 0640, readable through the pod's fsGroup.
func tlsFiles(m *certs.Material, services []string, writer string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, svc := range services {
		keyMode := int64(0o640)
		if svc == writer {
			keyMode = 0o600
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: svc + "/", Mode: 0o750, ModTime: now}); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			name string
			mode int64
			body []byte
		}{{tlsCertName, 0o644, m.CertPEM}, {tlsKeyName, keyMode, m.KeyPEM}, {tlsCAName, 0o644, m.CAPEM}} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: svc + "/" + f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: now}); err != nil {
				return nil, err
			}
			if _, err := tw.Write(f.body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: tlsReady, Mode: 0o644, ModTime: now}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// deliverTLS makes the instance's certificate for its DNS names and the
// pod's IP, writes the CA file for clients and hands key and certificates
// to the init container.
func (p *Provider) deliverTLS(ctx context.Context, b *build, podIP string) error {
	hosts := append(b.dnsNames(), podIP, "localhost", "127.0.0.1", "::1")
	m, err := certs.New(b.req.Address, hosts, time.Now())
	if err != nil {
		return err
	}
	file, err := kit.WriteCAFile(p.CADir, b.name, m.CAPEM)
	if err != nil {
		return err
	}
	b.setCA(string(m.CAPEM), file)
	data, err := tlsFiles(m, b.services, b.services[0])
	if err != nil {
		return err
	}
	r := podRunner{p: p, pod: b.name, container: tlsInitName}
	err = retryCut(ctx, "hand the TLS files to the pod", b.name, func() error {
		err := r.execStdin(ctx, []string{"tar", "-xf", "-", "-C", tlsInitMount}, bytes.NewReader(data), nil)
		// The marker is the stream's last entry, and the init container
		// ends as soon as it exists, killing tar while it still closes up
		// (exit 137). An init container that then succeeded saw the
		// marker, so every file before it is in place. One that did not
		// is still waiting for it: a cut stream writes the files again.
		if err != nil && p.initSucceeded(ctx, b.name, tlsInitName) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("hand the TLS files to the pod: %w", err)
	}
	return nil
}

// initSucceeded reports whether the pod's init container name (TLS's,
// a fork's) ended with exit code 0, waiting a little for the kubelet to
// report it.
func (p *Provider) initSucceeded(ctx context.Context, pod, name string) bool {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := p.watchPod(wctx, pod, "", func(po *corev1.Pod) (bool, error) {
		if po == nil {
			return false, errors.New("pod gone")
		}
		for _, st := range po.Status.InitContainerStatuses {
			if st.Name != name || st.State.Terminated == nil {
				continue
			}
			if st.State.Terminated.ExitCode != 0 {
				return false, errors.New("init container failed")
			}
			return true, nil
		}
		return false, nil
	})
	return err == nil
}

// removeOrphanCAFile removes the CA file of an instance the orphan sweep
// removes (its name is the pod's); none counts as removed.
func (p *Provider) removeOrphanCAFile(name string) error {
	return kit.RemoveCAFile(p.CADir, name)
}
