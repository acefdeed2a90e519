/* limits.diskMb: each sandbox's workdir is its own ext4 filesystem in an image file of
 * diskMb MiB (<data>/images/<id>.img), its blocks reserved up front with fallocate and
 * loop-mounted on the workdir. A full image is full for that sandbox alone; the database
 * and the other sandboxes live on the data dir's filesystem, which keeps
 * SBX_DISK_RESERVE_MB free beyond every image. All functions return 0 or -errno. */
#ifndef SBX_DISK_H
#define SBX_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "launcher.h"

#define DISK_MECHANISM    "ext4-loop" /* the run's limits list: disk=ext4-loop */
#define DISK_MKFS_PATH    "/usr/sbin/mkfs.ext4"
#define DISK_RESIZE_PATH  "/usr/sbin/resize2fs"
#define DISK_LOOP_TRIES   8u /* LOOP_CTL_GET_FREE races with other users of loop devices */

/* Whether images can be made here (root, /dev/loop-control, mkfs.ext4); sets L->disk_why
 * to the reason when not. Creates <data>/images. */
void disk_init(struct launcher *L);

/* Make, format and mount the image of a new sandbox on its (existing, empty) workdir,
 * owned by uid. -EDQUOT: the data dir's filesystem has no room for it plus the reserve. */
int disk_image_create(struct launcher *L, const char *id, const char *workdir, uint32_t mb,
                      uint32_t uid);

/* Mount an existing image on workdir unless something is mounted there already. -ENOENT:
 * the sandbox has no image (made before schema 3, or without loop devices). */
int disk_image_mount(struct launcher *L, const char *id, const char *workdir);

/* Whether workdir is its image's mount (a different device from the sandboxes dir). */
bool disk_enforced(const struct launcher *L, const char *workdir);

/* Grow the image of a mounted workdir to mb MiB (fallocate, LOOP_SET_CAPACITY, online
 * resize2fs). -EINVAL: smaller than now (ext4 cannot shrink while mounted); -EPERM:
 * the kernel refused the online resize (it needs CAP_SYS_RESOURCE), the image is as before. */
int disk_image_grow(struct launcher *L, const char *id, const char *workdir, uint32_t old_mb,
                    uint32_t mb);

/* Detach the workdir's mount (lazily: a live run keeps its view until it ends) and unlink
 * the image. Needs no new disk space; a missing mount or image is not an error. */
int disk_image_release(struct launcher *L, const char *id, const char *workdir);

/* Mount every stored sandbox's image (launcher start) / detach them all (clean exit). */
void disk_mount_all(struct launcher *L);
void disk_unmount_all(struct launcher *L);

#endif
