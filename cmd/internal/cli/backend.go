package cli

import "github.com/cotrain/cotrain/gpu"

// Backend configuration read from the environment.
//
// Below cmd/ no package reads the environment: the binaries read the
// COTRAIN_OPENCL_* variables here and pass the result down as
// gpu.OpenOptions.Config, one entry per compiled-in driver. The variables
// and their meanings are opencl.ConfigFromEnv's (docs/opencl.md,
// "Environment"); in a build without -tags opencl there is no OpenCL driver
// and nothing is read.

// OpenOptions returns gpu.OpenOptions with base's Log and HalfStorage and
// the configuration of each compiled-in driver, read through lookup
// (os.LookupEnv). A variable holding a value it does not take is an error
// wrapping gpu.ErrConfig that names it: report it as a usage error.
func OpenOptions(base gpu.OpenOptions, lookup func(string) (string, bool)) (gpu.OpenOptions, error) {
	cfgs, err := backendConfigs(lookup)
	if err != nil {
		return gpu.OpenOptions{}, err
	}
	base.Config = cfgs
	return base, nil
}
