package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every entry's modification time: the same inputs give the same
// layer digests, which lets a warm run find its images up to date and lets
// container runtimes share the base layers between images.
var epoch = time.Unix(0, 0).UTC()

// layer is one built image layer, uncompressed, with the diff ID the
// config records. It is compressed only when an image that holds it is
// written, once however many images share it: a warm run compresses nothing.
type layer struct {
	name   string // for history and progress lines
	files  files
	data   []byte
	diffID v1.Hash
	gz     *lazyLayer
}

type lazyLayer struct {
	once  sync.Once
	layer v1.Layer
	err   error
}

// v1Layer returns the layer for go-containerregistry, which computes the
// compressed digest (and keeps the compressed bytes) when it is created.
func (l layer) v1Layer() (v1.Layer, error) {
	l.gz.once.Do(func() {
		l.gz.layer, l.gz.err = tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(l.data)), nil
		}, tarball.WithCompressedCaching)
		if l.gz.err != nil {
			l.gz.err = fmt.Errorf("layer %s: %w", l.name, l.gz.err)
		}
	})
	return l.gz.layer, l.gz.err
}

// layerBuilder writes a root-owned, reproducible tar in memory. Parent
// directories are added on first use, each once.
type layerBuilder struct {
	files files
	buf   bytes.Buffer
	tw    *tar.Writer
	dirs  map[string]bool
	err   error
}

func newLayerBuilder() *layerBuilder {
	b := &layerBuilder{dirs: map[string]bool{}, files: files{}}
	b.tw = tar.NewWriter(&b.buf)
	return b
}

// dir adds a directory with the given mode and owner.
func (b *layerBuilder) dir(p string, mode int64, uid int) {
	p = clean(p)
	b.parents(p)
	if b.dirs[p] {
		return
	}
	b.dirs[p] = true
	b.write(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid}, nil)
}

// file adds a regular root-owned file.
func (b *layerBuilder) file(p string, mode int64, data []byte) {
	p = clean(p)
	b.parents(p)
	b.write(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data))}, data)
}

// symlink adds a symbolic link p → target.
func (b *layerBuilder) symlink(p, target string) {
	p = clean(p)
	b.parents(p)
	b.write(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777}, nil)
}

// tree adds the files under root (an unpacked package) at the same paths,
// skipping those for which skip returns true. Owners become root: dpkg-deb
// -x as a normal user would otherwise leak that user's IDs into the image.
func (b *layerBuilder) tree(root string, skip func(rel string) bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		switch {
		case d.IsDir():
			b.dir(rel, mode, 0)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.symlink(rel, target)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.file(rel, mode, data)
		default:
			return fmt.Errorf("%s: unsupported file type %s in a package tree", p, info.Mode().Type())
		}
		return b.err
	})
}

// parents adds the directories above p that are not in the layer yet.
func (b *layerBuilder) parents(p string) {
	dir := path.Dir(p)
	if dir == "." || dir == "/" || b.dirs[dir] {
		return
	}
	b.dir(dir, 0o755, 0)
}

func (b *layerBuilder) write(h *tar.Header, data []byte) {
	if b.err != nil {
		return
	}
	h.ModTime, h.Format = epoch, tar.FormatPAX
	b.files[strings.TrimSuffix(h.Name, "/")] = h
	if b.err = b.tw.WriteHeader(h); b.err == nil && len(data) > 0 {
		_, b.err = b.tw.Write(data)
	}
}

// finish closes the tar and returns the layer.
func (b *layerBuilder) finish(name string) (layer, error) {
	if b.err == nil {
		b.err = b.tw.Close()
	}
	if b.err != nil {
		return layer{}, fmt.Errorf("layer %s: %w", name, b.err)
	}
	data := b.buf.Bytes()
	sum := sha256.Sum256(data)
	return layer{
		name:   name,
		files:  b.files,
		data:   data,
		diffID: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])},
		gz:     &lazyLayer{},
	}, nil
}

// clean makes p a relative archive path ("usr/bin/x").
func clean(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}
