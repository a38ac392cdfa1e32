package cli

// CachePrefixDefault is the default of finetune's --cache-prefix: room for
// the features of about 13 000 samples of mobilenet_v2 (1280 floats each)
// or 32 000 of resnet18 (512), little beside what a fine-tuning step holds.
const CachePrefixDefault = "64MiB"

// CachePrefixUsage is the help of finetune's --cache-prefix flag.
const CachePrefixUsage = "keep the frozen layers' output (what the trained layers read of them) for the training samples, up to this much memory " +
	"(e.g. 64MiB, 1GiB; 0: off), and skip those layers for the samples kept from the second epoch on: the data are the same every epoch " +
	"(no augmentation), so are their features, and the weights end the same as without the cache"
