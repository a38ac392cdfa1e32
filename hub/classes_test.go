package hub_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// A hub whose model names its classes refuses a Register with other
// classes, or none, with a Reject that names the difference, and takes one
// with the same list.
func TestRegisterClasses(t *testing.T) {
	for _, tc := range []struct {
		classes []string
		want    string // in the Reject's message; "" for a welcome
	}{
		{[]string{"ant", "bee", "cat"}, ""},
		{[]string{"ant", "bee", "cat", "dog"}, "extra classes dog"},
		{[]string{"ant", "cat"}, "missing classes bee"},
		{[]string{"bee", "ant", "cat"}, "another order"},
		{nil, "sent none"},
	} {
		b := cpu.NewCPU()
		net, err := models.Build(b, "lenet5", models.Config{Classes: 3})
		if err != nil {
			t.Fatal(err)
		}
		tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
		cfg := hub.DefaultConfig()
		cfg.MinWorkers, cfg.GlobalBatch = 2, 32
		c, err := newTestCore(cfg, hub.Model{Name: "lenet5", Config: models.Config{Classes: 3}, Trainer: tr,
			Meta: models.WithLabels(nil, []string{"ant", "bee", "cat"})})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Step("w1", &wire.Register{Device: "phone", Classes: tc.classes})
		var reject *wire.Reject
		for _, env := range c.Ready().Messages {
			if r, ok := env.Msg.(*wire.Reject); ok {
				reject = r
			}
		}
		switch {
		case tc.want == "" && (err != nil || reject != nil):
			t.Errorf("classes %q: %v, %v; want a welcome", tc.classes, err, reject)
		case tc.want != "" && (!errors.Is(err, hub.ErrClasses) || reject == nil || reject.Code != wire.CodeClasses ||
			!strings.Contains(reject.Message, tc.want)):
			t.Errorf("classes %q: %v, %+v; want ErrClasses and a Reject %q saying %q", tc.classes, err, reject, wire.CodeClasses, tc.want)
		}
	}
}
