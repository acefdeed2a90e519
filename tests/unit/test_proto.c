/* proto: round trips, the malformed-frame table, limits at and past, fd passing, channel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "proto_chan.h"

TestSuite(proto, .timeout = 20);

static int encode_get(uint8_t *buf, size_t bufsz)
{
	struct msg_SBX_GET m = { .id = "sbx_abc" };
	return proto_encode(MSG_SBX_GET, 7, false, &m, buf, bufsz);
}

Test(proto, roundtrip_all_kinds)
{
	uint8_t buf[PROTO_MSG_MAX];
	char *paths[] = { "/a", "/b c", NULL };
	uint32_t ports[] = { 80, 8000 };
	struct msg_SBX_CREATE m = { .name = "scratch", .backend = BACKEND_DOCKER,
		                    .fs_mode = "allowlist", .read_paths = { 2, paths },
		                    .network = true, .ports_listen = { 2, ports },
		                    .timeout_ms = 1234, .output_bytes = 1ull << 40 };
	struct msg_SBX_CREATE out;
	struct proto_hdr h;
	int n = proto_encode(MSG_SBX_CREATE, 42, false, &m, buf, sizeof(buf));
	cr_assert_gt(n, (int)PROTO_HDR_LEN);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, &h, &out, sizeof(out)), 0);
	cr_assert_eq(h.id, 42);
	cr_assert_eq(h.type, MSG_SBX_CREATE);
	cr_assert_str_eq(out.name, "scratch");
	cr_assert_eq(out.backend, BACKEND_DOCKER);
	cr_assert_str_eq(out.fs_mode, "allowlist");
	cr_assert_eq(out.read_paths.n, 2);
	cr_assert_str_eq(out.read_paths.v[1], "/b c");
	cr_assert_null(out.read_paths.v[2]);
	cr_assert(out.network);
	cr_assert_eq(out.ports_listen.n, 2);
	cr_assert_eq(out.ports_listen.v[1], 8000);
	cr_assert_eq(out.ports_connect.n, 0);
	cr_assert_eq(out.timeout_ms, 1234);
	cr_assert_eq(out.output_bytes, 1ull << 40);
	cr_assert_str_eq(out.image, ""); /* NULL encodes as the empty string */
	proto_msg_clear(MSG_SBX_CREATE, &out);
}

/* The malformed-frame table: each is rejected without a crash (ASan run in make test). */
enum mutation { M_SHORT, M_LONG, M_TRAILING, M_BAD_ENUM, M_BAD_BOOL, M_UNTERMINATED, M_NUL_INSIDE,
	        M_UNEXPECTED_FD, M_MISSING_FD, M_FLAG_BITS, M_UNKNOWN_TYPE, M_LEN_MISMATCH,
	        M_HUGE_STRLEN, M_HUGE_LIST, M_FLAG_WITHOUT_FD };

struct bad_frame {
	const char *what;
	enum mutation m;
	int want;
};

static const struct bad_frame bad_frames[] = {
	{ "short (below header)", M_SHORT, -EBADMSG },
	{ "long (past 64 KiB)", M_LONG, -EBADMSG },
	{ "trailing bytes", M_TRAILING, -EBADMSG },
	{ "enum out of range", M_BAD_ENUM, -EBADMSG },
	{ "bool neither 0 nor 1", M_BAD_BOOL, -EBADMSG },
	{ "unterminated string", M_UNTERMINATED, -EBADMSG },
	{ "NUL inside a string", M_NUL_INSIDE, -EBADMSG },
	{ "unexpected fd", M_UNEXPECTED_FD, -EBADMSG },
	{ "missing fd", M_MISSING_FD, -EBADMSG },
	{ "unknown flag bits", M_FLAG_BITS, -EBADMSG },
	{ "unknown type", M_UNKNOWN_TYPE, -ENOMSG },
	{ "header len differs", M_LEN_MISMATCH, -EBADMSG },
	{ "string length past the packet", M_HUGE_STRLEN, -EBADMSG },
	{ "list count past its limit", M_HUGE_LIST, -EBADMSG },
	{ "fd flag without fd", M_FLAG_WITHOUT_FD, -EBADMSG },
};

