package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"sigs.k8s.io/yaml"
)

// clusterState is the part of a running fake-zones cluster's
// <work-dir>/cluster.json (zonepath-cluster up) that says where each
// driver's controller socket is; its node plugins' sockets are in nodes/
// beside it, one <node>.sock per node.
type clusterState struct {
	Controller   string `json:"controllerSocket"`
	ExtraDrivers []struct {
		Name       string `json:"name"`
		Controller string `json:"controllerSocket"`
	} `json:"extraDrivers"`
}

// controllerSocket is the controller socket of driver in the cluster of
// workDir.
func controllerSocket(workDir, driver string) (string, error) {
	data, err := os.ReadFile(filepath.Join(workDir, "cluster.json"))
	if err != nil {
		return "", err
	}
	var s clusterState
	if err := json.Unmarshal(data, &s); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(workDir, "cluster.json"), err)
	}
	if driver == defaultDriverName {
		return s.Controller, nil
	}
	var names []string
	for _, d := range s.ExtraDrivers {
		if d.Name == driver {
			return d.Controller, nil
		}
		names = append(names, d.Name)
	}
	return "", fmt.Errorf("the cluster runs no driver %s (extra drivers: %v)", driver, names)
}

// firstSegment is segments[0] of a zonepath-sanity config file, nil
// when it names none.
func firstSegment(sanityFile string) (map[string]string, error) {
	data, err := os.ReadFile(sanityFile)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Segments []map[string]string `json:"segments"`
	}
	// Not strict: the rest of the file is zonepath-sanity's to check.
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", sanityFile, err)
	}
	if len(cfg.Segments) == 0 {
		return nil, nil
	}
	return cfg.Segments[0], nil
}

// nodeSocketIn is the socket of the first node plugin, in name order,
// beside controller whose NodeGetInfo places its node in segment (every
// key of segment with its value); any node's when segment is nil.
func nodeSocketIn(ctx context.Context, controller string, segment map[string]string) (string, error) {
	socks, err := filepath.Glob(filepath.Join(filepath.Dir(controller), "nodes", "*.sock"))
	if err != nil || len(socks) == 0 {
		return "", fmt.Errorf("no node plugin socket beside %s", controller)
	}
	for _, sock := range socks {
		topo, err := nodeTopology(ctx, sock)
		if err != nil {
			return "", err
		}
		if inSegment(topo, segment) {
			return sock, nil
		}
	}
	return "", fmt.Errorf("no node plugin beside %s reports a node in %v (sanity.yaml segments[0])", controller, segment)
}

func inSegment(topo, segment map[string]string) bool {
	for k, v := range segment {
		if topo[k] != v {
			return false
		}
	}
	return true
}

// nodeTopology asks a node plugin for its node's segment.
func nodeTopology(ctx context.Context, sock string) (map[string]string, error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("NodeGetInfo on %s: %w", sock, err)
	}
	return info.GetAccessibleTopology().GetSegments(), nil
}
