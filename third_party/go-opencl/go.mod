module github.com/jgillich/go-opencl

go 1.21