static void set_len(uint8_t *buf, uint32_t len) { memcpy(buf + 4, &len, 4); }

Test(proto, malformed_frames_rejected)
{
	static uint8_t buf[PROTO_MSG_MAX + 64];
	for (size_t i = 0; i < sizeof(bad_frames) / sizeof(bad_frames[0]); i++) {
		const struct bad_frame *b = &bad_frames[i];
		union {
			struct msg_SBX_GET g;
			struct msg_RUN r;
			struct msg_PEER_FD p;
			struct msg_SBX_CREATE c;
			struct msg_POLICY_SET s;
		} out;
		size_t len;
		bool fd = false;
		int n;

		memset(buf, 0, sizeof(buf));
		n = encode_get(buf, sizeof(buf));
		cr_assert_gt(n, 0);
		len = (size_t)n;
		switch (b->m) {
		case M_SHORT:
			len = PROTO_HDR_LEN - 1;
			break;
		case M_LONG:
			len = PROTO_MSG_MAX + 1;
			set_len(buf, (uint32_t)len);
			break;
		case M_TRAILING:
			buf[len++] = 'x';
			set_len(buf, (uint32_t)len);
			break;
		case M_BAD_ENUM: {
			struct msg_RUN r = { .sandbox_id = "s", .code = "true", .language = LANG_SH };
			len = (size_t)proto_encode(MSG_RUN, 1, false, &r, buf, sizeof(buf));
			/* language is the byte after sandbox_id: u32 len(1) + "s\0" */
			buf[PROTO_HDR_LEN + 4 + 2] = LANG_MAX_ + 1;
			break;
		}
		case M_BAD_BOOL: {
			struct msg_POLICY_SET s = { .exec_shell = true };
			len = (size_t)proto_encode(MSG_POLICY_SET, 1, false, &s, buf, sizeof(buf));
			buf[PROTO_HDR_LEN] = 2;
			break;
		}
		case M_UNTERMINATED:
			buf[len - 1] = 'x'; /* the terminator of the last string */
			break;
		case M_NUL_INSIDE:
			buf[PROTO_HDR_LEN + 4 + 2] = '\0';
			break;
		case M_UNEXPECTED_FD:
			buf[12] = PROTO_FLAG_FD;
			fd = true;
			break;
		case M_MISSING_FD: {
			struct msg_PEER_FD p = { .role = ROLE_API };
			/* encode refuses a required fd missing, so build it with one, then drop it */
			len = (size_t)proto_encode(MSG_PEER_FD, 1, true, &p, buf, sizeof(buf));
			buf[12] = 0;
			break;
		}
		case M_FLAG_BITS:
			buf[12] = 0x2;
			break;
		case M_UNKNOWN_TYPE:
			buf[0] = 0xfe;
			buf[1] = 0x7f;
			break;
		case M_LEN_MISMATCH:
			set_len(buf, (uint32_t)len + 4);
			break;
		case M_HUGE_STRLEN: {
			uint32_t big = 0xfffffff0u;
			memcpy(buf + PROTO_HDR_LEN, &big, 4);
			break;
		}
		case M_HUGE_LIST: {
			struct msg_SBX_CREATE c = { .name = "n" };
			uint32_t big = PROTO_LIST_MAX + 1;
			len = (size_t)proto_encode(MSG_SBX_CREATE, 1, false, &c, buf, sizeof(buf));
			/* read_paths count follows name (4+2), backend (1), fs_mode (4+1) */
			memcpy(buf + PROTO_HDR_LEN + 6 + 1 + 5, &big, 4);
			break;
		}
		case M_FLAG_WITHOUT_FD:
			buf[12] = PROTO_FLAG_FD;
			fd = false;
			break;
		}
		cr_expect_eq(proto_decode(buf, len, fd, NULL, &out, sizeof(out)), b->want,
		             "frame \"%s\" not rejected as expected", b->what);
	}
}

