package kube

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errList is one field.Invalid error, as apierrors.NewInvalid takes it.
func errList(path string, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}
