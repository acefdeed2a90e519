/* sbxd --hosts FILE: names the proxy resolves without asking any resolver (hosts(5)). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "netd.h"

int hosts_load(const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && D.nhosts < NETD_HOSTS_MAX) {
		char *save = NULL, *hash = strchr(line, '#'), *tok;
		struct in_addr a;
		if (hash)
			*hash = '\0';
		tok = strtok_r(line, " \t\r\n", &save);
		if (!tok || inet_pton(AF_INET, tok, &a) != 1)
			continue; /* blank, comment, or an IPv6 line: the proxy connects over IPv4 */
		while ((tok = strtok_r(NULL, " \t\r\n", &save)) && D.nhosts < NETD_HOSTS_MAX) {
			size_t n = strlen(tok);
			if (n == 0 || n > NETALLOW_NAME_MAX)
				continue;
			for (size_t i = 0; i < n; i++)
				D.hosts[D.nhosts].name[i] = (char)tolower((unsigned char)tok[i]);
			D.hosts[D.nhosts].name[n] = '\0';
			D.hosts[D.nhosts].addr = a;
			D.nhosts++;
		}
	}
	fclose(f);
	return 0;
}

bool hosts_find(const char *name, struct in_addr *ret)
{
	for (size_t i = 0; i < D.nhosts; i++)
		if (strcasecmp(D.hosts[i].name, name) == 0) {
			*ret = D.hosts[i].addr;
			return true;
		}
	return false;
}
