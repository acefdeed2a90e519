/* Issue 7, defect 5, against a real daemon: kernel and runtime trees, device nodes and
 * another user's credentials are refused as mount sources and as readPaths; nothing is
 * created or changed by a refused request. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "harness.h"

TestSuite(mount_policy, .init = sbx_it_init, .fini = sbx_it_fini, .timeout = 60);

Test(mount_policy, kernel_trees_and_devices_are_refused_as_mounts)
{
	static const char *const srcs[] = { "/proc", "/sys/fs/cgroup", "/run", "/var/lib",
		                            "/dev/null", "/boot" };
	char id[128], path[256], body[256];
	sbx_create(&sbx_it, NULL, id, sizeof(id));
	snprintf(path, sizeof(path), "/api/sandbox/sandboxes/%s/mounts", id);
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		snprintf(body, sizeof(body), "{\"source\":\"%s\",\"target\":\"m%zu\"}", srcs[i], i);
		_cleanup_resp_ struct http_resp r = http_req(&sbx_it, "POST", path, body, NULL);
		if (r.status == 400 && strstr(r.body, "does not exist"))
			continue; /* /boot may be absent */
		assert_status(r, 403);
		cr_expect(strstr(r.body, "source"), "%s", r.body);
	}
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", path, NULL, NULL);
	assert_status(l, 200);
	cr_expect_eq(js_array(l.json, "mounts")->u.array.len, 0, "%s", l.body);
}

Test(mount_policy, forbidden_read_paths_refuse_the_create)
{
	_cleanup_resp_ struct http_resp r = http_req(
	        &sbx_it, "POST", "/api/sandbox/sandboxes",
	        "{\"name\":\"rp\",\"fsMode\":\"allowlist\",\"readPaths\":[\"/usr/share\",\"/proc\"]}", NULL);
	assert_status(r, 403);
	cr_expect(strstr(r.body, "readPaths[1]"), "%s", r.body);
	_cleanup_resp_ struct http_resp l = http_req(&sbx_it, "GET", "/api/sandbox/sandboxes", NULL, NULL);
	cr_expect_eq(js_int(l.json, "count", -1), 0, "%s", l.body);
}
