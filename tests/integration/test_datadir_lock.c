/* One sbxd per data directory: a second one would share the database and its launcher's
 * start-up sweep would kill the first one's jails (their cgroup parent is named after the
 * data directory). It must refuse to start, say why, and leave the first one serving. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

TestSuite(datadir_lock, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 60);

Test(datadir_lock, a_second_sbxd_on_the_same_data_dir_is_refused)
{
	struct sbxd b = { .pid = -1, .tag = "second",
		          .extra_args = { "--data-dir", sbx_it.data_dir } };
	int r = sbxd_start(&b);
	cr_assert_lt(r, 0, "a second sbxd started on %s", sbx_it.data_dir);
	cr_expect(WIFEXITED(b.exit_status) && WEXITSTATUS(b.exit_status) != 0,
	          "status 0x%x", b.exit_status);
	{
		_cleanup_fclose_ FILE *f = fopen(b.log_path, "re");
		char line[1024];
		bool said = false;
		while (f && fgets(line, sizeof(line), f))
			said |= strstr(line, "another sbxd") != NULL;
		cr_expect(said, "the second sbxd did not say why");
	}
	sbxd_stop(&b);
	_cleanup_resp_ struct http_resp h = http_req(&sbx_it, "GET", "/api/sandbox/health", NULL, NULL);
	assert_status(h, 200);
}
