// Package kubernetes holds no code: its test decodes the manifests in this
// folder strictly into the upstream Kubernetes, Gateway API and inference
// extension types and checks how they are wired to each other and to
// siskin (see README.md).
package kubernetes
