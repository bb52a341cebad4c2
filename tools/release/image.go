package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image's user: an unprivileged uid and gid of no account on the host
// (the value distroless images use for "nonroot").
const (
	imageUID  = 65532
	imageGID  = 65532
	imageUser = "ringcast"
)

// Paths in the image.
const (
	imageBinary  = "usr/local/bin/ringcast"
	imageCACerts = "etc/ssl/certs/ca-certificates.crt" // where Go's crypto/x509 looks first on Linux
	imageDataDir = "/data"
)

// ImageSource is the repository the image's source label names.
const ImageSource = "https://github.com/ringcast/ringcast"

// ImageEnv are the image's defaults, as RINGCAST_<FLAG> variables (a flag
// given to `docker run … IMAGE --flag` wins over them, as with any flag):
// listen on every interface of the container, keep commits in the
// embedded store under /data, no demo feed. With the binary's --auth none
// left as it is, serve refuses the non-loopback address until told
// --auth jwt --jwt-key-file FILE, or --allow-unauthenticated: the image
// never serves an open stream unless asked to.
var ImageEnv = []string{
	"PATH=/usr/local/bin",
	"RINGCAST_ADDR=0.0.0.0:8080",
	"RINGCAST_STORE=embedded",
	"RINGCAST_DATA_DIR=" + imageDataDir,
	"RINGCAST_DEMO=false",
}

// ImageEntrypoint is the image's entrypoint: arguments given to
// `docker run IMAGE …` are serve's flags.
var ImageEntrypoint = []string{"/" + imageBinary, "serve"}

// ImageSpec is what an image is built from.
type ImageSpec struct {
	Binary   []byte    // the static linux ringcast for Arch
	Arch     string    // amd64, arm64
	Version  string    // stamped in the binary; the label and the tag
	Revision string    // the git commit ("" when unknown)
	Created  time.Time // every timestamp in the image (the commit's time: reproducible)
	CACerts  []byte    // PEM bundle of root CAs
}

// Tag is the name `docker load` gives the image: ringcast:VERSION (a
// version a tag cannot hold as it is, such as "…+dirty", as imageTag
// writes it).
func (s ImageSpec) Tag() (name.Tag, error) {
	return name.NewTag("ringcast:"+imageTag(s.Version), name.WithDefaultRegistry(""))
}

// BuildImage assembles the image: one layer holding the binary, the CA
// bundle, /etc/passwd and /etc/group with the ringcast user, /data owned by
// it and /tmp; a config running `ringcast serve` as that user. The same
// spec gives the same image, byte for byte.
func BuildImage(s ImageSpec) (v1.Image, error) {
	if len(s.Binary) == 0 || len(s.CACerts) == 0 {
		return nil, fmt.Errorf("image: the binary and the CA certificates are needed")
	}
	layerTar, err := imageLayer(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Created.UTC()}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "go tool task image (tools/release)",
			Comment:   "ringcast " + s.Version,
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", s.Arch
	if s.Arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Created = created
	cf.Author = ""
	labels := map[string]string{
		"org.opencontainers.image.title":       "ringcast",
		"org.opencontainers.image.description": "One ordered, resumable event stream for browsers, Go services and curl",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.source":      ImageSource,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if s.Revision != "" {
		labels["org.opencontainers.image.revision"] = s.Revision
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", imageUID, imageGID),
		Entrypoint:   ImageEntrypoint,
		Env:          ImageEnv,
		WorkingDir:   imageDataDir,
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Volumes:      map[string]struct{}{imageDataDir: {}},
		Labels:       labels,
		StopSignal:   "SIGTERM",
	}
	return mutate.ConfigFile(img, cf)
}

// imageLayer is the layer's tar: directories first, every entry with the
// spec's time and numeric owners only.
func imageLayer(s ImageSpec) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", imageUser, imageUID, imageGID, imageUser, imageDataDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", imageUser, imageGID)
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte // nil: a directory
	}
	entries := []entry{
		{name: "data/", mode: 0o750, uid: imageUID, gid: imageGID},
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: imageCACerts, mode: 0o644, data: s.CACerts},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: imageBinary, mode: 0o755, data: s.Binary},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := s.Created.UTC().Truncate(time.Second)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: mtime, Format: tar.FormatPAX,
		}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteImage writes img to path as a tarball `docker load` (and `podman
// load`) read, naming it tag.
func WriteImage(path string, tag name.Tag, img v1.Image) error {
	return tarball.WriteToFile(path, tag, img)
}
