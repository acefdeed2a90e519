/* A compromised sbx-api speaks the wire protocol straight to sbx-launcher (issue 7). The
 * test is both of the launcher's peers: it plays sbxd on fd 3 and a hostile API on fd 4.
 * Every attack must be refused (an ERROR for a request, a dead API channel for broken
 * framing) and the launcher must stay up and keep serving: after each channel-killing
 * attack the fake sbxd hands it a fresh API channel with PEER_FD, as the real one does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "proto.h"
#include "proto_chan.h"

#define WAIT_MS 10000 /* for one answer; a run of `true` included */

static struct {
	pid_t pid;
	int sbxd, api; /* our ends */
	char root[256], data[300], log[300];
	uint32_t next_id;
} L = { .pid = -1, .sbxd = -1, .api = -1, .next_id = 1 };

static uint8_t pkt[PROTO_MSG_MAX + 1];

/* The next message on sock within WAIT_MS: 0 and decoded into out, -ETIMEDOUT, -EPIPE. */
static int recv_msg(int sock, struct proto_hdr *h, void *out, size_t outsz, int *ret_fd)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int fd = -1, n, r;
	if (poll(&p, 1, WAIT_MS) <= 0)
		return -ETIMEDOUT;
	n = proto_recv_packet(sock, pkt, sizeof(pkt), &fd);
	if (n <= 0)
		return n ? n : -EPIPE;
	r = proto_decode(pkt, (size_t)n, fd >= 0, h, out, outsz);
	if (ret_fd)
		*ret_fd = fd;
	else if (fd >= 0)
		close(fd);
	return r;
}

static void send_msg(int sock, uint32_t type, uint32_t id, const void *m, int fd)
{
	uint8_t buf[PROTO_MSG_MAX];
	int n = proto_encode(type, id, fd >= 0, m, buf, sizeof(buf));
	cr_assert_gt(n, 0, "encode %s: %s", proto_type_name(type), strerror(-n));
	cr_assert_eq(proto_send_packet(sock, buf, (size_t)n, fd), n);
}

union any {
	struct msg_HELLO hello;
	struct msg_ERROR err;
	struct msg_SBX_REP sbx;
	struct msg_RUN_REP run;
	struct msg_LIST_END end;
	struct msg_HEALTH_REP health;
	struct msg_OK ok;
	uint8_t space[4096];
};

/* The answer to request id on the API channel (events and other ids are skipped). */
static int answer(uint32_t id, struct proto_hdr *h, union any *out)
{
	for (int i = 0; i < 64; i++) {
		int r = recv_msg(L.api, h, out, sizeof(*out), NULL);
		if (r < 0)
			return r;
		if (h->id == id)
			return 0;
		proto_msg_clear(h->type, out);
	}
	return -ELOOP;
}

/* Send a request and expect an ERROR with one of the given codes (0: any). */
static void expect_error(uint32_t type, const void *m, int fd, enum proto_err code,
                         const char *what)
{
	struct proto_hdr h;
	union any out;
	uint32_t id = L.next_id++;
	send_msg(L.api, type, id, m, fd);
	int r = answer(id, &h, &out);
	cr_assert_eq(r, 0, "%s: no answer (%s)", what, strerror(-r));
	cr_assert_eq(h.type, MSG_ERROR, "%s: answered %s, not ERROR", what, proto_type_name(h.type));
	if (code)
		cr_expect_eq(out.err.code, code, "%s: code %u (%s), want %u", what, out.err.code,
		             out.err.message, code);
	proto_msg_clear(h.type, &out);
}

/* A request that must succeed with reply type `want`; out is the caller's to clear. */
static void expect_reply(uint32_t type, const void *m, uint32_t want, union any *out,
                         const char *what)
{
	struct proto_hdr h;
	uint32_t id = L.next_id++;
	send_msg(L.api, type, id, m, -1);
	int r = answer(id, &h, out);
	cr_assert_eq(r, 0, "%s: no answer (%s)", what, strerror(-r));
	cr_assert_eq(h.type, want, "%s: answered %s (%s)", what, proto_type_name(h.type),
	             h.type == MSG_ERROR ? out->err.message : "");
}

/* The launcher is alive and answers a health request on the API channel. */
static void assert_serving(const char *after)
{
	union any out;
	cr_assert(kill(L.pid, 0) == 0 && waitpid(L.pid, NULL, WNOHANG) == 0,
	          "sbx-launcher died after %s", after);
	expect_reply(MSG_HEALTH_REQ, &(struct msg_HEALTH_REQ){ 0 }, MSG_HEALTH_REP, &out, after);
	proto_msg_clear(MSG_HEALTH_REP, &out);
}

