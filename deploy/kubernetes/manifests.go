package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

//go:embed *.yaml
var files embed.FS

// Objects decodes every document of every manifest, refusing an unknown
// or misspelt field.
func Objects() ([]runtime.Object, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			obj, _, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
