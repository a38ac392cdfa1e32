package sgemm

//go:generate go run gen_asm.go