static void hello(int sock, unsigned role)
{
	struct proto_hdr h;
	union any out;
	cr_assert_eq(recv_msg(sock, &h, &out, sizeof(out), NULL), 0, "no HELLO from the launcher");
	cr_assert_eq(h.type, MSG_HELLO);
	proto_msg_clear(MSG_HELLO, &out);
	send_msg(sock, MSG_HELLO, 0,
	         &(struct msg_HELLO){ .version = PROTO_VERSION, .role = role, .build_id = "hostile" },
	         -1);
}

/* The API channel broke (as it should after a framing attack): like sbxd after it
 * restarted the API, give the launcher a new one. */
static void new_api_channel(void)
{
	int sp[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	close(L.api);
	L.api = sp[0];
	send_msg(L.sbxd, MSG_PEER_FD, 0, &(struct msg_PEER_FD){ .role = ROLE_API }, sp[1]);
	hello(L.api, ROLE_API);
}

static void start(void)
{
	int s[2], a[2];
	const char *bin = getenv("SBX_BIN_DIR");
	char path[512];

	sbx_require_bwrap();
	cr_assert(bin, "SBX_BIN_DIR is not set");
	snprintf(path, sizeof(path), "%s/sbx-launcher", bin);
	snprintf(L.root, sizeof(L.root), "/tmp/sbx-wire-XXXXXX");
	cr_assert_not_null(mkdtemp(L.root));
	chmod(L.root, 0711);
	snprintf(L.data, sizeof(L.data), "%s/data", L.root);
	snprintf(L.log, sizeof(L.log), "%s/launcher.log", L.root);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a), 0);
	L.pid = fork();
	cr_assert(L.pid >= 0);
	if (L.pid == 0) {
		int logfd = open(L.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (logfd < 0 || dup2(logfd, 2) < 0 || dup2(s[1], 3) < 0 || /* the launcher's fixed fds: sbxd */
		    dup2(a[1], 4) < 0)  /* and the API */
			_exit(127);
		execl(path, path, "--data-dir", L.data, "--log-level", "debug", (char *)NULL);
		_exit(127);
	}
	close(s[1]);
	close(a[1]);
	L.sbxd = s[0];
	L.api = a[0];
	hello(L.sbxd, ROLE_SBXD);
	hello(L.api, ROLE_API);
	assert_serving("start");
}

static void stop(void)
{
	if (L.pid > 0) {
		close(L.api);
		close(L.sbxd); /* the launcher exits when sbxd goes away */
		for (int i = 0; i < 100 && waitpid(L.pid, NULL, WNOHANG) == 0; i++)
			usleep(20000);
		if (waitpid(L.pid, NULL, WNOHANG) == 0) {
			kill(L.pid, SIGKILL);
			waitpid(L.pid, NULL, 0);
		}
		L.pid = -1;
	}
	if (L.root[0]) {
		char cmd[700];
		/* ctest shows this only when the test failed */
		snprintf(cmd, sizeof(cmd), "echo '--- launcher log:' >&2; tail -n 40 '%s' >&2; rm -rf '%s'",
		         L.log, L.root);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", L.root);
		L.root[0] = '\0';
	}
}

TestSuite(wire_hostile, .init = start, .fini = stop, .timeout = 120);

static void create(const char *name, char *ret_id, size_t idsz)
{
	union any out;
	expect_reply(MSG_SBX_CREATE, &(struct msg_SBX_CREATE){ .name = (char *)name }, MSG_SBX_REP,
	             &out, "create");
	snprintf(ret_id, idsz, "%s", out.sbx.id);
	proto_msg_clear(MSG_SBX_REP, &out);
}