Test(proto, string_limit_at_and_past)
{
	static uint8_t buf[PROTO_MSG_MAX];
	char name[PROTO_NAME_MAX + 2];
	struct msg_SBX_CREATE m = { .name = name }, out;
	int n;

	memset(name, 'a', PROTO_NAME_MAX);
	name[PROTO_NAME_MAX] = '\0';
	n = proto_encode(MSG_SBX_CREATE, 1, false, &m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, false, NULL, &out, sizeof(out)), 0);
	proto_msg_clear(MSG_SBX_CREATE, &out);

	name[PROTO_NAME_MAX] = 'a';
	name[PROTO_NAME_MAX + 1] = '\0';
	cr_assert_eq(proto_encode(MSG_SBX_CREATE, 1, false, &m, buf, sizeof(buf)), -EINVAL);
}

Test(proto, list_limit_at_and_past)
{
	struct proto_strv sv = { 0 };
	for (unsigned i = 0; i < PROTO_LIST_MAX; i++)
		cr_assert_eq(proto_strv_push(&sv, "/x"), 0);
	cr_assert_eq(proto_strv_push(&sv, "/x"), -E2BIG);
	proto_strv_clear(&sv);
}

Test(proto, message_size_limit)
{
	static uint8_t buf[PROTO_MSG_MAX];
	static char code[PROTO_CODE_MAX + 1];
	struct msg_RUN r = { .sandbox_id = "s", .code = code, .stdin_data = code };
	memset(code, 'x', PROTO_CODE_MAX);
	/* both fields at their limit exceed one packet: encode refuses rather than truncates */
	cr_assert_eq(proto_encode(MSG_RUN, 1, false, &r, buf, sizeof(buf)), -EMSGSIZE);
	r.stdin_data = "";
	cr_assert_gt(proto_encode(MSG_RUN, 1, false, &r, buf, sizeof(buf)), 0);
}

Test(proto, every_message_has_a_name_and_parity)
{
	for (uint32_t t = 0; t < MSG_TYPE_MAX_; t++) {
		const struct proto_msgdef *d = proto_msgdef(t);
		if (!d)
			continue;
		cr_assert_str_neq(proto_type_name(t), "UNKNOWN");
	}
	cr_assert_str_eq(proto_type_name(MSG_RUN), "RUN");
	cr_assert_eq(MSG_RUN % 2, 0);
	cr_assert_eq(MSG_RUN_REP % 2, 1);
	cr_assert_null(proto_msgdef(0xdead));
}

Test(proto, fd_passing_over_seqpacket)
{
	int sp[2], pfd[2], got = -1;
	uint8_t buf[PROTO_MSG_MAX + 1];
	struct msg_PEER_FD p = { .role = ROLE_API }, out;
	struct proto_hdr h;
	int n;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	n = proto_encode(MSG_PEER_FD, 3, true, &p, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_send_packet(sp[0], buf, (size_t)n, pfd[1]), n);
	close(pfd[1]);
	n = proto_recv_packet(sp[1], buf, sizeof(buf), &got);
	cr_assert_gt(n, 0);
	cr_assert_geq(got, 0);
	cr_assert_eq(proto_decode(buf, (size_t)n, true, &h, &out, sizeof(out)), 0);
	cr_assert_eq(write(got, "z", 1), 1); /* the passed fd is the pipe's write end */
	cr_assert_eq(read(pfd[0], buf, 1), 1);
	cr_assert_eq(buf[0], 'z');
	cr_assert(fcntl(got, F_GETFD) & FD_CLOEXEC);
	close(got);
	close(pfd[0]);
	close(sp[0]);
	close(sp[1]);
}

Test(proto, oversized_packet_detected_on_receive)
{
	int sp[2], fd;
	static uint8_t big[PROTO_MSG_MAX + 100], buf[PROTO_MSG_MAX + 1];
	int sndbuf = 4 * PROTO_MSG_MAX;
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	cr_assert_eq(send(sp[0], big, sizeof(big), 0), (ssize_t)sizeof(big));
	cr_assert_eq(proto_recv_packet(sp[1], buf, sizeof(buf), &fd), -EMSGSIZE);
	close(sp[0]);
	close(sp[1]);
}

/* ---- the channel ----------------------------------------------------------------- */

struct chan_state {
	int gets, ready, rejected, framing, closed, replaced;
	char last_id[64];
};

static void on_get(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd, void *arg)
{
	struct chan_state *st = arg;
	struct msg_SBX_GET *g = msg;
	struct msg_OK ok = { .id = g->id };
	st->gets++;
	snprintf(st->last_id, sizeof(st->last_id), "%s", g->id);
	proto_chan_send(ch, MSG_OK, h->id, &ok, -1);
}

