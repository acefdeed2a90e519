/* A run's output as a stream to the API while the run goes on (RUN/EXEC with `stream`).
 * The stream never makes the run wait: chunks the window cannot take yet wait in a small
 * backlog and go out on the next ACK; a reader that falls more than RUN_STREAM_BACKLOG_MAX
 * behind gets the stream ended early, and whatever the stream did not carry reaches the
 * API in the run's final reply (the stream is always a prefix of the recorded output). */
#ifndef SBX_LAUNCHER_RUN_STREAM_H
#define SBX_LAUNCHER_RUN_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "launcher.h"
#include "proto.h"

#define RUN_STREAM_BACKLOG_MAX (1u << 20) /* bytes waiting for the window, per run */
#define RUN_STREAMS_MAX        SBX_CONCURRENT_RUNS_MAX

struct pending;
struct run_outstream;

/* A stream for the request p (id = the request's id). -EEXIST: a live stream already has
 * this id (a hostile API reusing ids); -ENOSPC: RUN_STREAMS_MAX are live. */
int run_stream_open(struct pending *p, uint32_t id, struct run_outstream **ret);
/* The runner's on_output hook (arg = the stream): what the run kept of its output. */
void run_stream_output(struct run *run, enum run_stream which, const char *data, size_t len,
                       void *arg);
/* Has the stream ended on its own (cancelled by the reader, dropped)? */
bool run_stream_over(const struct run_outstream *s);
/* The run is over: end the stream (if still open) and free it. NULL-safe. */
void run_stream_close(struct run_outstream *s);
/* STREAM_ACK / STREAM_CANCEL from the API; a stream id nobody holds is ignored. */
void run_stream_ack(const struct msg_STREAM_ACK *m);
void run_stream_cancel(uint32_t id);

#endif