Test(wire_hostile, ids_out_of_range_and_of_another_sandbox)
{
	static const char *bad_ids[] = { "", "../../etc", "sbx_/x", "SBX_UPPER", "sbx_a b", "." };
	char a[64], b[64], run_b[64];
	union any out;

	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		expect_error(MSG_SBX_GET, &(struct msg_SBX_GET){ .id = (char *)bad_ids[i] }, -1, 0, bad_ids[i]);
		expect_error(MSG_SBX_DELETE, &(struct msg_SBX_DELETE){ .id = (char *)bad_ids[i] }, -1, 0,
		             bad_ids[i]);
		expect_error(MSG_RUN_GET,
		             &(struct msg_RUN_GET){ .sandbox_id = (char *)bad_ids[i], .run_id = (char *)"run_x" },
		             -1, 0, bad_ids[i]);
	}
	expect_error(MSG_SBX_GET, &(struct msg_SBX_GET){ .id = (char *)"sbx_doesnotexist" }, -1,
	             PERR_NOT_FOUND, "unknown sandbox");

	create("a", a, sizeof(a));
	create("b", b, sizeof(b));
	/* a run in b, then ask for it through a */
	expect_reply(MSG_RUN,
	             &(struct msg_RUN){ .sandbox_id = b, .language = LANG_SH, .code = (char *)"true",
	                                .stdin_data = (char *)"", .timeout_ms = 20000 },
	             MSG_RUN_REP, &out, "run in b");
	snprintf(run_b, sizeof(run_b), "%s", out.run.id);
	proto_msg_clear(MSG_RUN_REP, &out);
	expect_error(MSG_RUN_GET, &(struct msg_RUN_GET){ .sandbox_id = a, .run_id = run_b }, -1,
	             PERR_NOT_FOUND, "b's run through a");
	expect_reply(MSG_RUNS_LIST, &(struct msg_RUNS_LIST){ .sandbox_id = a, .limit = 100 },
	             MSG_LIST_END, &out, "a's runs");
	cr_expect_eq(out.end.count, 0, "a lists %u runs of another sandbox", out.end.count);
	proto_msg_clear(MSG_LIST_END, &out);
	/* a limit far out of range is clamped or refused, never trusted */
	expect_error(MSG_RUNS_LIST, &(struct msg_RUNS_LIST){ .sandbox_id = b, .limit = 0xffffffffu },
	             -1, PERR_INVALID_ARGUMENT, "huge limit");
	assert_serving("foreign ids");
}

Test(wire_hostile, forbidden_mount_sources_and_targets)
{
	char a[64], sock_path[300], cmd[400];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int us;
	const char *sources[] = { "/proc", "/proc/1", "/sys/kernel", "/dev", "/dev/null", "/run",
		                  "/boot", "/var/lib", "/etc/../proc/self", L.data, "/root/.ssh",
		                  "relative/path", "", sock_path };
	const char *targets[] = { "/proc", "/", "relative", "/tmp/../../etc", "" };

	create("m", a, sizeof(a));
	/* a listening unix socket: mounted into a jail it would be a door out */
	snprintf(sock_path, sizeof(sock_path), "%s/ctl.sock", L.root);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(us >= 0 && bind(us, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(us, 1) == 0);
	snprintf(cmd, sizeof(cmd), "mkdir -p /root/.ssh");
	cr_assert_eq(system(cmd), 0);

	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		expect_error(MSG_MOUNT_ADD,
		             &(struct msg_MOUNT_ADD){ .sandbox_id = a, .source = (char *)sources[i],
		                                      .target = (char *)"/mnt/x", .read_only = true },
		             -1, 0, sources[i]);
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		expect_error(MSG_MOUNT_ADD,
		             &(struct msg_MOUNT_ADD){ .sandbox_id = a, .source = L.root,
		                                      .target = (char *)targets[i], .read_only = true },
		             -1, 0, targets[i]);
	/* the same sources through create and update (readPaths too) */
	{
		struct proto_mount m = { .source = (char *)"/proc", .target = (char *)"/mnt/p", .read_only = true };
		char *rp[] = { (char *)"/sys", NULL };
		expect_error(MSG_SBX_CREATE,
		             &(struct msg_SBX_CREATE){ .name = (char *)"c", .mounts = { 1, &m } }, -1, 0,
		             "create with /proc");
		expect_error(MSG_SBX_CREATE,
		             &(struct msg_SBX_CREATE){ .name = (char *)"c", .read_paths = { 1, rp } }, -1,
		             0, "create with readPaths /sys");
		expect_error(MSG_SBX_UPDATE,
		             &(struct msg_SBX_UPDATE){ .id = a, .set_mask = SBXF_READ_PATHS,
		                                       .read_paths = { 1, rp } },
		             -1, 0, "update readPaths /sys");
	}
	/* a mount of another sandbox's target, deleted through this one */
	expect_error(MSG_MOUNT_DEL, &(struct msg_MOUNT_DEL){ .sandbox_id = a, .target = (char *)"/mnt/none" },
	             -1, PERR_NOT_FOUND, "delete a mount that is not there");
	close(us);
	assert_serving("forbidden mounts");
}

/* Input descriptors that are not what the protocol promises: the launcher must check the
 * memfd's seals and size itself and never block reading a pipe. */
Test(wire_hostile, run_input_fds_that_lie)
{
	char a[64];
	int pfd[2];
	create("in", a, sizeof(a));
	struct msg_RUN m = { .sandbox_id = a, .language = LANG_SH, .code = (char *)"",
		             .stdin_data = (char *)"", .code_len = 4, .timeout_ms = 5000 };

	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0); /* never written, never closed by us: a reader blocks */
	expect_error(MSG_RUN, &m, pfd[0], 0, "a pipe as input");
	{
		int fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		cr_assert(fd >= 0 && write(fd, "true", 4) == 4);
		expect_error(MSG_RUN, &m, fd, 0, "an unsealed memfd");
	}
	{
		int fd = memfd_create("short", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		cr_assert(fd >= 0 && write(fd, "tr", 2) == 2);
		cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL), 0);
		expect_error(MSG_RUN, &m, fd, 0, "a memfd shorter than announced");
	}
	{
		char f[320];
		snprintf(f, sizeof(f), "%s/file", L.root);
		int fd = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		cr_assert(fd >= 0 && write(fd, "true", 4) == 4);
		expect_error(MSG_RUN, &m, fd, 0, "a regular file as input");
	}
	m.code_len = (uint64_t)PROTO_RUN_CODE_MAX + 1;
	{
		int fd = memfd_create("big", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		cr_assert(fd >= 0);
		expect_error(MSG_RUN, &m, fd, PERR_PAYLOAD_TOO_LARGE, "code_len past the limit");
	}
	close(pfd[0]);
	close(pfd[1]);
	assert_serving("lying input fds");
}

