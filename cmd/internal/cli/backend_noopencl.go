//go:build !opencl

package cli

// backendConfigs has nothing to read in a build without OpenCL.
func backendConfigs(func(string) (string, bool)) (map[string]any, error) { return nil, nil }
