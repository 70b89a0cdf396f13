#!/usr/bin/env bash
# Writes the cluster's PKI into .kube/run/pki and the admin kubeconfig to
# .kube/kubeconfig: one CA; the apiserver's serving certificate (loopback,
# the node IP, the first service IP and the kubernetes.default names);
# client certificates for the admin (system:masters), the kubelet
# (system:node:NODE), the apiserver's calls to the kubelet and a user with
# no rights (sandboxer-restricted, group sandboxer:restricted, kubeconfig
# .kube/kubeconfig-restricted); the service-account signing key pair. Keys never leave .kube/run (mode 600).
#
#   scripts/kube/certs.sh NODE_IP
set -euo pipefail
. "$(dirname "$0")/lib.sh"

node_ip=$1
pki="$KUBE_RUN/pki"
mkdir -p "$pki"
chmod 700 "$pki"
cd "$pki"

ossl() { openssl "$@" 2>/dev/null; }

# P-256 keys: RSA key generation took seconds of the start on 2 cores.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)
ossl req -x509 "${ec[@]}" -nodes -keyout ca.key -out ca.crt -days 30 \
  -subj "/CN=sandboxer-kube-ca"

# issue NAME SUBJECT [SAN]: a key and a certificate signed by the CA.
issue() {
  local name=$1 subj=$2 san=${3:-} ext
  ossl req "${ec[@]}" -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj"
  ext="$name.ext"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    if [ -n "$san" ]; then
      echo "extendedKeyUsage=serverAuth"
      echo "subjectAltName=$san"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  ossl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out "$name.crt" -days 30 -extfile "$ext"
  rm -f "$name.csr" "$ext"
}

# The first address of the service range is the kubernetes Service's.
svc_ip="${SERVICE_CIDR%/*}"
svc_ip="${svc_ip%.*}.1"
issue apiserver "/CN=kube-apiserver" \
  "IP:127.0.0.1,IP:$node_ip,IP:$svc_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN"
issue admin "/O=system:masters/CN=sandboxer-admin"
issue kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
issue apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
# A user with no rights until a test binds a Role to it (RBAC denials).
issue restricted "/O=sandboxer:restricted/CN=sandboxer-restricted"
ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key
ossl pkey -in sa.key -pubout -out sa.pub
chmod 600 ./*.key

# kubeconfig FILE CERT: a kubeconfig for the apiserver at the node IP.
kubeconfig() {
  local file=$1 cert=$2
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandboxer-kube
  cluster:
    server: https://$node_ip:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 ca.crt)
users:
- name: $cert
  user:
    client-certificate-data: $(base64 -w0 "$cert.crt")
    client-key-data: $(base64 -w0 "$cert.key")
contexts:
- name: sandboxer-kube
  context:
    cluster: sandboxer-kube
    user: $cert
current-context: sandboxer-kube
EOF
  chmod 600 "$file"
}
kubeconfig "$pki/admin.kubeconfig" admin
kubeconfig "$pki/kubelet.kubeconfig" kubelet
kubeconfig "$pki/restricted.kubeconfig" restricted
mkdir -p "$(dirname "$KUBECONFIG_PATH")"
cp "$pki/admin.kubeconfig" "$KUBECONFIG_PATH"
cp "$pki/restricted.kubeconfig" "$KUBECONFIG_RESTRICTED"
