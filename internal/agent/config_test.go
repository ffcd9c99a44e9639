package agent

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{
		Prototype: "testvm", PrototypeNamespace: "protos", Namespace: "default",
		Pod:          Identity{PodName: "vmctl-7d9f-abcde", PodNamespace: "default"},
		ProbeAddress: ":8080", DeleteTimeout: time.Second,
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   []string // substrings of the error; none means valid
	}{
		{name: "valid", change: func(*Config) {}},
		{name: "prototype with capitals", change: func(c *Config) { c.Prototype = "TestVM" }, want: []string{`prototype "TestVM" is not a valid name`}},
		{name: "empty prototype", change: func(c *Config) { c.Prototype = "" }, want: []string{"prototype is empty"}},
		{name: "namespace with a dot", change: func(c *Config) { c.Namespace = "a.b" }, want: []string{`namespace "a.b" is not a valid name`}},
		{name: "bad prototype namespace", change: func(c *Config) { c.PrototypeNamespace = "_x" }, want: []string{`prototype namespace "_x"`}},
		{name: "bad pod name", change: func(c *Config) { c.Pod.PodName = "Pod_1" }, want: []string{`pod name "Pod_1"`}},
		{name: "zero delete timeout", change: func(c *Config) { c.DeleteTimeout = 0 }, want: []string{"delete timeout must be positive"}},
		{name: "pinned, with its store", change: func(c *Config) { c.VMRevisionHash, c.StoreName = "5f1c0b9e2a", "web-vm-revisions" }},
		{name: "a store, not pinned", change: func(c *Config) { c.StoreName = "web-vm-revisions" }},
		{name: "pinned without a store", change: func(c *Config) { c.VMRevisionHash = "5f1c0b9e2a" },
			want: []string{`pins VM revision "5f1c0b9e2a" (VMCTL_VM_REVISION)`, "add --vm-revisions=<workload>-vm-revisions"}},
		{name: "a store of no valid name", change: func(c *Config) { c.VMRevisionHash, c.StoreName = "5f1c0b9e2a", "Web_revisions" },
			want: []string{`--vm-revisions "Web_revisions" is not a valid VMRevisionStore name`}},
		{name: "stops or evicts on evacuation", change: func(c *Config) { c.EvictOnEvacuation = true }},
		{name: "stops and evicts on evacuation", change: func(c *Config) { c.StopOnEvacuation, c.EvictOnEvacuation = true, true },
			want: []string{"--stop-on-evacuation and --evict-on-evacuation exclude each other"}},
		{name: "several problems at once", change: func(c *Config) { c.Prototype, c.ProbeAddress = "", "" },
			want: []string{"prototype is empty", "probe address is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
