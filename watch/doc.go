// Package watch is what observers of a run see: the events a run publishes
// (Event and its payload types: Session, Progress, Tick, Peer, Eval), the
// non-blocking Bus that hands them to every sink, the Recorder that keeps
// the dashboard's Status up to date from them and streams them to live
// views, and the dashboard page itself (Page, WriteStatic). It holds no
// network code: the HTTP side (the served dashboard, /api/status,
// /api/events, /metrics) is package watch/web, which only the binaries
// import.
//
// A publisher (the hub's and the worker's drivers) only ever calls
// Publish, which never blocks and never waits for a sink: a sink whose
// queue is full loses the event, counted in Dropped, so an observer can
// never hold up the hub's barrier.
//
// Caller's duties, for a run that is watched:
//  1. Make one Bus for the run (the zero value is ready); set Bus.Now
//     before the first Publish where the run has a clock of its own (a
//     virtual one), else events are stamped with time.Now.
//  2. Attach the sinks before the run publishes: a sink sees only the
//     events published after it was attached. Each runs on a goroutine of
//     its own behind a queue of the size given; WriteLine writes an event
//     as the JSON line of --json output. NewRecorder(role, bus) attaches a
//     Recorder.
//  3. Hand the Bus to what publishes (hub.Driver.Watch, the worker's
//     observer) and run. Read the Recorder from any goroutine (Status,
//     StatusJSON, Subscribe and Unsubscribe); serve it with watch/web.
//  4. Close the Bus when the run is over: it stops taking events, lets
//     every sink handle what it has queued and waits for them, so the
//     last line of --json output is written before Close returns.
//
// Without a run to watch, a finished run's Status written by WriteStatic
// is a page that shows it from disk with no server (the simulator's
// report).
package watch
