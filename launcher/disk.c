/* limits.diskMb by one ext4 image per sandbox, loop-mounted on its workdir (disk.h). */
#include "disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "store.h"
#include "util.h"

#define DISK_MIB         (1024ull * 1024ull)
#define DISK_PATH_MAX    4096u
#define DISK_DEV_NAME    32u
#define DISK_LOOP_MAJOR  7u

static int image_path(const struct launcher *L, const char *id, char *buf, size_t sz)
{
	if (!proto_id_valid(id))
		return -EINVAL;
	return (size_t)snprintf(buf, sz, "%s/images/%s.img", L->data_dir, id) < sz ? 0 : -ENAMETOOLONG;
}

void disk_init(struct launcher *L)
{
	char dir[DISK_PATH_MAX];

	L->disk_why = NULL;
	if (!L->root)
		L->disk_why = "the launcher is not root: no loop devices";
	else if (access("/dev/loop-control", R_OK | W_OK) < 0)
		L->disk_why = "no /dev/loop-control";
	else if (access(DISK_MKFS_PATH, X_OK) < 0)
		L->disk_why = "no " DISK_MKFS_PATH;
	snprintf(dir, sizeof(dir), "%s/images", L->data_dir);
	if (!L->disk_why && mkdir(dir, 0700) < 0 && errno != EEXIST)
		L->disk_why = "the images directory could not be made";
	L->disk_images = !L->disk_why;
}

/* Room for more MiB on the data dir's filesystem, beyond the reserve. */
static int room_for(const struct launcher *L, uint64_t mb)
{
	struct statvfs v;
	if (statvfs(L->data_dir, &v) < 0)
		return -errno;
	if ((uint64_t)v.f_bavail * v.f_frsize < (mb + SBX_DISK_RESERVE_MB) * DISK_MIB)
		return -EDQUOT;
	return 0;
}

/* argv[0] run to completion, its output discarded. 0 if it exited 0. */
static int run_tool(char *const argv[])
{
	static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL };
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
			_exit(126);
		close_fds_from(3, NULL, 0);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* A free loop device bound to image_fd, detached automatically at the last close (its
 * mount's end). Returns the open device; its name in dev. */
static int loop_attach(int image_fd, const char *file, char *dev, size_t devsz)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	struct loop_config cfg = { .fd = (uint32_t)image_fd,
		                   .info = { .lo_flags = LO_FLAGS_AUTOCLEAR } };

	if (ctl < 0)
		return -errno;
	snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", file);
	for (unsigned i = 0; i < DISK_LOOP_TRIES; i++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE), fd;
		if (n < 0)
			return -errno;
		snprintf(dev, devsz, "/dev/loop%d", n);
		if ((fd = open(dev, O_RDWR | O_CLOEXEC)) < 0)
			return -errno;
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e != EBUSY) /* EBUSY: someone took it between GET_FREE and here */
			return -e;
	}
	return -EBUSY;
}

