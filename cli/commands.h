/*
 * cli/commands.h - every aptix command.
 *
 * How to add a command:
 *  1. Write plumbing/<name>.c (or porcelain/<name>.c) exporting
 *     int cmd_<name>(int argc, const char **argv, struct aptix_repo *repo);
 *     repo is NULL for commands without NEED_REPO. Parse options with
 *     parse-options.h so that -h works; return the exit code (0; 1 for
 *     a plumbing "no"; 128 fatal; 129 usage). Clean up through one done:
 *     label.
 *  2. Declare it below and add it to the table in cli/aptix.c with its
 *     category and one-line help.
 *  3. The Makefile picks the file up by itself.
 *  4. Add a t/tNNNN-<name>.sh test (t0012-help.sh checks -h for every
 *     command by itself).
 *
 * Plumbing input, output and exit codes are stable; porcelain output is
 * for people and may change.
 */
#ifndef APTIX_COMMANDS_H
#define APTIX_COMMANDS_H

struct aptix_repo;

#define DECLARE_CMD(name) \
	int cmd_##name(int argc, const char **argv, struct aptix_repo *repo)

/* plumbing */
DECLARE_CMD(hash_object);
DECLARE_CMD(cat_object);
DECLARE_CMD(rev_parse);
DECLARE_CMD(update_ref);
DECLARE_CMD(symbolic_ref);
DECLARE_CMD(for_each_ref);
DECLARE_CMD(reflog);
DECLARE_CMD(write_turn);
DECLARE_CMD(commit_session);
DECLARE_CMD(fsck);
DECLARE_CMD(reindex);
DECLARE_CMD(rag_query);
DECLARE_CMD(salvage);
DECLARE_CMD(credscan);

/* porcelain */
DECLARE_CMD(init);
DECLARE_CMD(share);
DECLARE_CMD(index);
DECLARE_CMD(continue);
DECLARE_CMD(fork);
DECLARE_CMD(export);
DECLARE_CMD(import);
DECLARE_CMD(rerun);
DECLARE_CMD(config);
DECLARE_CMD(show);
DECLARE_CMD(usage);
DECLARE_CMD(search);
DECLARE_CMD(sessions);
DECLARE_CMD(conversation);
DECLARE_CMD(status);
DECLARE_CMD(switch);
DECLARE_CMD(log);
DECLARE_CMD(diff);
DECLARE_CMD(serve);
DECLARE_CMD(acp);
DECLARE_CMD(remote);
DECLARE_CMD(push);
DECLARE_CMD(fetch);
DECLARE_CMD(clone);
DECLARE_CMD(app_server);
DECLARE_CMD(purge);
DECLARE_CMD(gc);
DECLARE_CMD(chat);

#endif
