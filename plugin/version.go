package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/version"
)

// VersionOptions are the options of `kubectl vmctl version`.
type VersionOptions struct {
	Output string

	genericiooptions.IOStreams
}

// NewVersionOptions returns VersionOptions with their defaults.
func NewVersionOptions(streams genericiooptions.IOStreams) *VersionOptions {
	return &VersionOptions{IOStreams: streams}
}

// NewCmdVersion returns `kubectl vmctl version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewVersionOptions(streams)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of kubectl-vmctl",
		Example: `  kubectl vmctl version
  kubectl vmctl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", o.Output, "Output format. One of: (json, yaml).")
	return cmd
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output must be json or yaml, not %q", o.Output)
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	info := version.Get()
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-vmctl %s (commit %s, built %s)\n", info.Version, info.Commit, info.Date)
	return err
}
