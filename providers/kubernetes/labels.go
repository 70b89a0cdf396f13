package kubernetes

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Labels and annotations on everything this package makes. A label value
// holds at most 63 characters of a narrow set, so the address and the
// lineage go into labels through labelValue (for selectors) and, exactly,
// into annotations of the same key (for ListManaged's answer).
const (
	LabelManaged    = "sandboxer.dev/managed" // "true"
	LabelLineage    = "sandboxer.dev/lineage"
	LabelAddress    = "sandboxer.dev/address"
	LabelGeneration = "sandboxer.dev/generation"
	// LabelPod names the instance (its pod's name) on every object of it;
	// the Service and the NetworkPolicy select the pod by it.
	LabelPod = "sandboxer.dev/pod"
	// LabelClientOf marks a client pod of a lineage's sandboxes (value:
	// the lineage's shared name, sharedName; for a sandbox made before
	// issue 30, its pod name): the NetworkPolicy admits ingress from pods
	// labelled so, in its namespace.
	LabelClientOf = "sandboxer.dev/client-of"
	// LabelShared marks a lineage's shared headless Service and
	// NetworkPolicy (shared.go), which belong to no one sandbox.
	LabelShared = "sandboxer.dev/shared"
	// LabelInspect marks the short-lived pods and Secrets Check makes to
	// learn what an image provides. They belong to no sandbox (no
	// lineage): the orphan sweep leaves them alone; Check deletes its own
	// and any a killed run left behind (inspect.go).
	LabelInspect = "sandboxer.dev/inspect"

	AnnotationAddress = "sandboxer.dev/address"
	AnnotationLineage = "sandboxer.dev/lineage"
)

// instanceLabels are the labels of every object of one instance.
func instanceLabels(address, lineage string, generation int, name string) map[string]string {
	return map[string]string{
		LabelManaged:    "true",
		LabelLineage:    labelValue(lineage),
		LabelAddress:    labelValue(address),
		LabelGeneration: strconv.Itoa(generation),
		LabelPod:        name,
	}
}

func instanceAnnotations(address, lineage string) map[string]string {
	return map[string]string{AnnotationAddress: address, AnnotationLineage: lineage}
}

// instanceMeta is the metadata of every object of one instance.
func (p *Provider) instanceMeta(address, lineage string, generation int, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   p.ns,
		Labels:      instanceLabels(address, lineage, generation, name),
		Annotations: instanceAnnotations(address, lineage),
	}
}

// managedSelector selects every managed object of lineage ("" every
// lineage's).
func managedSelector(lineage string) string {
	set := labels.Set{LabelManaged: "true"}
	if lineage != "" {
		set[LabelLineage] = labelValue(lineage)
	}
	return labels.SelectorFromSet(set).String()
}

// identity is what an object's labels and annotations say it is.
type identity struct {
	Address, Lineage string
	Generation       int // -1 when missing or malformed
}

func identityOf(m metav1.ObjectMeta) identity {
	gen, err := strconv.Atoi(m.Labels[LabelGeneration])
	if err != nil {
		gen = -1
	}
	id := identity{Address: m.Annotations[AnnotationAddress], Lineage: m.Annotations[AnnotationLineage], Generation: gen}
	if id.Address == "" {
		id.Address = m.Labels[LabelAddress]
	}
	if id.Lineage == "" {
		id.Lineage = m.Labels[LabelLineage]
	}
	return id
}

// ownedBy reports whether m is a managed object of the instance at
// address (the record's label address).
func ownedBy(m metav1.ObjectMeta, address string) bool {
	return m.Labels[LabelManaged] == "true" && identityOf(m).Address == address
}
