/* Shared by the fuzz targets and the seed generator. */
#ifndef SBX_FUZZ_H
#define SBX_FUZZ_H

/* Bytes of storage fuzz_proto decodes into: gen_seeds fails when a message's struct
 * outgrows it, so a seed is never refused for want of room. */
#define FUZZ_MSG_STORAGE 4096u
/* fuzz_proto's input: one flag byte (bit 0: an fd arrived with the packet), then the
 * whole packet, header included, as proto_recv_packet returns it. */
#define FUZZ_FLAG_FD 0x1u
#define FUZZ_LOG_LINE 1024 /* fuzz_proto's full-size log line buffer */

#endif