/* Messages in the wrong direction, at the wrong time or for nothing. */
Test(wire_hostile, messages_out_of_order)
{
	union any out;
	/* a reply sent by the API is refused (logged, not answered: replies get no reply);
	 * sbxd's PEER_FD from the API is a request it may not make: an ERROR */
	send_msg(L.api, MSG_SBX_REP, 5, &(struct msg_SBX_REP){ .id = (char *)"sbx_x" }, -1);
	send_msg(L.api, MSG_OK, 0, &(struct msg_OK){ .id = (char *)"sbx_x" }, -1);
	{ /* the API offering the launcher a channel of its choosing */
		int sp[2];
		cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
		expect_error(MSG_PEER_FD, &(struct msg_PEER_FD){ .role = ROLE_API }, sp[1],
		             PERR_INVALID_ARGUMENT, "PEER_FD from the API");
		close(sp[1]);
		struct pollfd p = { .fd = sp[0], .events = POLLIN };
		cr_assert_eq(poll(&p, 1, 300), 1, "the launcher kept the API's socket");
		cr_assert_eq(recv(sp[0], &(char){ 0 }, 1, 0), 0, "the launcher spoke on the API's socket");
		close(sp[0]);
	}
	/* a second HELLO, stream messages for streams that do not exist, bogus acks */
	send_msg(L.api, MSG_HELLO, 0,
	         &(struct msg_HELLO){ .version = PROTO_VERSION, .role = ROLE_API, .build_id = "x" }, -1);
	send_msg(L.api, MSG_STREAM_ACK, 0, &(struct msg_STREAM_ACK){ .stream = 77, .consumed = 1000 }, -1);
	send_msg(L.api, MSG_STREAM_CANCEL, 0, &(struct msg_STREAM_CANCEL){ .stream = 0 }, -1);
	send_msg(L.api, MSG_STREAM_DATA, 0,
	         &(struct msg_STREAM_DATA){ .stream = 1, .chan = STREAM_STDOUT, .data = { .p = (uint8_t *)"x", .len = 1 } },
	         -1);
	/* a request with id 0 (reserved for events): whatever comes back, nothing breaks */
	send_msg(L.api, MSG_SBX_LIST, 0, &(struct msg_SBX_LIST){ 0 }, -1);
	/* two runs under the same request id, streamed: the second must not take over the
	 * first's stream or crash the launcher */
	{
		char a[64];
		create("dup", a, sizeof(a));
		uint32_t id = L.next_id++;
		struct msg_RUN m = { .sandbox_id = a, .language = LANG_SH, .code = (char *)"echo hi",
			             .stdin_data = (char *)"", .timeout_ms = 20000, .stream = id };
		send_msg(L.api, MSG_RUN, id, &m, -1);
		send_msg(L.api, MSG_RUN, id, &m, -1);
		struct proto_hdr h;
		int finals = 0;
		for (int i = 0; i < 64 && finals < 2; i++) {
			int r = recv_msg(L.api, &h, &out, sizeof(out), NULL);
			cr_assert_eq(r, 0, "waiting for both answers: %s", strerror(-r));
			if (h.id == id && (h.type == MSG_RUN_REP || h.type == MSG_ERROR))
				finals++;
			proto_msg_clear(h.type, &out);
		}
		cr_assert_eq(finals, 2, "each of the two requests gets exactly one answer");
	}
	assert_serving("messages out of order");
}

