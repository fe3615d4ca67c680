package cluster

import "testing"

func TestMemoryString(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     Memory
		nodes int
		want  string
	}{
		{name: "largest three", nodes: 1000, m: Memory{Total: 1000 << 20, Processes: []ProcessMemory{
			{"kube-apiserver", 500 << 20}, {"kubelet", 300 << 20}, {"etcd", 150 << 20}, {"kwok", 50 << 20}}},
			want: "peak RSS 1000 MiB in 4 processes, 1.00 MiB per node (largest: kube-apiserver 500 MiB, kubelet 300 MiB, etcd 150 MiB)"},
		{name: "nothing measured", nodes: 0, m: Memory{},
			want: "peak RSS 0 MiB in 0 processes, 0.00 MiB per node (largest: )"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.String(tc.nodes); got != tc.want {
				t.Errorf("String(%d) =\n  %s\nwant\n  %s", tc.nodes, got, tc.want)
			}
		})
	}
}
