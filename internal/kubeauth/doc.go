// Package kubeauth verifies Kubernetes ServiceAccount tokens for serve
// (serve --kube-auth): an agent pod presents its projected token, and the
// cluster's API server says, through a TokenReview, whether it is valid
// for our audience and whose it is.
//
// Its rules:
//   - A token is valid only when the review says authenticated, its
//     audiences hold ours, and its user is a ServiceAccount
//     ("system:serviceaccount:NAMESPACE:NAME"); anything else is
//     ErrUnauthenticated. Which tenant that ServiceAccount is, is the
//     tenants file's business (tenants.Set.ServiceAccount), not this
//     package's.
//   - Only a JWT-shaped token is sent to the API server: a ServiceAccount
//     token is one, and anything else (a mistyped tenant token) is
//     refused without leaving the process.
//   - At most MaxInFlight reviews wait on the API server at once, and the
//     calls with one token that arrive together make one.
//   - An API server that cannot answer is ErrUnavailable, never a
//     refusal and never a success: serve answers 503 and the agent tries
//     again.
//   - Answers, both ways, are kept for a short while (CacheTTL, never past
//     the token's own exp) by the token's SHA-256, in a bounded cache; the
//     token itself is never kept, logged, or put in an error. A token
//     revoked or expired at the API server is refused within CacheTTL.
//   - It speaks to the API server with net/http and JSON fields of its
//     own: the sandboxer binary links nothing of client-go or k8s.io
//     (TestBinaryLinksNoKubernetes).
package kubeauth
