// Ending a multi-rank job from one rank, with one line that names it.
//
// The edges (the trainer's main, the Python package) call these when this
// rank cannot go on: the other ranks may be waiting for it in a collective,
// so it must take the whole job down rather than just exit.
#pragma once

#include <string>

namespace fluid {

// Writes `line` (a newline is added) to stderr in one write(2) (retrying
// only what a short or interrupted write left), so that lines of ranks
// failing at once never interleave.
void WriteErrorLine(const std::string& line);

// Ends the job: MPI_Abort over the world when MPI is up in this process,
// else _exit(code) (the launcher then ends the other ranks). Never returns:
// should MPI_Abort not end this process within kAbortGraceSeconds (it waits
// for the launcher, which a lost host or a cut network keeps from
// answering), the process exits by itself (see ArmExitDeadline).
[[noreturn]] void AbortJob(int code);

// How long MPI_Abort may take before this rank ends itself.
constexpr double kAbortGraceSeconds = 10;

// The backstop for MPI_Abort: unless DisarmExitDeadline comes first,
// `seconds` from now a thread of its own writes `line` (one line, as
// WriteErrorLine) and calls _exit(code). While one deadline is armed, a
// second Arm changes nothing. Never throws (without a thread to spare it
// arms nothing).
void ArmExitDeadline(double seconds, int code, const std::string& line);
// Cancels the armed deadline, if any (its thread then ends by itself).
void DisarmExitDeadline();

// On a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) writes
// "<prefix>: rank R: fatal signal NAME; ending the job" before the signal
// takes its usual course (a handler installed earlier, e.g. Python's
// faulthandler, still runs after it). Idempotent.
void InstallFatalSignalLine(const std::string& prefix, int rank);

}  // namespace fluid
