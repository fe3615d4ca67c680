package registration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The flags Config is filled from, spelled as node-driver-registrar spells
// them.
const (
	EndpointFlag = "--kubelet-registration-path"
	DirFlag      = "--plugin-registration-path"
)

// DefaultDir is where node-driver-registrar's manifests mount kubelet's
// plugins_registry directory in the container.
const DefaultDir = "/registration"

// SupportedVersions are the CSI versions the plugin offers kubelet: its
// CSI handler accepts any 1.x, and node-driver-registrar sends this.
var SupportedVersions = []string{"1.0.0"}

// maxSocketPath is the longest path a unix socket can have: sun_path holds
// it with its terminating NUL (108 bytes on Linux).
var maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// Config says what to tell kubelet and where.
type Config struct {
	// DriverName is the CSI driver's name, as GetPluginInfo returns it.
	DriverName string
	// Endpoint is the CSI socket's path as kubelet sees it on the host
	// (EndpointFlag), which kubelet dials for every node operation.
	Endpoint string
	// Dir is kubelet's registration directory as mounted in this
	// container (DirFlag).
	Dir string
}

// SocketPath is where the Registration service listens:
// <Dir>/<DriverName>-reg.sock, the name node-driver-registrar uses, so a
// deployment can switch between the two without leaving a second entry.
func (c Config) SocketPath() string {
	return filepath.Join(c.Dir, c.DriverName+"-reg.sock")
}

// Validate checks both paths before anything listens, so a wrong flag
// stops the pod at start with the flag's name rather than as a kubelet
// dial error nobody reads.
func (c Config) Validate() error {
	if c.DriverName == "" {
		return errors.New("registration needs the driver's name")
	}
	if err := checkSocketPath(c.Endpoint, "the CSI socket's path on the host"); err != nil {
		return fmt.Errorf("%s: %w", EndpointFlag, err)
	}
	if c.Dir == "" || !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("%s: %q is not an absolute path", DirFlag, c.Dir)
	}
	if err := checkSocketPath(c.SocketPath(), "the registration socket"); err != nil {
		return fmt.Errorf("%s: %w", DirFlag, err)
	}
	return nil
}

func checkSocketPath(path, what string) error {
	switch {
	case path == "":
		return fmt.Errorf("%s is required", what)
	case !filepath.IsAbs(path):
		return fmt.Errorf("%s %q is not an absolute path (give a path, not a unix:// URL)", what, path)
	case len(path) > maxSocketPath:
		return fmt.Errorf("%s %s has %d bytes, more than the %d a unix socket path can have", what, path, len(path), maxSocketPath)
	}
	return nil
}

// Server is the Registration service kubelet talks to.
type Server struct {
	registerapi.UnimplementedRegistrationServer
	cfg Config
	// rejected carries kubelet's error when it reports that registration
	// failed; Serve returns it.
	rejected chan error
	// registered is set once kubelet reports success.
	registered atomic.Bool
}

// New checks cfg and returns a server for it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, rejected: make(chan error, 1)}, nil
}

// Serve listens on the registration socket until ctx is done, then removes
// the socket, which tells kubelet the plugin is gone. It returns an error
// when kubelet reports that registration failed: like
// node-driver-registrar, the process should then exit non-zero so that
// the pod restarts and registration is tried afresh.
func (s *Server) Serve(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	path := s.cfg.SocketPath()
	if err := removeStaleSocket(path); err != nil {
		return fmt.Errorf("%s: %w", DirFlag, err)
	}
	// No MkdirAll: a missing directory means kubelet's plugins_registry is
	// not mounted there, and a socket in a directory nobody watches would
	// never be registered.
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("%s: listening for kubelet: %w", DirFlag, err)
	}
	defer os.Remove(path)
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, s)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	logger.Info("Waiting for kubelet to register the plugin", "socket", path, "driver", s.cfg.DriverName, "endpoint", s.cfg.Endpoint)

	select {
	case <-ctx.Done():
		srv.GracefulStop()
		return nil
	case err := <-s.rejected:
		// GracefulStop lets the NotifyRegistrationStatus reply reach kubelet.
		srv.GracefulStop()
		return err
	case err := <-served:
		return fmt.Errorf("serving registration socket %s: %w", path, err)
	}
}

// GetInfo tells kubelet which driver this is and where its CSI socket is.
func (s *Server) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	klog.FromContext(ctx).V(2).Info("Kubelet asked for plugin info", "driver", s.cfg.DriverName, "endpoint", s.cfg.Endpoint)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              s.cfg.DriverName,
		Endpoint:          s.cfg.Endpoint,
		SupportedVersions: SupportedVersions,
	}, nil
}

// Registered says whether kubelet has reported a successful registration.
func (s *Server) Registered() bool { return s.registered.Load() }

// NotifyRegistrationStatus hears kubelet's verdict. A failure ends Serve
// with kubelet's error.
func (s *Server) NotifyRegistrationStatus(ctx context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	logger := klog.FromContext(ctx)
	if status.PluginRegistered {
		logger.Info("Registered with kubelet", "driver", s.cfg.DriverName, "endpoint", s.cfg.Endpoint)
		s.registered.Store(true)
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	err := fmt.Errorf("kubelet did not register driver %s (endpoint %s): %s", s.cfg.DriverName, s.cfg.Endpoint, status.Error)
	logger.Error(err, "Registration failed; exiting so that the pod restarts")
	select {
	case s.rejected <- err:
	default: // an earlier failure already ends Serve
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// removeStaleSocket removes a socket a previous run left behind; anything
// else at the path is an error, not something to delete.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}