/* Mutations of an encoded SBX_GET {id: "sbx_abcdef"}: header, then u32 length, bytes, NUL */
static void m_trailing(uint8_t *b, int *len)
{
	b[(*len)++] = 0;
	((struct proto_hdr *)b)->len = (uint32_t)*len;
}
static void m_no_nul(uint8_t *b, int *len) { b[*len - 1] = 'x'; }
static void m_inner_nul(uint8_t *b, int *len) { b[PROTO_HDR_LEN + 4 + 2] = '\0'; }
static void m_len_past_packet(uint8_t *b, int *len)
{
	uint32_t n = 0x7fffffff;
	memcpy(b + PROTO_HDR_LEN, &n, 4);
}
static void m_len_past_limit(uint8_t *b, int *len)
{
	uint32_t n = PROTO_ID_MAX + 1;
	memcpy(b + PROTO_HDR_LEN, &n, 4);
}
static void m_unknown_flag(uint8_t *b, int *len) { ((struct proto_hdr *)b)->flags = 0x80; }
static void m_fd_flag(uint8_t *b, int *len) { ((struct proto_hdr *)b)->flags = PROTO_FLAG_FD; }
/* even: a request type that does not exist */
static void m_unknown_type(uint8_t *b, int *len) { ((struct proto_hdr *)b)->type = 10000; }

/* Broken framing kills the API channel (the launcher cannot trust what follows), never
 * the launcher: after each, a new channel serves. */
