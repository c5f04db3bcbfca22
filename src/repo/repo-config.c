/*
 * src/repo/repo-config.c - a repository's configuration: the config
 * files of src/config/ read and written at the repository's directory.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "aptix/config.h"

int aptix_config_open(aptix_config **out, aptix_repo *repo)
{
	APTIX_ASSERT_ARG(out);
	return aptix_config_open_dir(out, repo ? repo->path : NULL);
}

int aptix_config_set(aptix_repo *repo, const char *key, const char *value)
{
	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(key);
	if (!repo->path) {
		aptix_error_set(APTIX_ERROR_CONFIG, "the repository has no "
				"directory to keep a config file in");
		return APTIX_EINVALID;
	}
	return aptix_config_set_dir(repo->path, key, value);
}
