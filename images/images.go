// Package images holds what a probe container is made of: the probe
// image's Dockerfile and the script that builds its base without a
// registry, embedded so that a binary installed with go install can build
// the image with no checkout. It is not the Docker runtime (sandbox/docker),
// which runs containers from the image.
package images

import (
	_ "embed"
	"os"
	"path/filepath"
)

//go:embed probe/Dockerfile
var Dockerfile []byte

//go:embed build-offline.sh
var buildOffline []byte

// WriteTree writes the Dockerfile and the offline build script under dir
// as they lie in the repository (dir/images/probe/Dockerfile,
// dir/images/build-offline.sh) and returns the script's path.
func WriteTree(dir string) (string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "images", "probe"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "images", "probe", "Dockerfile"), Dockerfile, 0o644); err != nil {
		return "", err
	}
	script := filepath.Join(dir, "images", "build-offline.sh")
	return script, os.WriteFile(script, buildOffline, 0o755)
}
