// Package derive turns a prototype VirtualMachine into the VM that one agent Pod
// owns. It is pure: no clients, no clock, no randomness. The labels and
// annotations it marks that VM with are contract's.
package derive
