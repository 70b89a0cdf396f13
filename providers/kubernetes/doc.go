// Package kubernetes provisions sandbox instances on a Kubernetes cluster,
// in one namespace, through client-go. It implements apply.Provider and
// the capabilities apply.Inventory, snapshot.Engine and snapshot.SQLRunner,
// the same contracts as providers/docker, and asks services.Service what
// each service is (the files, args and env its container starts with,
// its readiness and feature checks, its prober, its data mover), so no
// service logic lives here but the inspection of an image (inspect.go,
// inspect_modules.go). What it does as the Docker runtime does is in
// providers/internal/kit.
//
// What a sandbox is on Kubernetes (one instance; its objects share one
// name, sbx-<12 lineage characters>-<address>-g<generation>, names.go):
//   - a Pod with one container per service, run as the image's own
//     service user (its uid found by the image inspection, never assumed),
//     never privileged, without privilege escalation, every capability
//     dropped, seccomp RuntimeDefault, no service account token, no
//     service links, restartPolicy Never (a stopped service makes the
//     sandbox dead, and it is replaced), terminationGracePeriodSeconds 2,
//     imagePullPolicy IfNotPresent (locally imported images work, a
//     cluster with a registry pulls). Memory limit = memory_mb per
//     container, request 1/16 of it; pids_limit cannot be set per pod (it
//     is the kubelet's node-wide podPidsLimit). PostgreSQL's data is in an
//     emptyDir, in memory with storage = "tmpfs". Its hostname is its name
//     and its subdomain the lineage's shared Service, so
//     <pod>.sbx-<lineage>.<namespace>.svc.cluster.local resolves in the
//     cluster;
//   - a Secret holding the admin password file (the image's
//     POSTGRES_PASSWORD_FILE), the init script (a SCRAM verifier, no clear
//     password), the Redis ACL file (hashes only) and, with TLS, the
//     TLS-only hba file, mounted read-only, each container seeing only its
//     own keys. Immutable; created just before the pod (a pod created
//     first often found its volume's Secret missing and waited for the
//     kubelet's retry), so without an owner reference: Delete removes it
//     by its recorded UID and the orphan sweep by its labels.
//
// That is two writes and one watch (the pod's IP, then the services'
// own probes) per sandbox created, and two deletes per sandbox removed:
// the record lists the pod's and the Secret's UIDs (state.Resources.Owned)
// and each delete is conditional on its UID, with no read first; the pod
// is deleted with no grace period, so it is gone from the API at once,
// and Delete then waits over the network (not the API, at most 10 s)
// until its services stop accepting connections.
//
// What a lineage's sandboxes share (shared.go), both named
// sbx-<12 lineage characters>, made on the lineage's first Create in a
// process (AlreadyExists is success, concurrent first uses share one
// attempt) and labelled sandboxer.dev/shared:
//   - a headless Service (clusterIP None, publishNotReadyAddresses)
//     selecting the lineage's pods, which gives each its DNS name;
//   - a NetworkPolicy admitting ingress to the services' ports of the
//     lineage's pods only from pods labelled
//     sandboxer.dev/client-of=sbx-<12 lineage characters> (the second
//     label of every handed-out in-cluster host name) and from outside
//     the cluster (an ipBlock). The local cluster's bridge network plugin
//     does not enforce policies; a cluster with a policy-enforcing plugin
//     does.
//
// They are not removed by a sandbox's Delete (it would have to ask
// whether it was the last): ListManaged reports them once no pod of
// their lineage is left, so the orphan sweep (reap, the janitor) and
// DeleteManaged remove them then. Sandboxes made before this layout
// (records without Owned) have a Service and a NetworkPolicy of their
// own, named like the pod and owned by it; their Delete reads the pod,
// checks its labels and removes all four, as they were made.
//
// Everything of a sandbox carries sandboxer.dev/* labels (managed, lineage, address,
// generation, pod; values that do not fit a label are hashed, the exact
// value is in an annotation of the same key): the labels, not what state
// remembers, are the source of truth after a crash (ListManaged,
// DeleteManaged).
//
// Endpoints. Credentials.Host and Port are the pod's IP and the container
// port: reachable from where sandboxer runs when pod IPs are routable
// there (the local cluster, a node, a pod, a flat-network cluster);
// a port-forward for clusters whose pod network is not is future work.
// NetworkHost and NetworkPort are the pod's DNS name in the lineage's
// shared Service and the container port, for clients in the cluster.
// Readiness is the services' own protocol probe with the handed-out credentials on the pod's IP,
// never the kubelet's view. With TLS, each instance has its own CA; the
// certificate names the pod's DNS names and the pod's IP, which exists
// only once the pod's sandbox does, so the key and certificates reach the
// pod over the exec API into an in-memory volume that an init container
// holds until they are there (tls.go), never through the pod spec or the
// Secret.
//
// PostgreSQL starts from a template data directory (pgtemplate.go, issue
// 31): the first sandbox of an image and init settings has a throwaway
// pod run the image's entrypoint once, and the archive of its data
// directory is kept in immutable ConfigMaps (labelled
// sandboxer.dev/template) that every later sandbox's pod mounts and
// unpacks before the image's entrypoint runs; the sandbox's passwords are
// set before anything listens. template = false turns it off.
//
// Check learns what an image provides from a short-lived inspection pod
// (inspect.go) and caches it by the image's digest (capabilities.go).
//
// Every pod a sandbox has meets the restricted Pod Security standard. The
// inspection pod runs as the image's default user (to learn its USER);
// where the namespace enforces the restricted standard, it runs as nobody
// instead, and the service then runs as its account in the image.
//
// What this package must never do:
//   - put a password in an error, an event, a label, an annotation, an
//     environment variable, a command line or the pod spec (the Secret's
//     files carry them; errors are scrubbed of them);
//   - run a container privileged, as root, with a capability or with
//     privilege escalation allowed;
//   - start an image that is neither the configured one nor, when none is
//     configured, a default image;
//   - delete an object that does not carry its labels (Delete removes
//     only the UIDs Create recorded, or, for older records, checks the
//     pod's labels; the others share its name), or create one without
//     them;
//   - decide readiness from the kubelet's view alone (a Running pod is not
//     a server that answers with the handed-out credentials);
//   - hand out a PostgreSQL superuser or a Redis user that can load
//     modules, change configuration or run debug commands.
package kubernetes
