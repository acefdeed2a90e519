/* Encode, decode, validate and print, all driven by the table derived from proto_msgs.h. */

#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One field array per message: fields_HELLO[] = { {PK_U32, "version", offsetof(...)}, ...}.
 * A leading sentinel keeps empty messages valid C; it is skipped below. */
#define PROTO_X_FIELD(S, KIND, NAME, LIMIT) { PK_##KIND, #NAME, offsetof(struct msg_##S, NAME), LIMIT },
#define PROTO_X_ARR(NAME, NUM, FDP, SENDERS, FIELDS)                                              \
	static const struct proto_field fields_##NAME[] = { { PK_U32, NULL, 0, 0 },                \
		                                            FIELDS(PROTO_X_FIELD, NAME) };
PROTO_MESSAGES(PROTO_X_ARR)
#undef PROTO_X_ARR
#undef PROTO_X_FIELD

#define PROTO_X_DEF(NAME, NUM, FDP, SENDERS, FIELDS)                                              \
	{ NUM,                                                                                     \
	  #NAME,                                                                                   \
	  FDP,                                                                                     \
	  SENDERS,                                                                                 \
	  fields_##NAME + 1,                                                                       \
	  sizeof(fields_##NAME) / sizeof(fields_##NAME[0]) - 1,                                    \
	  sizeof(struct msg_##NAME) },
static const struct proto_msgdef msgdefs[] = { PROTO_MESSAGES(PROTO_X_DEF) };
#undef PROTO_X_DEF

const struct proto_msgdef *proto_msgdef(uint32_t type)
{
	for (size_t i = 0; i < sizeof(msgdefs) / sizeof(msgdefs[0]); i++)
		if (msgdefs[i].type == type)
			return &msgdefs[i];
	return NULL;
}

const char *proto_type_name(uint32_t type)
{
	const struct proto_msgdef *d = proto_msgdef(type);
	return d ? d->name : "UNKNOWN";
}

/* ---- encode ------------------------------------------------------------------------ */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
};

static int w_put(struct wbuf *w, const void *src, size_t n)
{
	if (n > w->cap - w->len)
		return -EMSGSIZE;
	memcpy(w->p + w->len, src, n);
	w->len += n;
	return 0;
}

static int w_u32(struct wbuf *w, uint32_t v) { return w_put(w, &v, sizeof(v)); }

static int w_str(struct wbuf *w, const char *s, uint32_t limit)
{
	size_t n = s ? strlen(s) : 0;
	int r;
	if (n > limit)
		return -EINVAL;
	if ((r = w_u32(w, (uint32_t)n)) < 0 || (r = w_put(w, s ? s : "", n)) < 0)
		return r;
	return w_put(w, "", 1);
}

static int encode_field(struct wbuf *w, const struct proto_field *f, const uint8_t *base)
{
	const void *at = base + f->offset;
	int r;
	switch (f->kind) {
	case PK_U32:
		return w_u32(w, *(const uint32_t *)at);
	case PK_U64:
		return w_put(w, at, sizeof(uint64_t));
	case PK_BOOL: {
		uint8_t b = *(const bool *)at ? 1 : 0;
		return w_put(w, &b, 1);
	}
	case PK_ENUM: {
		uint32_t v = *(const uint32_t *)at;
		uint8_t b = (uint8_t)v;
		if (v > f->limit)
			return -EINVAL;
		return w_put(w, &b, 1);
	}
	case PK_STR:
		return w_str(w, *(char *const *)at, f->limit);
	case PK_STRV: {
		const struct proto_strv *sv = at;
		if (sv->n > f->limit)
			return -EINVAL;
		if ((r = w_u32(w, sv->n)) < 0)
			return r;
		for (uint32_t i = 0; i < sv->n; i++)
			if ((r = w_str(w, sv->v[i], PROTO_STR_MAX)) < 0)
				return r;
		return 0;
	}
	case PK_U32V: {
		const struct proto_u32v *uv = at;
		if (uv->n > f->limit)
			return -EINVAL;
		if ((r = w_u32(w, uv->n)) < 0)
			return r;
		return uv->n ? w_put(w, uv->v, (size_t)uv->n * sizeof(uint32_t)) : 0;
	}
	case PK_BYTES: {
		const struct proto_bytes *b = at;
		if (b->len > f->limit || (b->len && !b->p))
			return -EINVAL;
		if ((r = w_u32(w, b->len)) < 0)
			return r;
		return b->len ? w_put(w, b->p, b->len) : 0;
	}
	case PK_MNTV: {
		const struct proto_mountv *mv = at;
		if (mv->n > f->limit)
			return -EINVAL;
		if ((r = w_u32(w, mv->n)) < 0)
			return r;
		for (uint32_t i = 0; i < mv->n; i++) {
			uint8_t ro = mv->v[i].read_only ? 1 : 0;
			if ((r = w_str(w, mv->v[i].source, SBX_MOUNT_STR_MAX)) < 0 ||
			    (r = w_str(w, mv->v[i].target, SBX_MOUNT_STR_MAX)) < 0 ||
			    (r = w_put(w, &ro, 1)) < 0)
				return r;
		}
		return 0;
	}
	}
	return -EINVAL;
}

int proto_encode(uint32_t type, uint32_t id, bool with_fd, const void *msg, uint8_t *buf,
                 size_t bufsz)
{
	const struct proto_msgdef *d = proto_msgdef(type);
	struct wbuf w = { buf, PROTO_HDR_LEN, bufsz < PROTO_MSG_MAX ? bufsz : PROTO_MSG_MAX };
	struct proto_hdr h;
	int r;

	if (!d || bufsz < PROTO_HDR_LEN)
		return -EINVAL;
	if ((with_fd && d->fd_policy == PROTO_FD_NONE) ||
	    (!with_fd && d->fd_policy == PROTO_FD_REQUIRED))
		return -EINVAL;
	for (size_t i = 0; i < d->nfields; i++)
		if ((r = encode_field(&w, &d->fields[i], msg)) < 0)
			return r;
	h = (struct proto_hdr){ type, (uint32_t)w.len, id, with_fd ? PROTO_FLAG_FD : 0 };
	memcpy(buf, &h, sizeof(h));
	return (int)w.len;
}

/* ---- decode ------------------------------------------------------------------------ */

struct rbuf {
	const uint8_t *p;
	size_t len, off;
};

static int r_get(struct rbuf *r, void *dst, size_t n)
{
	if (n > r->len - r->off)
		return -EBADMSG;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}

static int r_str(struct rbuf *r, uint32_t limit, char **ret)
{
	uint32_t n;
	char *s;
	if (r_get(r, &n, sizeof(n)) < 0 || n > limit)
		return -EBADMSG;
	/* n bytes plus the terminator must be present; the terminator must be NUL and no
	 * NUL may appear inside */
	if ((size_t)n + 1 > r->len - r->off)
		return -EBADMSG;
	if (r->p[r->off + n] != '\0' || memchr(r->p + r->off, '\0', n))
		return -EBADMSG;
	if (!(s = malloc((size_t)n + 1)))
		return -ENOMEM;
	memcpy(s, r->p + r->off, (size_t)n + 1);
	r->off += (size_t)n + 1;
	*ret = s;
	return 0;
}

static int decode_field(struct rbuf *r, const struct proto_field *f, uint8_t *base)
{
	void *at = base + f->offset;
	uint8_t b;
	uint32_t n;
	int e;
	switch (f->kind) {
	case PK_U32:
		return r_get(r, at, sizeof(uint32_t));
	case PK_U64:
		return r_get(r, at, sizeof(uint64_t));
	case PK_BOOL:
		if (r_get(r, &b, 1) < 0 || b > 1)
			return -EBADMSG;
		*(bool *)at = b;
		return 0;
	case PK_ENUM:
		if (r_get(r, &b, 1) < 0 || b > f->limit)
			return -EBADMSG;
		*(uint32_t *)at = b;
		return 0;
	case PK_STR:
		return r_str(r, f->limit, (char **)at);
	case PK_STRV: {
		struct proto_strv *sv = at;
		if (r_get(r, &n, sizeof(n)) < 0 || n > f->limit)
			return -EBADMSG;
		if (!(sv->v = calloc((size_t)n + 1, sizeof(char *))))
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			if ((e = r_str(r, PROTO_STR_MAX, &sv->v[i])) < 0)
				return e;
			sv->n = i + 1;
		}
		return 0;
	}
	case PK_U32V: {
		struct proto_u32v *uv = at;
		if (r_get(r, &n, sizeof(n)) < 0 || n > f->limit)
			return -EBADMSG;
		if ((size_t)n * sizeof(uint32_t) > r->len - r->off)
			return -EBADMSG;
		if (n && !(uv->v = malloc((size_t)n * sizeof(uint32_t))))
			return -ENOMEM;
		uv->n = n;
		return n ? r_get(r, uv->v, (size_t)n * sizeof(uint32_t)) : 0;
	}
	case PK_BYTES: {
		struct proto_bytes *bv = at;
		if (r_get(r, &n, sizeof(n)) < 0 || n > f->limit || n > r->len - r->off)
			return -EBADMSG;
		if (n && !(bv->p = malloc(n)))
			return -ENOMEM;
		bv->len = n;
		return n ? r_get(r, bv->p, n) : 0;
	}
	case PK_MNTV: {
		struct proto_mountv *mv = at;
		if (r_get(r, &n, sizeof(n)) < 0 || n > f->limit)
			return -EBADMSG;
		if (n && !(mv->v = calloc(n, sizeof(*mv->v))))
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			struct proto_mount *m = &mv->v[i];
			mv->n = i + 1; /* so a failure frees what was decoded */
			if ((e = r_str(r, SBX_MOUNT_STR_MAX, &m->source)) < 0 ||
			    (e = r_str(r, SBX_MOUNT_STR_MAX, &m->target)) < 0)
				return e;
			if (r_get(r, &b, 1) < 0 || b > 1)
				return -EBADMSG;
			m->read_only = b;
		}
		return 0;
	}
	}
	return -EBADMSG;
}

