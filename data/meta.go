package data

// Meta is what a data set says about itself beyond its samples: the
// metadata a hub's Welcome is to carry so that every worker reads its data
// the way the hub does (class names, per-channel normalisation, the
// vocabulary). Describe returns it for any Dataset of this package, through
// any stack of views (Shard, Subset, FilterClasses).
type Meta struct {
	// Kind is "images", "signals", "text", or "" for a Dataset from
	// outside this package.
	Kind string
	// Classes names the classes by label (images, signals); nil for text,
	// whose labels are token ids (see Vocab), and for a view that
	// relabels classes (FilterClasses with relabel).
	Classes []string
	// Channels names a recording's channels (signals).
	Channels []string
	// Mean and Std are the per-channel normalisation Get applies: on the
	// [0,1] pixel scale for images, in the recordings' units for signals.
	Mean, Std []float32
	// Vocab maps tokens to ids (text).
	Vocab *Vocab
}

// Describe returns ds's metadata. Views pass their base's through, except
// that a view which relabels classes drops the class names (its labels no
// longer index them).
func Describe(ds Dataset) Meta {
	dropNames := false
	for {
		v, ok := ds.(*view)
		if !ok {
			break
		}
		dropNames = dropNames || v.relabel != nil
		ds = v.base
	}
	var m Meta
	switch d := ds.(type) {
	case *Images:
		m = Meta{Kind: "images", Classes: d.ClassNames()}
		m.Mean, m.Std = d.Norm()
	case *Signals:
		m = Meta{Kind: "signals", Classes: d.ClassNames(), Channels: d.Channels()}
		m.Mean, m.Std = d.Norm()
	case *Text:
		m = Meta{Kind: "text", Vocab: d.Vocab()}
	}
	if dropNames {
		m.Classes = nil
	}
	return m
}
