/* Two small facts several launcher modules need: the daemon user's home (whited out in
 * every jail, refused as a mount source) and whether a sandbox has no network at all. */
#include <pwd.h>
#include <unistd.h>

#include "launcher.h"

bool sandbox_denies_inet(const struct sandbox *s)
{
	return !s->network && !s->ports_listen.n && !s->ports_connect.n && !s->ports_loopback.n &&
	       !s->proxy_allow.n;
}

const char *launcher_home_dir(void)
{
	struct passwd *pw = getpwuid(geteuid());
	return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : geteuid() == 0 ? "/root" : NULL;
}
