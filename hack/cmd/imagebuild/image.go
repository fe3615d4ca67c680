package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Label keys. The org.opencontainers.image ones are the OCI annotation
// keys, used both as config labels (which docker-archive keeps) and as
// manifest annotations (which a registry keeps).
const (
	labelTitle      = "org.opencontainers.image.title"
	labelVersion    = "org.opencontainers.image.version"
	labelSource     = "org.opencontainers.image.source"
	labelLocalBuild = "dev.csi.zonepath.local-build"
	labelBase       = "dev.csi.zonepath.base"
)

// searchPath is the image's PATH: k8s.io/mount-utils finds mount and
// umount through it.
const searchPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// nonRoot is the user of images whose binary needs no root, numeric so
// that the kubelet can enforce runAsNonRoot (distroless' nonroot user).
const nonRoot = "65532:65532"

// imageInput is everything an image is made of.
type imageInput struct {
	tag    name.Tag
	layers []layer
	config v1.Config
}

// configFile is the image's config; with deterministic layers it is a
// pure function of the inputs, so comparing it tells if a tarball is current.
func (in imageInput) configFile() *v1.ConfigFile {
	cf := &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config:       in.config,
		RootFS:       v1.RootFS{Type: "layers"},
	}
	for _, l := range in.layers {
		cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, l.diffID)
		cf.History = append(cf.History, v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "make images: " + l.name})
	}
	return cf
}

// image assembles the image: the layers, then the config and annotations.
func (in imageInput) image() (v1.Image, error) {
	adds := make([]mutate.Addendum, 0, len(in.layers))
	for _, l := range in.layers {
		gz, err := l.v1Layer()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: gz})
	}
	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	if img, err = mutate.ConfigFile(img, in.configFile()); err != nil {
		return nil, err
	}
	annotations := map[string]string{}
	for k, v := range in.config.Labels {
		if k != labelLocalBuild && k != labelBase {
			annotations[k] = v
		}
	}
	return mutate.Annotations(img, annotations).(v1.Image), nil
}

// write stores the image as a docker-archive tarball at path unless the
// tarball there already holds this tag with this config. It reports
// whether it wrote. The tarball appears whole or not at all.
func (in imageInput) write(path string) (bool, error) {
	if in.current(path) {
		return false, nil
	}
	img, err := in.image()
	if err != nil {
		return false, fmt.Errorf("image %s: %w", in.tag, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, in.tag, img); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("writing %s: %w", tmp, err)
	}
	return true, os.Rename(tmp, path)
}

// current reports whether path holds in.tag with exactly in's config
// (layer diff IDs included).
func (in imageInput) current(path string) bool {
	tag := in.tag
	old, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		return false
	}
	oldCF, err := old.ConfigFile()
	if err != nil {
		return false
	}
	a, errA := json.Marshal(oldCF)
	b, errB := json.Marshal(in.configFile())
	return errA == nil && errB == nil && bytes.Equal(a, b)
}
