package postgres

// TLSArgs switch TLS on and point the server at an hba file (TLSOnlyHBA)
// that takes TCP logins only over TLS; the socket stays trusted, as in
// the image, for its init scripts. The paths are where the runtime put
// the files.
func TLSArgs(certFile, keyFile, hbaFile string) []string {
	return []string{
		"-c", "ssl=on",
		"-c", "ssl_cert_file=" + certFile,
		"-c", "ssl_key_file=" + keyFile,
		"-c", "ssl_min_protocol_version=TLSv1.2",
		"-c", "hba_file=" + hbaFile,
	}
}

// TLSOnlyHBA refuses every TCP connection that is not TLS.
func TLSOnlyHBA() []byte {
	return []byte("# sandboxer: TLS only over TCP\n" +
		"local     all all     trust\n" +
		"hostssl   all all all scram-sha-256\n" +
		"hostnossl all all all reject\n")
}