static void on_event(struct proto_chan *ch, enum proto_chan_event ev, const char *d, void *arg)
{
	struct chan_state *st = arg;
	if (ev == PCHAN_READY)
		st->ready++;
	else if (ev == PCHAN_REJECTED)
		st->rejected++;
	else if (ev == PCHAN_FRAMING)
		st->framing++;
	else if (ev == PCHAN_REPLACED)
		st->replaced++;
	else
		st->closed++;
}

static const struct proto_dispatch launcher_table[] = {
	{ MSG_SBX_GET, ROLE_API, on_get },
};

static int recv_decoded(int sock, struct proto_hdr *h, void *out, size_t outsz)
{
	static uint8_t buf[PROTO_MSG_MAX + 1];
	int fd, n;
	for (int tries = 0; tries < 200; tries++) {
		n = proto_recv_packet(sock, buf, sizeof(buf), &fd);
		if (n == -EAGAIN) {
			usleep(5000);
			continue;
		}
		if (n <= 0)
			return n ? n : -EPIPE;
		return proto_decode(buf, (size_t)n, fd >= 0, h, out, outsz);
	}
	return -ETIMEDOUT;
}

static void send_msg(int sock, uint32_t type, uint32_t id, const void *m)
{
	uint8_t buf[PROTO_MSG_MAX];
	int n = proto_encode(type, id, false, m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(proto_send_packet(sock, buf, (size_t)n, -1), n);
}

Test(proto, chan_hello_dispatch_reject_and_framing)
{
	struct event_base *base = event_base_new();
	struct chan_state st = { 0 };
	struct proto_chan *ch;
	struct msg_HELLO hello = { .version = PROTO_VERSION, .role = ROLE_API, .build_id = "t" };
	union {
		struct msg_HELLO h;
		struct msg_OK ok;
		struct msg_ERROR e;
	} out;
	struct msg_SBX_GET get = { .id = "sbx_1" };
	struct msg_POLICY_SET pol = { 0 };
	struct proto_hdr h;
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp), 0);
	ch = proto_chan_new(base, sp[0], ROLE_LAUNCHER, ROLE_API, launcher_table, 1, on_event, &st);
	cr_assert_not_null(ch);
	/* the channel speaks first */
	cr_assert_eq(recv_decoded(sp[1], &h, &out, sizeof(out)), 0);
	cr_assert_eq(h.type, MSG_HELLO);
	cr_assert_eq(out.h.role, ROLE_LAUNCHER);
	proto_msg_clear(MSG_HELLO, &out);

	send_msg(sp[1], MSG_HELLO, 0, &hello);
	send_msg(sp[1], MSG_SBX_GET, 9, &get);
	send_msg(sp[1], MSG_POLICY_SET, 10, &pol); /* valid, but not in this table */
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(st.ready, 1);
	cr_assert_eq(st.gets, 1);
	cr_assert_str_eq(st.last_id, "sbx_1");
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(recv_decoded(sp[1], &h, &out, sizeof(out)), 0);
	cr_assert_eq(h.type, MSG_OK);
	cr_assert_eq(h.id, 9);
	proto_msg_clear(MSG_OK, &out);
	cr_assert_eq(recv_decoded(sp[1], &h, &out, sizeof(out)), 0);
	cr_assert_eq(h.type, MSG_ERROR);
	cr_assert_eq(h.id, 10);
	proto_msg_clear(MSG_ERROR, &out);

	/* a framing violation kills the channel */
	cr_assert_eq(send(sp[1], "abc", 3, 0), 3);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(st.framing, 1);
	cr_assert_eq(proto_chan_send(ch, MSG_OK, 1, &out.ok, -1), -EPIPE);
	proto_chan_free(ch);
	close(sp[1]);
	event_base_free(base);
}

/* A handler whose reply cannot be encoded (a field past its limit) */
static void on_get_unencodable(struct proto_chan *ch, const struct proto_hdr *h, void *msg, int fd,
                               void *arg)
{
	static char long_id[PROTO_ID_MAX + 2];
	struct msg_OK ok = { .id = long_id };
	struct chan_state *st = arg;
	memset(long_id, 'a', sizeof(long_id) - 1);
	st->gets++;
	cr_assert_lt(proto_chan_send(ch, MSG_OK, h->id, &ok, -1), 0);
}

