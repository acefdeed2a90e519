/* Writes fuzz_proto's seed corpus: for every message type of proto_msgs.h one packet with
 * every field filled in (non-empty strings, lists with entries, mounts), walked from the
 * message definitions, so a message added to the table gets its seed without an edit
 * here. Each file is what fuzz_proto consumes: the flag byte, then the packet. A type
 * whose fd is optional gets both variants. Usage: gen_seeds DIR (created if missing). Exit 1 on any failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fuzz.h"
#include "proto.h"

#define SEED_LIST_LEN 2u /* entries put in every list */
#define SEED_ID       "sbx_1"

/* A string for a field: an id where only an id fits, else the field's own name. */
static const char *seed_str(const struct proto_field *f)
{
	return f->limit <= PROTO_ID_MAX ? SEED_ID : f->name;
}

static int fill_field(const struct proto_field *f, uint8_t *at)
{
	static const uint8_t bytes[] = { 'o', 'u', 't', 0, 0xff, '\n' };
	int r = 0;
	switch (f->kind) {
	case PK_U32:
		*(uint32_t *)at = 7;
		break;
	case PK_U64:
		*(uint64_t *)at = 1234567890123ull;
		break;
	case PK_BOOL:
		*(bool *)at = true;
		break;
	case PK_ENUM:
		*(uint32_t *)at = f->limit; /* the largest valid value */
		break;
	case PK_STR:
		if (!(*(char **)at = strdup(seed_str(f))))
			return -ENOMEM;
		break;
	case PK_STRV:
		for (uint32_t i = 0; i < SEED_LIST_LEN && r == 0; i++)
			r = proto_strv_push((struct proto_strv *)at, i ? "B=2" : "A=1");
		break;
	case PK_U32V:
		for (uint32_t i = 0; i < SEED_LIST_LEN && r == 0; i++)
			r = proto_u32v_push((struct proto_u32v *)at, 8080 + i);
		break;
	case PK_MNTV:
		for (uint32_t i = 0; i < SEED_LIST_LEN && r == 0; i++)
			r = proto_mountv_push((struct proto_mountv *)at, i ? "/srv/data" : "/tmp/src",
			                      i ? "data" : "src", i == 0);
		break;
	case PK_BYTES: {
		struct proto_bytes *b = (struct proto_bytes *)at;
		if (!(b->p = malloc(sizeof(bytes))))
			return -ENOMEM;
		memcpy(b->p, bytes, sizeof(bytes));
		b->len = sizeof(bytes);
		break;
	}
	}
	return r;
}

static int write_seed(const char *dir, const char *name, const char *suffix, uint8_t flag,
                      const uint8_t *pkt, size_t len)
{
	char path[4096], lower[64];
	size_t i;
	for (i = 0; name[i] && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)name[i]);
	lower[i] = '\0';
	snprintf(path, sizeof(path), "%s/%s%s", dir, lower, suffix);
	_cleanup_fclose_ FILE *f = fopen(path, "wb");
	if (!f || fwrite(&flag, 1, 1, f) != 1 || fwrite(pkt, 1, len, f) != len || fflush(f) != 0)
		return -errno;
	return 0;
}

static int seed_type(const char *dir, const struct proto_msgdef *d)
{
	static uint8_t pkt[PROTO_MSG_MAX];
	_cleanup_free_ void *msg = NULL;
	int n, r = 0;

	if (d->size > FUZZ_MSG_STORAGE)
		return -EMSGSIZE;
	if (!(msg = calloc(1, d->size)))
		return -ENOMEM;
	for (size_t i = 0; i < d->nfields && r == 0; i++)
		r = fill_field(&d->fields[i], (uint8_t *)msg + d->fields[i].offset);
	for (int with_fd = 0; with_fd < 2 && r == 0; with_fd++) {
		if ((with_fd && d->fd_policy == PROTO_FD_NONE) ||
		    (!with_fd && d->fd_policy == PROTO_FD_REQUIRED))
			continue;
		n = proto_encode(d->type, 5, with_fd, msg, pkt, sizeof(pkt));
		if (n < 0)
			r = n;
		else
			r = write_seed(dir, d->name,
			               with_fd && d->fd_policy == PROTO_FD_OPTIONAL ? "_fd" : "",
			               with_fd ? FUZZ_FLAG_FD : 0, pkt, (size_t)n);
	}
	proto_msg_clear(d->type, msg);
	return r;
}

int main(int argc, char **argv)
{
	int written = 0;
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	if (mkdir(argv[1], 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "gen_seeds: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (uint32_t t = 0; t < MSG_TYPE_MAX_; t++) {
		const struct proto_msgdef *d = proto_msgdef(t);
		int r;
		if (!d)
			continue;
		if ((r = seed_type(argv[1], d)) < 0) {
			fprintf(stderr, "gen_seeds: %s: %s\n", d->name, strerror(-r));
			return 1;
		}
		written++;
	}
	printf("gen_seeds: %d message types seeded in %s\n", written, argv[1]);
	return 0;
}
