// The timeline of a job (see src/framework/timeline.h): started on every
// rank with its clock aligned to rank 0's, and at the end merged by rank 0
// into one trace file, one process per rank.
//
// Clock alignment: a few rounds of an allgather of each rank's clock read
// just before it enters. Rank 0's read before a round precedes every
// rank's return from it, and every rank's read precedes rank 0's return,
// so each round bounds a rank's offset from both sides; the tightest
// bounds are kept and the offset is their middle (on one machine, where
// the clocks are one clock, it comes out within the allgather's latency
// of 0).
//
// On an abort (AbortJob, a fatal signal, SIGTERM from the launcher) each
// rank but 0 writes its events to `<file>.rank-<r>.part`, and rank 0
// writes `<file>` with its own and the parts it finds (it waits up to 0.3 s
// for them, but after a fatal signal). Parts written later are left next
// to `<file>`; tools/timeline_report.py reads them with it. Those paths are
// fixed at StartTimeline; DumpTimeline allocates nothing and takes no lock.
//
// One timeline per process, on the process's communicator. Not
// thread-safe: the thread that runs programs starts and finishes it.
#pragma once

#include <string>

#include "src/distributed/communicator.h"
#include "src/framework/timeline.h"

namespace fluid {

// Collective: estimates this rank's clock offset from rank 0's with
// `rounds` allgathers (rank 0's offset is 0).
ClockSync AlignClocks(Communicator* comm, int rounds = 16);

// Collective: aligns the clocks and makes a timeline the process's
// (CurrentTimeline) until FinishTimeline; rank 0 will write `path`. A null
// `comm` is a single process (rank 0 of 1). Rank 0 first writes `path` as
// a trace without events whose note is kTimelinePlaceholderNote, the way
// the trace itself will be written, and throws (before the collective)
// when it cannot.
void StartTimeline(Communicator* comm, const std::string& path);

// The note of the trace StartTimeline writes: what a job that never wrote
// its timeline (killed with SIGKILL, or still running) leaves.
constexpr const char* kTimelinePlaceholderNote =
    "no events yet: the job started, and has not written its timeline "
    "(still running, or ended without a chance to: SIGKILL, power loss)";
bool TimelineStarted();

// Collective: stops recording, gathers every rank's events on rank 0,
// which writes the trace file. Returns the path written on rank 0, "" on
// the others and when no timeline was started.
std::string FinishTimeline(Communicator* comm);

// The abort path (see above); async-signal-safe. Does nothing without a
// timeline, or once it has written. `wait_for_others`: rank 0 waits up to
// 0.3 s for the other ranks' parts.
void DumpTimeline(const char* reason, bool wait_for_others);

}  // namespace fluid