/* Every request gets exactly one answer: an unencodable reply becomes an ERROR with the
 * request's id (issue 7, defect 2), and the owner is told. */
Test(proto, chan_unencodable_reply_becomes_error)
{
	static const struct proto_dispatch table[] = { { MSG_SBX_GET, ROLE_API, on_get_unencodable } };
	struct event_base *base = event_base_new();
	struct chan_state st = { 0 };
	struct msg_HELLO hello = { .version = PROTO_VERSION, .role = ROLE_API, .build_id = "t" };
	struct msg_SBX_GET get = { .id = "sbx_1" };
	union {
		struct msg_HELLO h;
		struct msg_ERROR e;
	} out;
	struct proto_hdr h;
	struct proto_chan *ch;
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp), 0);
	ch = proto_chan_new(base, sp[0], ROLE_LAUNCHER, ROLE_API, table, 1, on_event, &st);
	cr_assert_eq(recv_decoded(sp[1], &h, &out, sizeof(out)), 0);
	proto_msg_clear(MSG_HELLO, &out);
	send_msg(sp[1], MSG_HELLO, 0, &hello);
	send_msg(sp[1], MSG_SBX_GET, 42, &get);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(st.gets, 1);
	cr_assert_eq(st.replaced, 1);
	cr_assert_eq(recv_decoded(sp[1], &h, &out, sizeof(out)), 0);
	cr_assert_eq(h.type, MSG_ERROR);
	cr_assert_eq(h.id, 42);
	cr_assert_eq(out.e.code, PERR_INTERNAL);
	cr_assert(strstr(out.e.message, "could not be encoded"), "%s", out.e.message);
	proto_msg_clear(MSG_ERROR, &out);
	/* a request that cannot be encoded is only refused to its caller: nothing is sent */
	{
		static char long_id[PROTO_ID_MAX + 2];
		uint8_t buf[64];
		int fd = -1;
		memset(long_id, 'b', sizeof(long_id) - 1);
		cr_assert_lt(proto_chan_send(ch, MSG_SBX_GET, 43, &(struct msg_SBX_GET){ .id = long_id }, -1), 0);
		cr_assert_eq(st.replaced, 1);
		cr_assert_eq(proto_recv_packet(sp[1], buf, sizeof(buf), &fd), -EAGAIN);
	}
	proto_chan_free(ch);
	close(sp[1]);
	event_base_free(base);
}

Test(proto, chan_hello_version_mismatch_is_fatal)
{
	struct event_base *base = event_base_new();
	struct chan_state st = { 0 };
	struct msg_HELLO hello = { .version = PROTO_VERSION + 1, .role = ROLE_API };
	struct proto_chan *ch;
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp), 0);
	ch = proto_chan_new(base, sp[0], ROLE_LAUNCHER, ROLE_API, launcher_table, 1, on_event, &st);
	send_msg(sp[1], MSG_HELLO, 0, &hello);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(st.ready, 0);
	cr_assert_eq(st.framing, 1);
	proto_chan_free(ch);
	close(sp[1]);
	event_base_free(base);
}

Test(proto, chan_wrong_sender_role_rejected)
{
	struct event_base *base = event_base_new();
	struct chan_state st = { 0 };
	/* the peer claims to be sbxd, which may not send SBX_GET */
	struct msg_HELLO hello = { .version = PROTO_VERSION, .role = ROLE_SBXD };
	struct msg_SBX_GET get = { .id = "sbx_1" };
	struct proto_chan *ch;
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp), 0);
	ch = proto_chan_new(base, sp[0], ROLE_LAUNCHER, ROLE_SBXD, launcher_table, 1, on_event, &st);
	send_msg(sp[1], MSG_HELLO, 0, &hello);
	send_msg(sp[1], MSG_SBX_GET, 5, &get);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(st.ready, 1);
	cr_assert_eq(st.gets, 0);
	cr_assert_eq(st.rejected, 1);
	proto_chan_free(ch);
	close(sp[1]);
	event_base_free(base);
}
