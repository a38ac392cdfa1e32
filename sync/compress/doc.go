// Package compress holds the gradient codecs of cooperative training: how a
// worker's pushed gradient and the hub's merged update are turned into
// bytes on the wire when the session asks for compression (Session.
// Compression, chosen by the hub's --compress flag).
//
// The codecs, by name (Parse):
//
//   - "none": raw little-endian float32, 4 bytes a value (lossless).
//   - "fp16": IEEE half precision, 2 bytes a value; values beyond ±65504
//     saturate, those below 2⁻²⁴ flush to zero.
//   - "int8": blocks of BlockSize values, each a float32 scale (the block's
//     largest magnitude over 127) and one signed byte per value: about
//     1.02 bytes a value.
//   - "topk:F": the ⌈F·n⌉ values of largest magnitude (F in (0, 1],
//     "topk" alone is topk:0.01), as (index gap, fp16 value) pairs; the
//     gaps are unsigned varints, one byte for gaps under 128.
//
// Every payload starts with a format byte and the number of values it
// describes (a uvarint), so that a payload of the wrong codec or length is
// refused by name rather than misread. Decoders never panic, never allocate
// (they write into the caller's vector, whose length the caller knows from
// the model), and refuse NaN and infinities: see Decode.
//
// Lossy codecs lose what they do not send unless the sender keeps it:
// Feedback adds the previous residual to each vector before encoding and
// keeps what the encoding lost (error feedback), so over iterations every
// part of the gradient is applied.
//
// # The caller's duties
//
//  1. Build one Codec per sender with Parse (a Codec keeps scratch: it is
//     not safe for concurrent use) and, on a worker, one Feedback over the
//     whole parameter vector.
//  2. Encode with Codec.Append (the hub's merged update) or
//     Feedback.Append (a worker's gradient); the bytes travel in wire.Push
//     or wire.Merged's Enc field.
//  3. Decode into a vector of the length the model says (Decode): a
//     payload for another length is refused with ErrLength.
//  4. A sender of a lossy downlink must apply exactly what it sent: decode
//     its own payload and use that, never the values it encoded.
//  5. Reset the Feedback whenever the weights are replaced (a Welcome or
//     ResyncAnswer): the residual belongs to the old trajectory.
package compress
