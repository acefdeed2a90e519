/* libFuzzer target for the decoder: any bytes, with or without an fd, must decode cleanly
 * or be rejected, never crash or leak; what decodes re-encodes to the same bytes, and its
 * log line (proto_msg_print) is terminated within any buffer size. Input: a flag byte (bit
 * 0: FUZZ_FLAG_FD; the other bits: the log buffer's size, 0 = a full line), then one packet
 * as it arrives on the channel (header + body). A launcher reply that sbx-api turns into a
 * client's JSON (sandbox, mounts, run with the packet's bytes as its output, caps, policy)
 * must give valid JSON (UTF-8, NUL escaped), whatever the launcher sent. Seeds: tests/fuzz/seeds (hand-made) and
 * the corpus gen_seeds writes from proto_msgs.h (one full message of every type). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_common.h"
#include "json.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The run's output: the packet's own bytes, NULs and invalid UTF-8 included. */
static const uint8_t *raw;
static size_t raw_len;

static void gen_sbx(yajl_gen g, const void *m)
{
	json_gen_sbx(g, m);
}
static void gen_sbx_mounts(yajl_gen g, const void *m)
{
	json_gen_sbx_mounts(g, m);
}
static void gen_run(yajl_gen g, const void *m)
{
	json_gen_run(g, m, (const char *)raw, raw_len / 2, (const char *)raw + raw_len / 2,
	             raw_len - raw_len / 2);
}
static void gen_caps(yajl_gen g, const void *m)
{
	json_gen_caps(g, m);
}
static void gen_policy(yajl_gen g, const void *m)
{
	json_gen_policy(g, m);
}

/* the reply serializers of api/json.c, by the reply they serialize */
static const struct {
	uint32_t type;
	void (*gen)(yajl_gen g, const void *msg);
} serializers[] = {
	{ MSG_SBX_REP, gen_sbx },   { MSG_SBX_REP, gen_sbx_mounts }, { MSG_RUN_REP, gen_run },
	{ MSG_CAPS_REP, gen_caps }, { MSG_POLICY_REP, gen_policy },
};

static void check_json_replies(uint32_t type, const void *msg)
{
	for (size_t i = 0; i < sizeof(serializers) / sizeof(serializers[0]); i++) {
		yajl_gen g;
		size_t len;
		char *doc;
		if (serializers[i].type != type)
			continue;
		FUZZ_CHECK(g = json_gen_new());
		serializers[i].gen(g, msg);
		doc = json_gen_dup(g, &len);
		yajl_gen_free(g);
		fuzz_check_json(doc, len);
		free(doc);
	}
}

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
		raw = data;
		raw_len = size;
		check_json_replies(h.type, out.bytes);
		proto_msg_clear(h.type, out.bytes);
	}
	return 0;
}