Test(wire_hostile, malformed_and_oversized_frames)
{
	uint8_t buf[PROTO_MSG_MAX + 64];
	int n;
	struct msg_SBX_GET g = { .id = (char *)"sbx_abcdef" };

	/* packets the decoder must refuse without killing anything: an ERROR comes back (or,
	 * where the header itself is broken, the channel is closed) */
	static const struct {
		const char *what;
		void (*mutate)(uint8_t *b, int *len);
	} soft[] = {
		{ "trailing byte", m_trailing },
		{ "string without its NUL", m_no_nul },
		{ "NUL inside a string", m_inner_nul },
		{ "string length past the packet", m_len_past_packet },
		{ "string length past its limit", m_len_past_limit },
		{ "unknown flag", m_unknown_flag },
		{ "fd flag without an fd", m_fd_flag },
		{ "unknown type", m_unknown_type },
	};
	for (size_t i = 0; i < sizeof(soft) / sizeof(soft[0]); i++) {
		uint32_t id = L.next_id++;
		n = proto_encode(MSG_SBX_GET, id, false, &g, buf, sizeof(buf));
		cr_assert_gt(n, 0);
		soft[i].mutate(buf, &n);
		if (send(L.api, buf, (size_t)n, 0) != n)
			cr_assert_fail("send %s", soft[i].what);
		/* either an ERROR for this id, or the channel was closed as broken framing; in
		 * both cases the launcher lives and (after a new channel) serves */
		struct proto_hdr h;
		union any out;
		int r = answer(id, &h, &out);
		if (r == 0) {
			cr_expect_eq(h.type, MSG_ERROR, "%s: answered %s", soft[i].what, proto_type_name(h.type));
			proto_msg_clear(h.type, &out);
			assert_serving(soft[i].what);
		} else {
			cr_expect(r == -EPIPE || r == -ECONNRESET, "%s: %s", soft[i].what, strerror(-r));
			new_api_channel();
			assert_serving(soft[i].what);
		}
	}
	/* an fd attached to a message that takes none */
	{
		int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		uint32_t id = L.next_id++;
		struct proto_hdr h;
		union any out;
		/* our encoder refuses this, so the flag is set by hand */
		n = proto_encode(MSG_SBX_GET, id, false, &g, buf, sizeof(buf));
		cr_assert_gt(n, 0);
		((struct proto_hdr *)buf)->flags = PROTO_FLAG_FD;
		cr_assert_eq(proto_send_packet(L.api, buf, (size_t)n, fd), n);
		close(fd);
		int r = answer(id, &h, &out);
		cr_assert_eq(r, 0, "an fd on SBX_GET: %s", strerror(-r));
		cr_expect_eq(h.type, MSG_ERROR);
		proto_msg_clear(h.type, &out);
		assert_serving("an fd on SBX_GET");
	}
	/* framing: short, oversized; each kills the channel, not the launcher */
	cr_assert_eq(send(L.api, "abc", 3, 0), 3);
	new_api_channel();
	assert_serving("a short packet");
	{
		int sndbuf = 4 * PROTO_MSG_MAX;
		static uint8_t big[PROTO_MSG_MAX + 100];
		setsockopt(L.api, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		memset(big, 0x41, sizeof(big));
		cr_assert_eq(send(L.api, big, sizeof(big), 0), (ssize_t)sizeof(big));
		new_api_channel();
		assert_serving("an oversized packet");
	}
	/* a flood of requests it must refuse one by one, then still serve */
	int flood = 0;
	for (int i = 0; i < 2000; i++, flood++) {
		n = proto_encode(MSG_SBX_GET, L.next_id++, false, &(struct msg_SBX_GET){ .id = (char *)"../x" },
		                 buf, sizeof(buf));
		if (send(L.api, buf, (size_t)n, MSG_DONTWAIT) != n)
			break; /* the socket buffer is full: enough */
	}
	{ /* drain what came back */
		struct proto_hdr h;
		union any out;
		int got = 0;
		while (recv_msg(L.api, &h, &out, sizeof(out), NULL) == 0 && h.type == MSG_ERROR) {
			proto_msg_clear(h.type, &out);
			got++;
			struct pollfd p = { .fd = L.api, .events = POLLIN };
			if (poll(&p, 1, 500) <= 0)
				break;
		}
		cr_expect_eq(got, flood, "%d refused requests, %d answers", flood, got);
	}
	assert_serving("a flood of refused requests");
}

/* A long list while the API does not read: every row arrives exactly once, then LIST_END
 * with their count (issue 11: the first pass sends from the one query it makes, and what
 * the write queue does not take goes out later from the event loop). Each sandbox holds a
 * fallocated workdir image, so the list stays at a few hundred of the smallest. */
Test(wire_hostile, a_long_list_arrives_whole_while_the_api_is_not_reading, .timeout = 300)
{
	enum { N = 300 };
	static char seen[N + 16][PROTO_ID_MAX + 1];
	struct proto_hdr h;
	union any out;
	uint32_t id;
	size_t got = 0;

	for (int i = 0; i < N; i++) {
		char name[32];
		snprintf(name, sizeof(name), "l%d", i);
		send_msg(L.api, MSG_SBX_CREATE, L.next_id++,
		         &(struct msg_SBX_CREATE){ .name = name, .disk_mb = 8 /* launcher.h SBX_DISK_MB_MIN */ }, -1);
		if (i % 64 == 63 || i == N - 1) { /* read the answers in batches */
			int want = i % 64 + 1;
			for (int k = 0; k < want; k++) {
				cr_assert_eq(recv_msg(L.api, &h, &out, sizeof(out), NULL), 0);
				cr_assert_eq(h.type, MSG_SBX_REP, "create %d: %s", i,
				             h.type == MSG_ERROR ? out.err.message : proto_type_name(h.type));
				proto_msg_clear(h.type, &out);
			}
		}
	}
	id = L.next_id++;
	send_msg(L.api, MSG_SBX_LIST, id, &(struct msg_SBX_LIST){ 0 }, -1);
	sleep_ms(500); /* not reading: the socket buffer and then the queue fill up */
	for (;;) {
		cr_assert_eq(recv_msg(L.api, &h, &out, sizeof(out), NULL), 0, "after %zu rows", got);
		cr_assert_eq(h.id, id);
		if (h.type == MSG_LIST_END) {
			cr_assert_eq(out.end.count, got);
			break;
		}
		cr_assert_eq(h.type, MSG_SBX_REP);
		cr_assert_lt(got, (size_t)N, "more rows than sandboxes");
		for (size_t k = 0; k < got; k++)
			cr_assert_str_neq(seen[k], out.sbx.id, "row %s came twice", out.sbx.id);
		snprintf(seen[got++], sizeof(seen[0]), "%s", out.sbx.id);
		proto_msg_clear(h.type, &out);
	}
	cr_assert_eq(got, (size_t)N);
	assert_serving("a long list");
}
