// acp-sdk-client.mjs -- the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, a test-only dependency in t/node_modules)
// as a client of `aptix acp`, for t8202: initialize, session/new, a
// prompt, session/load, session/list and session/fork, each through the
// SDK (which checks every message against its own types). Prints one JSON
// object: what the test checks. Usage: node acp-sdk-client.mjs <cwd>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const cwd = process.argv[2];
const child = spawn("aptix", ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin),
                                Readable.toWeb(child.stdout));
const updates = [];
const out = {};

const app = acp.client({ name: "t8202" })
  .onNotification("session/update", (context) => {
    updates.push(context.params);
  });

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
  });
  out.protocolVersion = init.protocolVersion;
  out.agent = init.agentInfo.name;
  const s = await ctx.request("session/new", { cwd, mcpServers: [] });
  out.sessionId = s.sessionId;
  const p = await ctx.request("session/prompt", {
    sessionId: s.sessionId,
    prompt: [{ type: "text", text: "hello from the SDK" }],
  });
  out.stopReason = p.stopReason;
  out.promptKinds = updates.map((u) => u.update.sessionUpdate);
  out.answer = updates.filter((u) => u.update.sessionUpdate ===
    "agent_message_chunk").map((u) => u.update.content.text).join("");
  updates.length = 0;
  await ctx.request("session/load", { sessionId: s.sessionId, cwd,
                                      mcpServers: [] });
  // the replay came before the answer
  out.loadKinds = updates.map((u) => u.update.sessionUpdate);
  out.loadTexts = updates.map((u) => u.update.content?.text ?? null);
  const l = await ctx.request("session/list", { cwd });
  out.listed = l.sessions.map((x) => x.sessionId);
  updates.length = 0;
  const f = await ctx.request("session/fork", { sessionId: s.sessionId, cwd,
                                                mcpServers: [] });
  out.forkId = f.sessionId;
  out.forkKinds = updates.map((u) => u.update.sessionUpdate);
  const fp = await ctx.request("session/prompt", {
    sessionId: f.sessionId,
    prompt: [{ type: "text", text: "in the fork" }],
  });
  out.forkStop = fp.stopReason;
});
child.stdin.end();
await new Promise((resolve) => child.on("close", (code) => {
  out.exit = code;
  resolve();
}));
process.stdout.write(JSON.stringify(out) + "\n");
