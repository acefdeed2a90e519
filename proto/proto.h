/* sbx wire protocol: framing, typed messages derived from proto_msgs.h, fd passing.
 * All functions return 0 (or a count) or -errno; none of them logs. */
#ifndef SBX_PROTO_H
#define SBX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto_msgs.h"

#define PROTO_HDR_LEN 16u
#define PROTO_FLAG_FD 0x1u

struct proto_hdr {
	uint32_t type;
	uint32_t len; /* header included */
	uint32_t id;  /* request id, echoed by the reply; 0 for events */
	uint32_t flags;
};

struct proto_strv {
	uint32_t n;
	char **v; /* n strings, then NULL */
};
struct proto_u32v {
	uint32_t n;
	uint32_t *v;
};
/* Binary-safe bytes (stream chunks): may contain NUL, are not terminated. */
struct proto_bytes {
	uint32_t len;
	uint8_t *p;
};

/* One mount as it travels: a host source at target (relative to the sandbox). */
struct proto_mount {
	char *source;
	char *target;
	bool read_only;
};
struct proto_mountv {
	uint32_t n;
	struct proto_mount *v;
};

enum proto_kind { PK_U32, PK_U64, PK_BOOL, PK_ENUM, PK_STR, PK_STRV, PK_U32V, PK_MNTV,
		 PK_BYTES };

/* C type of each kind */
#define PROTO_CTYPE_U32  uint32_t
#define PROTO_CTYPE_U64  uint64_t
#define PROTO_CTYPE_BOOL bool
#define PROTO_CTYPE_ENUM uint32_t
#define PROTO_CTYPE_STR  char *
#define PROTO_CTYPE_STRV struct proto_strv
#define PROTO_CTYPE_U32V struct proto_u32v
#define PROTO_CTYPE_BYTES struct proto_bytes
#define PROTO_CTYPE_MNTV struct proto_mountv

/* enum proto_type: MSG_HELLO = 2, ... */
#define PROTO_X_ENUM(NAME, NUM, FDP, SENDERS, FIELDS) MSG_##NAME = NUM,
enum proto_type { PROTO_MESSAGES(PROTO_X_ENUM) MSG_TYPE_MAX_ };
#undef PROTO_X_ENUM

/* struct msg_hello { uint32_t version; ... }; every message has at least one byte of
 * storage so that empty payloads are still valid C. */
#define PROTO_X_FIELD(S, KIND, NAME, LIMIT) PROTO_CTYPE_##KIND NAME;
#define PROTO_X_STRUCT(NAME, NUM, FDP, SENDERS, FIELDS)                                           \
	struct msg_##NAME {                                                                        \
		FIELDS(PROTO_X_FIELD, NAME)                                                              \
		char unused_;                                                                      \
	};
PROTO_MESSAGES(PROTO_X_STRUCT)
#undef PROTO_X_STRUCT
#undef PROTO_X_FIELD

struct proto_field {
	enum proto_kind kind;
	const char *name;
	size_t offset;
	uint32_t limit;
};

struct proto_msgdef {
	uint32_t type;
	const char *name;
	int fd_policy;
	unsigned senders;
	const struct proto_field *fields;
	size_t nfields;
	size_t size; /* sizeof(struct msg_NAME) */
};

/* The definition of a message type, or NULL if the type does not exist. */
const struct proto_msgdef *proto_msgdef(uint32_t type);
const char *proto_type_name(uint32_t type);
/* The numbering rule of proto_msgs.h: requests (and events, whose id is 0) are even,
 * replies odd; ERROR (1) answers any request. */
static inline bool proto_type_is_request(uint32_t type) { return type % 2 == 0; }
static inline bool proto_type_is_reply(uint32_t type) { return type % 2 == 1 && type != MSG_ERROR; }

/* Encode `msg` (a struct msg_<type>) into buf (whole packet, header included).
 * Returns the packet length or -EINVAL (a field over its limit), -EMSGSIZE. */
int proto_encode(uint32_t type, uint32_t id, bool with_fd, const void *msg, uint8_t *buf,
                 size_t bufsz);

/* Decode and validate one whole packet of `len` bytes into `out`, which must point to
 * storage for the message's struct. has_fd says whether an fd arrived with it.
 * Rejects: short or long packets, header len != len, unknown type, flag bits other than
 * PROTO_FLAG_FD, fd present/missing against the policy or against the flag, bad bool or
 * enum values, strings unterminated, over their limit or with a NUL inside, lists over
 * their limit, trailing bytes. Returns 0 or -errno (-EBADMSG for malformed content). On
 * success the caller frees with proto_msg_clear(). On failure nothing is left allocated. */
int proto_decode(const uint8_t *buf, size_t len, bool has_fd, struct proto_hdr *ret_hdr,
                 void *out, size_t outsz);

/* Free what decode allocated inside a message (strings, lists); the struct itself is the
 * caller's. Also usable on a zeroed struct. */
void proto_msg_clear(uint32_t type, void *msg);

/* One line for logs: "SBX_GET id=7 {id=\"sbx_1\"}" (strings cut at 64 bytes). */
int proto_msg_print(uint32_t type, uint32_t id, const void *msg, char *buf, size_t bufsz);

/* An id as the launcher issues them (sandbox, run): 1..PROTO_ID_MAX of [a-z0-9_]. Both
 * sides check it: the API to answer 404 early, the launcher because it trusts no one. */
bool proto_id_valid(const char *id);
/* An app's name: 1..PROTO_APP_NAME_MAX of [a-z0-9_.-], starting with a letter or digit
 * (it names log files and appears in paths). */
bool proto_app_name_valid(const char *name);

/* strv helpers (NULL-safe) */
int proto_strv_push(struct proto_strv *sv, const char *s);
void proto_strv_clear(struct proto_strv *sv);
int proto_u32v_push(struct proto_u32v *uv, uint32_t v);
void proto_u32v_clear(struct proto_u32v *uv);
/* Appends copies of source and target; -E2BIG past SBX_MOUNTS_MAX. */
int proto_mountv_push(struct proto_mountv *mv, const char *source, const char *target,
                      bool read_only);
void proto_mountv_clear(struct proto_mountv *mv);

/* Blocking-free packet I/O on a SOCK_SEQPACKET socket.
 * proto_send_packet: one sendmsg, with fd as SCM_RIGHTS when fd >= 0. -EAGAIN if full.
 * proto_recv_packet: one recvmsg into buf (at least PROTO_MSG_MAX + 1 bytes); a packet
 *   larger than PROTO_MSG_MAX returns -EMSGSIZE; fds arrive O_CLOEXEC, more than one fd
 *   is -EBADMSG (all closed). ret_fd = -1 when none. Returns length, 0 on EOF. */
int proto_send_packet(int sock, const uint8_t *buf, size_t len, int fd);
int proto_recv_packet(int sock, uint8_t *buf, size_t bufsz, int *ret_fd);

#endif
