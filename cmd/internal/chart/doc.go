// Package chart draws PNG line plots and timelines for the binaries that
// draw (cotrain, sim). It is apart from package cli, which every binary
// uses, because it links gonum/plot with its fonts and PDF, SVG and EPS
// writers: several megabytes that the phone binaries (worker, hub) must not
// carry. TestPhoneBinariesDrawNothing in cmd/worker keeps it so.
package chart
