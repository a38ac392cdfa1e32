package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx"
)

// runImport converts an ONNX model into a cotrain weight file of model
// onnx-graph. It builds the result once before saving, so a file that is
// written always loads.
func runImport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("import", stderr, "cotrain import --onnx FILE --out WEIGHTS [--normalize imagenet] [--json]",
		"Converts an ONNX model (a PyTorch export) into a cotrain weight file.")
	in := fs.String("onnx", "", "ONNX model to read (required)")
	out := fs.String("out", "", "weight file to write (required)")
	normalize := fs.String("normalize", "", models.NormUsage+"; PyTorch models pretrained on ImageNet want imagenet; a file from cotrain export keeps the normalisation its metadata records unless this is given")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return fmt.Errorf("%w: import needs --onnx and --out", errUsage)
	}
	f, net, err := cli.ImportONNX(*in, *normalize)
	if err != nil {
		return err
	}
	norm, _, err := f.InputNorm()
	if err != nil {
		return err
	}
	if err := models.SaveFile(*out, f); err != nil {
		return err
	}
	var notes []string
	for _, kv := range f.Meta {
		if kv[0] == onnx.MetaNote {
			notes = append(notes, kv[1])
		}
	}
	if *asJSON {
		return cli.NewEvents(stdout).Emit("done", map[string]any{"weights": *out, "model": f.DisplayName(),
			"input": net.In.String(), "classes": net.Out.Size(), "layers": len(net.Layers()),
			"params": net.NumParams(), "notes": notes, "mean": norm.Mean, "std": norm.Std})
	}
	if net.Layers()[0].Kind == "embedding" {
		// Token ids are not normalised; a vocabulary may come with the file.
		vocab := "no vocabulary: give --vocab FILE to finetune or hub"
		if v, _ := models.Vocab(f.Meta, f.Config.Classes); v != nil {
			vocab = fmt.Sprintf("its vocabulary of %d words", v.Len())
		}
		fmt.Fprintf(stdout, "%s: %d layers, %d parameters, a language model of %d words of context (%s), %d outputs -> %s\n",
			*in, len(net.Layers()), net.NumParams(), net.In.Size(), vocab, net.Out.Size(), *out)
	} else {
		fmt.Fprintf(stdout, "%s: %d layers, %d parameters, input %v (normalised: %v), %d outputs -> %s\n",
			*in, len(net.Layers()), net.NumParams(), net.In, norm, net.Out.Size(), *out)
	}
	for _, n := range notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return nil
}

// runExport writes a weight file's network as an ONNX model (onnx.ExportOpset).
func runExport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr, "cotrain export --weights FILE --onnx OUT [--json]",
		"Writes a cotrain weight file as an ONNX model, with its class names and input normalisation, for PyTorch or onnxruntime.")
	weights := fs.String("weights", "", "weight file to read (required)")
	out := fs.String("onnx", "", "ONNX file to write (required)")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *weights == "" || *out == "" {
		return fmt.Errorf("%w: export needs --weights and --onnx", errUsage)
	}
	f, err := cli.LoadModel(*weights, "") // an .onnx file is imported first, as cotrain import does
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := onnx.Export(&buf, f); err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if *asJSON {
		return cli.NewEvents(stdout).Emit("done", map[string]any{"onnx": *out, "model": f.DisplayName(),
			"opset": onnx.ExportOpset, "bytes": buf.Len()})
	}
	fmt.Fprintf(stdout, "%s (%s) -> %s: ONNX opset %d, %d bytes\n", *weights, f.DisplayName(), *out, onnx.ExportOpset, buf.Len())
	return nil
}
