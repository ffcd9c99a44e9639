package scaffold

import "github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"

// AgentArgs returns the agent's arguments: the prototype, then only the flags
// whose value differs from the agent's default.
func (p Params) AgentArgs() []string {
	args := []string{p.Prototype, "--" + contract.FlagStateDir + "=" + contract.StateMountPath, contract.VMRevisionStoreArg(p.storeName())}
	if p.crossNamespace() {
		args = append(args, "--"+contract.FlagProtoNamespace+"="+p.protoNamespace())
	}
	if p.AllowSharedVolumes {
		args = append(args, "--"+contract.FlagAllowSharedVolumes)
	}
	if p.GracePeriodSeconds != DefaultGracePeriodSeconds {
		args = append(args, "--"+contract.FlagDeleteTimeout+"="+p.DeleteTimeout().String())
	}
	if s := p.subdomain(); s != "" {
		args = append(args, "--"+contract.FlagSubdomain+"="+s)
	}
	args = append(args, p.claimArgs()...)
	if p.StopsOnEvacuation() {
		args = append(args, "--"+contract.FlagStopOnEvacuation)
	}
	if p.EvictsOnEvacuation() {
		args = append(args, "--"+contract.FlagEvictOnEvacuation)
	}
	return append(args, p.reserveArgs()...)
}
