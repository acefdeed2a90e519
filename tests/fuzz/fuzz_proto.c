/* libFuzzer target for the decoder: any bytes, with or without an fd, must decode cleanly
 * or be rejected, never crash or leak; what decodes re-encodes to the same bytes, and its
 * log line (proto_msg_print) is terminated within any buffer size. Input: a flag byte (bit
 * 0: FUZZ_FLAG_FD; the other bits: the log buffer's size, 0 = a full line), then one packet
 * as it arrives on the channel (header + body). Seeds: tests/fuzz/seeds (hand-made) and
 * the corpus gen_seeds writes from proto_msgs.h (one full message of every type). */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union {
		uint64_t align;
		uint8_t bytes[FUZZ_MSG_STORAGE];
	} out;
	struct proto_hdr h;
	bool with_fd = size > 0 && (data[0] & FUZZ_FLAG_FD);
	static uint8_t re[PROTO_MSG_MAX];
	char line[FUZZ_LOG_LINE];
	size_t linesz = size > 0 && (data[0] >> 1) ? (size_t)(data[0] >> 1) : sizeof(line);

	if (size < 1)
		return 0;
	data++;
	size--;
	if (proto_decode(data, size, with_fd, &h, out.bytes, sizeof(out)) == 0) {
		/* what decodes must encode back to the same bytes */
		int n = proto_encode(h.type, h.id, with_fd, out.bytes, re, sizeof(re));
		if (n != (int)size || memcmp(re, data, size) != 0)
			__builtin_trap();
		memset(line, 'x', sizeof(line));
		if (proto_msg_print(h.type, h.id, out.bytes, line, linesz) != 0 ||
		    !memchr(line, '\0', linesz))
			__builtin_trap();
		proto_msg_clear(h.type, out.bytes);
	}
	return 0;
}