int proto_decode(const uint8_t *buf, size_t len, bool has_fd, struct proto_hdr *ret_hdr,
                 void *out, size_t outsz)
{
	const struct proto_msgdef *d;
	struct proto_hdr h;
	struct rbuf r = { buf, len, PROTO_HDR_LEN };
	int e;

	if (len < PROTO_HDR_LEN || len > PROTO_MSG_MAX)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.len != len || (h.flags & ~PROTO_FLAG_FD))
		return -EBADMSG;
	if (!(d = proto_msgdef(h.type)))
		return -ENOMSG;
	if (outsz < d->size)
		return -EINVAL;
	/* the flag and the ancillary data must agree, and both must match the policy */
	if (!!(h.flags & PROTO_FLAG_FD) != has_fd)
		return -EBADMSG;
	if ((has_fd && d->fd_policy == PROTO_FD_NONE) ||
	    (!has_fd && d->fd_policy == PROTO_FD_REQUIRED))
		return -EBADMSG;
	memset(out, 0, d->size);
	for (size_t i = 0; i < d->nfields; i++) {
		if ((e = decode_field(&r, &d->fields[i], out)) < 0) {
			proto_msg_clear(h.type, out);
			return e;
		}
	}
	if (r.off != len) { /* trailing bytes */
		proto_msg_clear(h.type, out);
		return -EBADMSG;
	}
	if (ret_hdr)
		*ret_hdr = h;
	return 0;
}

