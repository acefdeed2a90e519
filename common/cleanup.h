/* Cleanup attributes, after bubblewrap's utils.h and systemd. */
#ifndef SBX_CLEANUP_H
#define SBX_CLEANUP_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}
static inline void strv_freep(char ***v)
{
	if (*v) {
		for (char **p = *v; *p; p++)
			free(*p);
		free(*v);
	}
}

#define _cleanup_free_   _cleanup_(freep)
#define _cleanup_close_  _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_   _cleanup_(strv_freep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hand ownership out of a cleanup-attributed variable. */
#define steal_pointer(pp)                                                                          \
	({                                                                                         \
		__typeof__(*(pp)) steal_tmp_ = *(pp);                                              \
		*(pp) = NULL;                                                                      \
		steal_tmp_;                                                                        \
	})
#define steal_fd(fdp)                                                                              \
	({                                                                                         \
		int steal_fd_tmp_ = *(fdp);                                                        \
		*(fdp) = -1;                                                                       \
		steal_fd_tmp_;                                                                     \
	})

#endif
