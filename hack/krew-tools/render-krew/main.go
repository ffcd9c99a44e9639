// Command render-krew renders krew/vmctl.yaml as krew-release-bot does on a
// release, but against local archives: addURIAndSha takes each archive's
// sha256 from the file of the same name in -dist instead of downloading it.
//
//	go run ./render-krew -template ../../krew/vmctl.yaml -dist ../../dist -tag v0.1.0 -out vmctl.yaml
//
// With -uri-prefix the rendered uri is prefix + archive name, so krew can
// install the manifest from a local file server.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"text/template"
)

func main() {
	var o options
	flag.StringVar(&o.template, "template", "krew/vmctl.yaml", "krew-release-bot manifest template")
	flag.StringVar(&o.dist, "dist", "dist", "directory holding the release archives")
	flag.StringVar(&o.tag, "tag", "", "release tag, the template's .TagName (required)")
	flag.StringVar(&o.uriPrefix, "uri-prefix", "", "if set, each uri is this prefix + the archive name instead of the release URL")
	flag.StringVar(&o.out, "out", "", "where to write the manifest; its name must be <plugin>.yaml for krew's validator (required)")
	flag.Parse()
	if err := o.run(); err != nil {
		fmt.Fprintf(os.Stderr, "render-krew: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	template, dist, tag, uriPrefix, out string
}

func (o options) run() error {
	if o.tag == "" || o.out == "" {
		return errors.New("-tag and -out are required")
	}
	var failed error
	funcs := template.FuncMap{
		// The bot's addURIAndSha: execute the URL as a template with the tag,
		// then emit uri and sha256 with the 4-space indent the bot assumes.
		"addURIAndSha": func(url, tag string) string {
			s, err := o.uriAndSha(url, tag)
			if err != nil {
				failed = errors.Join(failed, err)
			}
			return s
		},
	}
	t, err := template.New(filepath.Base(o.template)).Funcs(funcs).Option("missingkey=error").ParseFiles(o.template)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct{ TagName string }{o.tag}); err != nil {
		return err
	}
	if failed != nil {
		return failed
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, buf.Bytes(), 0o644)
}

func (o options) uriAndSha(urlTemplate, tag string) (string, error) {
	t, err := template.New("url").Parse(urlTemplate)
	if err != nil {
		return "", fmt.Errorf("parsing uri template %q: %w", urlTemplate, err)
	}
	var url bytes.Buffer
	if err := t.Execute(&url, struct{ TagName string }{tag}); err != nil {
		return "", err
	}
	name := path.Base(url.String())
	sum, err := fileSHA256(filepath.Join(o.dist, name))
	if err != nil {
		return "", fmt.Errorf("archive for %s: %w; run goreleaser release --snapshot first", url.String(), err)
	}
	uri := url.String()
	if o.uriPrefix != "" {
		uri = o.uriPrefix + name
	}
	return fmt.Sprintf("uri: %s\n    sha256: %s", uri, sum), nil
}

func fileSHA256(name string) (string, error) {
	// Archives are a few MB: reading one whole is simpler than streaming.
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
