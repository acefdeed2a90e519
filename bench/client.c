/* One HTTP/1.1 POST on a fresh loopback socket, then exit: the benchmarks' client, so that
 * curl's own start-up is not part of the measured time. Not part of the product.
 *
 * Usage: client PORT PATH TOKEN BODY [MCP_SESSION_ID]
 * Exit 0 when the status is 2xx and, for MCP, the reply has no "error"; 1 otherwise. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { REQ_MAX = 8192, REPLY_MAX = 1 << 20 };

int main(int argc, char **argv)
{
	static char req[REQ_MAX], reply[REPLY_MAX];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	size_t got = 0;
	ssize_t n;
	int fd, len;

	if (argc < 5) {
		fprintf(stderr, "usage: client PORT PATH TOKEN BODY [MCP_SESSION_ID]\n");
		return 2;
	}
	sa.sin_port = htons((unsigned short)atoi(argv[1]));
	len = snprintf(req, sizeof(req),
	               "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\n"
	               "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	               "%s%s%sConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
	               argv[2], argv[1], argv[3], argc > 5 ? "Mcp-Session-Id: " : "", argc > 5 ? argv[5] : "",
	               argc > 5 ? "\r\n" : "", strlen(argv[4]), argv[4]);
	if (len < 0 || (size_t)len >= sizeof(req))
		return 2;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("client: connect");
		return 1;
	}
	for (int off = 0; off < len; off += (int)n)
		if ((n = write(fd, req + off, (size_t)(len - off))) <= 0)
			return 1;
	while (got < sizeof(reply) - 1 && (n = read(fd, reply + got, sizeof(reply) - 1 - got)) > 0)
		got += (size_t)n;
	reply[got] = '\0';
	close(fd);
	if (strncmp(reply, "HTTP/1.1 2", 10) != 0 || (argc > 5 && strstr(reply, "\"error\""))) {
		fprintf(stderr, "client: %.200s\n", reply);
		return 1;
	}
	return 0;
}
