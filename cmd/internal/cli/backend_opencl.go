//go:build opencl

package cli

import "github.com/cotrain/cotrain/gpu/opencl"

// backendConfigs reads the OpenCL driver's configuration from the
// COTRAIN_OPENCL_* variables.
func backendConfigs(lookup func(string) (string, bool)) (map[string]any, error) {
	cfg, err := opencl.ConfigFromEnv(lookup)
	if err != nil {
		return nil, err
	}
	return map[string]any{"opencl": cfg}, nil
}