static int mount_image(const char *img, const char *workdir)
{
	_cleanup_close_ int ifd = open(img, O_RDWR | O_NOFOLLOW | O_CLOEXEC), lfd = -1;
	char dev[DISK_DEV_NAME];

	if (ifd < 0)
		return -errno;
	if ((lfd = loop_attach(ifd, img, dev, sizeof(dev))) < 0)
		return lfd;
	/* the device stays while mounted; closing lfd then lets AUTOCLEAR detach it at umount */
	if (mount(dev, workdir, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro") < 0)
		return -errno;
	return 0;
}

int disk_image_create(struct launcher *L, const char *id, const char *workdir, uint32_t mb,
                      uint32_t uid)
{
	char img[DISK_PATH_MAX], size[32], owner[64];
	_cleanup_close_ int fd = -1;
	int r;

	if (!L->disk_images)
		return -EOPNOTSUPP;
	if ((r = image_path(L, id, img, sizeof(img))) < 0 || (r = room_for(L, mb)) < 0)
		return r;
	if ((fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return -errno;
	/* reserved now: a sandbox never finds its image short of blocks the host lacks */
	if (fallocate(fd, 0, 0, (off_t)mb * (off_t)DISK_MIB) < 0) {
		r = -errno;
		goto fail;
	}
	snprintf(size, sizeof(size), "%uM", mb);
	snprintf(owner, sizeof(owner), "root_owner=%u:%u,nodiscard,lazy_itable_init=1", uid, uid);
	/* nodiscard: a discard would punch the reserved blocks back out of the file */
	char *const argv[] = { DISK_MKFS_PATH, "-q", "-F", "-m", "0", "-E", owner, img, size, NULL };
	if ((r = run_tool(argv)) < 0 || (r = mount_image(img, workdir)) < 0)
		goto fail;
	/* mkfs's root-owned lost+found would be the one thing in the workdir the jail cannot
	 * remove; e2fsck makes it again if it ever needs one */
	char lf[DISK_PATH_MAX + 16];
	snprintf(lf, sizeof(lf), "%s/lost+found", workdir);
	rmdir(lf);
	if (chmod(workdir, 0700) < 0) {
		r = -errno;
		umount2(workdir, MNT_DETACH | UMOUNT_NOFOLLOW);
		goto fail;
	}
	return 0;
fail:
	unlink(img);
	return r;
}

bool disk_enforced(const struct launcher *L, const char *workdir)
{
	/* the sandboxes directory stays on one filesystem for the launcher's life: its device
	 * is read once (this runs for every row of a sandbox list) */
	static dev_t parent_dev;
	static char parent[DISK_PATH_MAX]; /* the directory parent_dev is of ("" = none yet) */
	struct stat a, b;
	if (!L->sandboxes_dir)
		return false;
	if (strcmp(parent, L->sandboxes_dir) != 0) {
		if (stat(L->sandboxes_dir, &a) < 0 || strlen(L->sandboxes_dir) >= sizeof(parent))
			return false;
		parent_dev = a.st_dev;
		strcpy(parent, L->sandboxes_dir);
	}
	return workdir && lstat(workdir, &b) == 0 && S_ISDIR(b.st_mode) && parent_dev != b.st_dev;
}

int disk_image_mount(struct launcher *L, const char *id, const char *workdir)
{
	char img[DISK_PATH_MAX];
	int r;

	if (!L->disk_images)
		return -EOPNOTSUPP;
	if ((r = image_path(L, id, img, sizeof(img))) < 0)
		return r;
	if (access(img, F_OK) < 0)
		return -errno;
	if (disk_enforced(L, workdir))
		return 0; /* still mounted from a launcher that died */
	return mount_image(img, workdir);
}

int disk_image_grow(struct launcher *L, const char *id, const char *workdir, uint32_t old_mb,
                    uint32_t mb)
{
	char img[DISK_PATH_MAX], dev[DISK_DEV_NAME];
	_cleanup_close_ int fd = -1, lfd = -1;
	struct stat st;
	int r;

	if (mb < old_mb)
		return -EINVAL;
	if (mb == old_mb)
		return 0;
	if (!L->disk_images || !disk_enforced(L, workdir))
		return -EOPNOTSUPP;
	if ((r = image_path(L, id, img, sizeof(img))) < 0 || (r = room_for(L, mb - old_mb)) < 0)
		return r;
	if (stat(workdir, &st) < 0)
		return -errno;
	if (major(st.st_dev) != DISK_LOOP_MAJOR)
		return -ENODEV;
	snprintf(dev, sizeof(dev), "/dev/loop%u", minor(st.st_dev));
	if ((fd = open(img, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    (lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0)
		return -errno;
	if (fallocate(fd, 0, 0, (off_t)mb * (off_t)DISK_MIB) < 0 || ioctl(lfd, LOOP_SET_CAPACITY, 0) < 0)
		return -errno;
	char *const argv[] = { DISK_RESIZE_PATH, dev, NULL };
	if ((r = run_tool(argv)) == 0)
		return 0;
	/* not grown (online resize needs CAP_SYS_RESOURCE): the filesystem never used the new
	 * tail, so the file goes back to its size */
	if (ftruncate(fd, (off_t)old_mb * (off_t)DISK_MIB) == 0)
		ioctl(lfd, LOOP_SET_CAPACITY, 0);
	return -EPERM;
}

int disk_image_release(struct launcher *L, const char *id, const char *workdir)
{
	char img[DISK_PATH_MAX];
	int r = 0;

	if (workdir && disk_enforced(L, workdir) && umount2(workdir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		r = -errno;
	if (image_path(L, id, img, sizeof(img)) == 0 && unlink(img) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

static int mount_one(const struct sandbox *s, void *arg)
{
	struct launcher *L = arg;
	int r = disk_image_mount(L, s->id, s->workdir);
	if (r < 0 && r != -ENOENT)
		log_warnx("sandbox %s: mounting its disk image: %s", s->id, strerror(-r));
	return 0;
}

static int unmount_one(const struct sandbox *s, void *arg)
{
	struct launcher *L = arg;
	if (disk_enforced(L, s->workdir) && umount2(s->workdir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		log_warnx("sandbox %s: unmounting its disk image: %s", s->id, strerror(errno));
	return 0;
}

void disk_mount_all(struct launcher *L)
{
	if (L->disk_images)
		store_sandbox_foreach(L->db, mount_one, L);
}

void disk_unmount_all(struct launcher *L)
{
	if (L->disk_images)
		store_sandbox_foreach(L->db, unmount_one, L);
}
