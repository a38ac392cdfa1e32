// Package data provides the training data of cotrain: data sets that hand
// out normalised float32 samples — images, sensor recordings, text — views
// that select or split them, and a seeded mini-batch loader. It depends on the standard library only (plus
// the module that ships MNIST), builds without cgo, and runs on phones.
//
// A Dataset is indexable: Get(i, dst) writes sample i, normalised, as one
// C×H×W image into dst and returns its label. Images, the in-memory data
// set, keeps pixels as bytes and normalises on Get, so MNIST's 60,000
// training images take 47 MB rather than 188 MB.
//
// Sources:
//   - LoadMNIST("train" | "test", getenv): MNIST, found automatically (FindMNIST:
//     $COTRAIN_MNIST, then the Go module cache, then the go tool);
//   - LoadIDX(images, labels): any IDX pair, gzipped or raw;
//   - LoadImageFolder(dir, opts): one sub-folder per class of PNG/JPEG files;
//   - NewImages: bytes already in memory (synthetic data, tests);
//   - LoadImage(path, opts): one PNG/JPEG file prepared exactly as
//     LoadImageFolder would, for prediction;
//   - LoadSensorFolder(dir, opts): one sub-folder per activity of CSV
//     recordings, cut into windows (Signals: C×1×L samples, per-channel
//     normalisation); LoadUCIHAR and LoadWISDM read those public layouts;
//     GenerateAccel writes simulated accelerometer recordings;
//   - LoadText(path, opts): a .txt file or a folder of them as (context,
//     next token) samples (Text) through a Vocab (Tokenize, BuildVocab,
//     ReadVocab).
//
// Describe returns any data set's metadata (class names, normalisation,
// vocabulary), through views, for a hub to send its workers.
//
// ReadNPY and WriteNPY read and write float32 arrays in NumPy's .npy format,
// for inputs to predict on and outputs to hand back.
//
// Caller's duties, in order:
//
//  1. Load a data set once per process (LoadMNIST, LoadIDX,
//     LoadImageFolder, LoadSensorFolder, LoadText, ...) and check the
//     error; it says which file is wrong or, for MNIST, where it looked and
//     how to point it at the files. Load a test set with the training
//     set's normalisation (Norm, then SensorOptions.Mean/Std or WithNorm)
//     and a text with the training text's Vocab (TextOptions.Vocab).
//  2. Optionally narrow it with views: FilterClasses (and relabel), Subset.
//     Views hold indices only; panics in them mean invalid arguments, so
//     validate user input (classes) before calling.
//  3. On a worker, take its share with Shard(ds, i, n), i from ParseShard
//     ("i/n", i counting from 0). Shards interleave: shard i holds samples
//     i, i+n, i+2n, ..., so n workers see disjoint data covering all of it.
//  4. Make one Loader per training process with NewLoader(ds, batch, seed,
//     shuffle); use the same seed everywhere a run must be reproduced.
//  5. Allocate x (Batch()*c*h*w floats) and labels (Batch() int32) once
//     (c, h, w from Shape: (C, 1, L) for Signals, (1, 1, Context) for Text);
//     grow them when you raise the batch with SetBatch (the hub resizes a
//     worker's batch between iterations).
//  6. Call Next(x, labels) each iteration and use only x[:n*c*h*w] and
//     labels[:n]; the epoch's last batch may be short. When epochDone is
//     true an epoch has ended (count epochs for the stopping rule).
//  7. To resume or join mid-run, Seek(epoch, pos) with values saved from
//     Epoch() and Pos(); the order continues exactly as it would have.
//
// Data sets are read-only after loading and safe for concurrent Get calls; a
// Loader is not safe for concurrent use.
package data
