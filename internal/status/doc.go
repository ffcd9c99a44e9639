// Package status reads vmctl's agent Pods, derived VMs, their VMIs and
// prototypes with paged LISTs (or informers, for --watch), pairs them, and
// names what is wrong with each pair, for `kubectl vmctl status`.
package status
