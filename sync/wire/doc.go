// Package wire is cotrain's wire protocol: the closed set of messages a hub
// and its workers exchange, their msgpack encoding, and the length-prefixed
// frames that carry them over any byte stream.
//
// It is pure Go and does no I/O of its own beyond the io.Reader or io.Writer
// it is handed; the transports (package sync/transport) move the frames.
//
// # Messages
//
// Every message embeds a Header (protocol version, iteration, sender); its
// Kind is given by its Go type.
//
//	kind  type           direction        carries
//	1     Register       worker → hub     device, backend, measured speed, shard, extras, class names
//	2     Welcome        hub → worker     worker id, model, config and defining meta, ModelState, batch size, Session
//	3     Push           worker → hub     samples, compute time, loss, gradient, batch-norm statistics
//	4     Merged         hub → workers    merged gradient, next batch sizes, weights hash, lr, mean batch-norm statistics
//	5     ResyncRequest  worker → hub     reason
//	6     ResyncAnswer   hub → worker     ModelState
//	7     Goodbye        either way       reason, final weights and batch-norm state
//	8     Reject         either way       code, message for the user
//	9     Status         worker → hub     battery (only to a hub whose Session.Status is set)
//
// Float vectors (type Floats) travel as msgpack bins of raw little-endian
// float32, so a gradient of n parameters takes 4·n bytes plus a few dozen
// bytes of header: a lenet-caffe Push (431,080 parameters) is 1,724,397 bytes.
//
// # Frames
//
// A frame is a 4-byte big-endian length n, then a body of n bytes: one
// msgpack array of five elements,
//
//	[version uint16, kind uint8, iteration uint64, sender string, payload map]
//
// where the payload is the message's fields as a msgpack map keyed by the
// names in its msgpack struct tags. The version comes first so that a
// future version can change everything after it and still be told apart.
// Decoders skip payload keys they do not know, so adding a field needs no
// new version; renaming or retyping one does.
//
// # Reading is defensive
//
// ReadFrame (and Reader) refuse a length over the caller's cap before
// reading or allocating the body (ErrTooLarge); report a stream that ends
// mid-frame (ErrTruncated), another protocol version (ErrVersion), a kind
// outside the set (ErrUnknownKind), and anything else wrong with the body —
// bad msgpack, wrong field types, lengths that run past the body, containers
// nested too deep, trailing bytes — as ErrMalformed. All are wrapped with %w
// in a message that says what was expected and what came. A clean end of
// stream is io.EOF itself. No input makes the decoder panic (it is fuzzed:
// FuzzReadFrame), and what it allocates is proportional to the frame size,
// never to a length the frame merely declares.
//
// # The caller's duties
//
//  1. Keep one Writer per outgoing stream and one Reader per incoming one:
//     they reuse their encoder, decoder and buffers (WriteFrame and ReadFrame
//     build new ones each call). Neither is safe for concurrent use.
//  2. Choose the cap: a little more than the largest message you expect,
//     for example 4·(2·params + state) + 64 KiB for a hub sending Welcome.
//  3. Check every vector's length against the model before using it
//     (Floats.CheckLen): the decoder cannot know the model.
//  4. Check the header: Sender against the authenticated peer, Iteration
//     against the current one. The decoder checks only the format.
//  5. After an error from a Reader, close the stream: the reader may be
//     in the middle of a frame, and a peer that sends bad frames is not to
//     be trusted with more.
//  6. To decode into an old message (ReadMessage's reuse), make sure nothing
//     else still references it or its vectors.
package wire