void proto_msg_clear(uint32_t type, void *msg)
{
	const struct proto_msgdef *d = proto_msgdef(type);
	if (!d || !msg)
		return;
	for (size_t i = 0; i < d->nfields; i++) {
		void *at = (uint8_t *)msg + d->fields[i].offset;
		switch (d->fields[i].kind) {
		case PK_STR:
			free(*(char **)at);
			*(char **)at = NULL;
			break;
		case PK_STRV:
			proto_strv_clear(at);
			break;
		case PK_U32V:
			proto_u32v_clear(at);
			break;
		case PK_BYTES:
			free(((struct proto_bytes *)at)->p);
			*(struct proto_bytes *)at = (struct proto_bytes){ 0, NULL };
			break;
		case PK_MNTV:
			proto_mountv_clear(at);
			break;
		default:
			break;
		}
	}
}

/* ---- print ------------------------------------------------------------------------- */

int proto_msg_print(uint32_t type, uint32_t id, const void *msg, char *buf, size_t bufsz)
{
	const struct proto_msgdef *d = proto_msgdef(type);
	size_t off = 0;
	int n;

#define APPEND(...)                                                                                \
	do {                                                                                       \
		n = snprintf(buf + off, off < bufsz ? bufsz - off : 0, __VA_ARGS__);               \
		if (n > 0)                                                                         \
			off += (size_t)n;                                                          \
	} while (0)

	if (!bufsz)
		return -EINVAL;
	buf[0] = '\0';
	APPEND("%s id=%u {", d ? d->name : "UNKNOWN", id);
	for (size_t i = 0; d && i < d->nfields; i++) {
		const struct proto_field *f = &d->fields[i];
		const void *at = (const uint8_t *)msg + f->offset;
		APPEND("%s%s=", i ? " " : "", f->name);
		switch (f->kind) {
		case PK_U32:
		case PK_ENUM:
			APPEND("%u", *(const uint32_t *)at);
			break;
		case PK_U64:
			APPEND("%llu", (unsigned long long)*(const uint64_t *)at);
			break;
		case PK_BOOL:
			APPEND("%s", *(const bool *)at ? "true" : "false");
			break;
		case PK_STR: {
			const char *s = *(char *const *)at;
			APPEND("\"%.64s\"", s ? s : "");
			break;
		}
		case PK_STRV:
			APPEND("[%u strings]", ((const struct proto_strv *)at)->n);
			break;
		case PK_U32V:
			APPEND("[%u numbers]", ((const struct proto_u32v *)at)->n);
			break;
		case PK_BYTES:
			APPEND("<%u bytes>", ((const struct proto_bytes *)at)->len);
			break;
		case PK_MNTV:
			APPEND("[%u mounts]", ((const struct proto_mountv *)at)->n);
			break;
		}
	}
	APPEND("}");
#undef APPEND
	if (off >= bufsz)
		buf[bufsz - 1] = '\0';
	return 0;
}

