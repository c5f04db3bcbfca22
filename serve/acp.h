/*
 * serve/acp.h - `aptix acp`: aptix as an agent of the Agent Client
 * Protocol (ACP, https://agentclientprotocol.com), the JSON-RPC 2.0
 * protocol over stdio that editors (Zed, JetBrains, Neovim, Emacs...)
 * speak to their agents. A dialect of serve/jsonrpc.c; the mapping of
 * ACP onto aptix is described in serve/ACP.md.
 */
#ifndef APTIX_ACP_H
#define APTIX_ACP_H

#include "jsonrpc.h"

struct acp;

/* An agent serving s's store, writing its messages to out_fd. */
int acp_new(struct acp **out, struct serve *s, int out_fd);
/* Its transport: read with jsonrpc_serve_fd(), stop with _shutdown(). */
struct jsonrpc *acp_transport(struct acp *a);
/* Free the agent and its transport (after jsonrpc_shutdown()). */
void acp_free(struct acp *a);

#endif