bool proto_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > PROTO_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '_'))
			return false;
	return true;
}

bool proto_app_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > PROTO_APP_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!alnum && (i == 0 || (ch != '-' && ch != '_' && ch != '.')))
			return false;
	}
	return true;
}

/* ---- lists ------------------------------------------------------------------------- */

int proto_strv_push(struct proto_strv *sv, const char *s)
{
	char **nv;
	char *c;
	if (sv->n >= PROTO_LIST_MAX)
		return -E2BIG;
	if (!(c = strdup(s)))
		return -ENOMEM;
	if (!(nv = realloc(sv->v, ((size_t)sv->n + 2) * sizeof(char *)))) {
		free(c);
		return -ENOMEM;
	}
	sv->v = nv;
	sv->v[sv->n++] = c;
	sv->v[sv->n] = NULL;
	return 0;
}

void proto_strv_clear(struct proto_strv *sv)
{
	if (!sv)
		return;
	for (uint32_t i = 0; sv->v && i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}

int proto_u32v_push(struct proto_u32v *uv, uint32_t v)
{
	uint32_t *nv;
	if (uv->n >= PROTO_LIST_MAX)
		return -E2BIG;
	if (!(nv = realloc(uv->v, ((size_t)uv->n + 1) * sizeof(uint32_t))))
		return -ENOMEM;
	uv->v = nv;
	uv->v[uv->n++] = v;
	return 0;
}

void proto_u32v_clear(struct proto_u32v *uv)
{
	if (!uv)
		return;
	free(uv->v);
	uv->v = NULL;
	uv->n = 0;
}

int proto_mountv_push(struct proto_mountv *mv, const char *source, const char *target,
                      bool read_only)
{
	struct proto_mount *nv;
	char *s, *t;
	if (mv->n >= SBX_MOUNTS_MAX)
		return -E2BIG;
	if (!(nv = realloc(mv->v, ((size_t)mv->n + 1) * sizeof(*nv))))
		return -ENOMEM;
	mv->v = nv;
	s = strdup(source ? source : "");
	t = strdup(target ? target : "");
	if (!s || !t) {
		free(s);
		free(t);
		return -ENOMEM;
	}
	mv->v[mv->n++] = (struct proto_mount){ s, t, read_only };
	return 0;
}

void proto_mountv_clear(struct proto_mountv *mv)
{
	if (!mv)
		return;
	for (uint32_t i = 0; mv->v && i < mv->n; i++) {
		free(mv->v[i].source);
		free(mv->v[i].target);
	}
	free(mv->v);
	mv->v = NULL;
	mv->n = 0;
}

/* ---- packets ----------------------------------------------------------------------- */

int proto_send_packet(int sock, const uint8_t *buf, size_t len, int fd)
{
	struct iovec iov = { (void *)buf, len };
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;
		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = sizeof(cbuf.b);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? (int)n : -EIO;
}

int proto_recv_packet(int sock, uint8_t *buf, size_t bufsz, int *ret_fd)
{
	struct iovec iov = { buf, bufsz };
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	struct msghdr mh = { .msg_iov = &iov,
		             .msg_iovlen = 1,
		             .msg_control = cbuf.b,
		             .msg_controllen = sizeof(cbuf.b) };
	ssize_t n;
	int fd = -1, nfds = 0, bad = 0;

	*ret_fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int got;
				memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (nfds++ == 0)
					fd = got;
				else
					close(got);
			}
		} else {
			bad = 1;
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		bad = 1;
	if (nfds > 1 || bad) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	if (mh.msg_flags & MSG_TRUNC || (size_t)n > PROTO_MSG_MAX) {
		if (fd >= 0)
			close(fd);
		return -EMSGSIZE;
	}
	*ret_fd = fd;
	return (int)n;
}
