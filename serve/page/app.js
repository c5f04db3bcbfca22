/*
 * serve/page/app.js - the page of `aptix serve`: draws the DAG of the
 * workspace's conversations (forks and retries as branches, failed turns
 * marked, each row with its id, date and heads), shows a turn when
 * clicked, and runs turns (continue, fork, rerun, a new conversation)
 * with the answer streaming in at the top of the turn pane and the turn
 * running drawn in the graph. Plain JavaScript, no library, no build step;
 * it talks to the server it came from only.
 *
 * What other processes (other hosts, on a shared store) commit comes in
 * on GET /api/events, a stream of the store's ref updates; the graph is
 * then read again, and the selected turn kept.
 *
 * The token comes in the URL's fragment (#token=..., never sent to the
 * server), is kept in sessionStorage and sent as a bearer token. Text
 * from the store is only ever set as textContent.
 */
"use strict";

const PAGE = 1000;		/* turns per page of the graph, the newest first */
const LANE = 22, ROW = 26, X0 = 16, Y0 = 18;
const SVG = "http://www.w3.org/2000/svg";

const state = {
	token: null,
	cursors: [null],	/* the cursor of each page seen */
	page: 0,
	graph: null,
	selected: null,		/* the full view of the selected turn */
	running: null,		/* the conversation of the running turn */
	starting: false,	/* a turn asked for, not ended */
	ghost: null,		/* {parent, instruction} of the running turn */
	deltas: 0,
	updates: 0,		/* ref updates heard from the server */
	reload: null		/* the timer of a reload they asked for */
};
window.aptix = state;		/* for tests and the curious */

const $ = (id) => document.getElementById(id);

function setStatus(text) {
	$("status").textContent = text;
}

function showLogin() {
	$("login").hidden = false;
}

function initToken() {
	const m = location.hash.match(/token=([0-9A-Za-z]+)/);

	if (m) {
		sessionStorage.setItem("aptix-token", m[1]);
		history.replaceState(null, "", location.pathname);
	}
	state.token = sessionStorage.getItem("aptix-token");
	if (!state.token)
		showLogin();
}

async function api(path, opts) {
	const o = Object.assign({}, opts || {});
	o.headers = Object.assign({ Authorization: "Bearer " + state.token },
				  o.headers || {});
	const r = await fetch(path, o);
	if (r.status === 401) {
		showLogin();
		throw new Error("the server refused the token");
	}
	const ct = r.headers.get("Content-Type") || "";
	const body = ct.startsWith("application/json") ? await r.json() :
		await r.text();
	if (!r.ok)
		throw new Error(body && body.error ? body.error.message :
				"HTTP " + r.status);
	return body;
}

function listQuery() {
	const p = new URLSearchParams();
	const cursor = state.cursors[state.page];

	p.set("limit", String(PAGE));
	if (cursor)
		p.set("cursor", cursor);
	if ($("q").value)
		p.set("q", $("q").value);
	if ($("all").checked)
		p.set("all", "1");
	if ($("archived").checked)
		p.set("archived", "1");
	return p.toString();
}

/* ---- the graph ---- */

function el(name, attrs, parent) {
	const e = document.createElementNS(SVG, name);

	for (const k in attrs)
		e.setAttribute(k, attrs[k]);
	if (parent)
		parent.appendChild(e);
	return e;
}

function cut(s, n) {
	s = (s || "").replace(/\s+/g, " ");
	return s.length > n ? s.slice(0, n - 1) + "\u2026" : s;
}

function nodeClass(n) {
	if (n.failed)
		return "failed";
	return n.turn_status === "completed" ? "completed" : "pending";
}

/* "2026-11-27 16:40" in the browser's time zone */
function shortDate(iso) {
	const d = iso ? new Date(iso) : null;
	const p = (x) => String(x).padStart(2, "0");

	if (!d || isNaN(d))
		return "";
	return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
		`${p(d.getHours())}:${p(d.getMinutes())}`;
}

/*
 * Columns. The turns on the chain that leads to a conversation's head
 * share a column; a turn off it (a failed try, a rerun: a sibling of
 * the turn that went on) starts a branch of its own from its parent, so
 * that siblings are drawn side by side, not as a chain. A branch holds
 * a column from its parent's row to its last row; a column is reused
 * once the branch in it has ended: the first free one right of the
 * branch it leaves (a fork, a retry), else the first free one.
 */
function layout(g) {
	const byId = new Map(g.nodes.map((n) => [n.id, n]));
	const main = new Set();
	const branchOf = new Map();
	const continued = new Set();
	const branches = [];

	for (const c of g.conversations)
		for (let n = byId.get(c.head); n && n.conversation === c.conversation &&
		     !main.has(n.id); n = byId.get(n.parent))
			main.add(n.id);
	for (const n of g.nodes) {
		const p = n.parent_row === null ? null : g.nodes[n.parent_row];
		const same = p && p.conversation === n.conversation;
		let b;

		if (main.has(n.id))
			b = branchOf.get(n.conversation + "\n");
		else if (same && !main.has(p.id) && !continued.has(p.id))
			b = branchOf.get(p.id);
		if (!b) {
			b = { start: p ? p.row : n.row, end: n.row,
			      main: main.has(n.id), first: n.row,
			      from: p ? branchOf.get(p.id) : null };
			branches.push(b);
			if (b.main)
				branchOf.set(n.conversation + "\n", b);
		}
		if (p)
			continued.add(p.id);
		b.end = n.row;
		branchOf.set(n.id, b);
	}
	branches.sort((x, y) => x.start - y.start || y.main - x.main ||
		      x.first - y.first);
	const ends = [];
	for (const b of branches) {
		/* a branch goes right of the one it leaves */
		let col = b.from ? b.from.col + 1 : 0;

		while (col < ends.length && ends[col] >= b.start)
			col++;
		ends[col] = b.end;
		b.col = col;
	}
	const col = new Map();
	for (const n of g.nodes)
		col.set(n.id, branchOf.get(n.id).col);
	return { col: col, cols: Math.max(ends.length, 1) };
}

/* The decorations of a node, as git log --decorate: heads and HEAD. */
function decorations(g, n, titles) {
	const head = g.head || {};
	const out = [];

	for (const c of g.conversations) {
		if (c.head !== n.id)
			continue;
		const name = cut(titles[c.conversation], 30);
		out.push(head.conversation === c.conversation ? "HEAD \u2192 " + name :
			 name);
	}
	if (head.session === n.id && !out.some((d) => d.startsWith("HEAD")))
		out.unshift("HEAD");
	return out;
}

function span(parent, cls, text) {
	const t = el("tspan", { class: cls }, parent);

	t.textContent = text;
	return t;
}

function drawNode(svg, g, n, pos, textX, titles) {
	const gr = el("g", { class: "node " + nodeClass(n), "data-id": n.id,
			      tabindex: "0" }, svg);
	const t = el("title", {}, gr);
	const x = pos.x, y = pos.y;

	t.textContent = `${titles[n.conversation] || ""}\n` +
		`${n.summary || ""}\n${n.status} ${n.created_at || ""}`;
	el("rect", { class: "row", x: 0, y: y - ROW / 2, width: "100%",
		     height: ROW }, gr);
	el("circle", { cx: x, cy: y, r: n.failed ? 8 : 7 }, gr);
	if (n.failed) {
		const m = el("text", { x: x, y: y + 4, class: "mark",
				       "text-anchor": "middle" }, gr);
		m.textContent = "\u00d7";
	}
	const label = el("text", { x: textX, y: y + 4 }, gr);
	span(label, "id", n.id.slice(0, 8) + "  ");
	span(label, "date", shortDate(n.created_at) + "  ");
	const deco = decorations(g, n, titles);
	if (deco.length)
		span(label, "deco" + (deco[0].startsWith("HEAD") ? " head" : ""),
		     "(" + deco.join(", ") + ") ");
	if (n.failed)
		span(label, "failedtag", "failed: ");
	let s = cut(n.summary, 60);
	if (n.parent && n.parent_row === null)
		s = "\u2937 " + s;	/* forked from a turn not shown */
	span(label, "summary", s);
	gr.addEventListener("click", () => pick(n.id));
	gr.addEventListener("keydown", (ev) => {
		if (ev.key === "Enter")
			pick(n.id);
	});
	if (state.selected && state.selected.session === n.id)
		gr.classList.add("selected");
}

/*
 * The turn running, drawn below the others as a pulsing node joined to
 * its parent by a dashed edge, in a column of its own.
 */
function drawGhost(svg, edges, g, at, pos, textX) {
	const r = state.ghost;
	const gx = at.x(at.cols), gy = at.y(g.nodes.length);
	const gr = el("g", { class: "node running", id: "ghost" }, svg);
	const p = r.parent && pos.get(r.parent);

	if (p)
		el("path", { class: "edge ghost", d: `M${p.x},${p.y} C${p.x},` +
			     `${p.y + ROW * 0.8} ${gx},${gy - ROW} ${gx},${gy}` },
		   edges);
	el("circle", { cx: gx, cy: gy, r: 7 }, gr);
	const label = el("text", { x: textX, y: gy + 4 }, gr);
	span(label, "deco", "running: ");
	span(label, "summary", cut(r.instruction, 60));
}

function draw(g) {
	const svg = $("graph");
	const lay = layout(g);
	const cols = lay.cols + (state.ghost ? 1 : 0);
	const textX = X0 + cols * LANE + 6;
	const rows = g.nodes.length + (state.ghost ? 1 : 0);
	const titles = {};
	const at = { x: (c) => X0 + c * LANE, y: (r) => Y0 + r * ROW,
		     cols: lay.cols };
	const pos = new Map();

	svg.textContent = "";
	for (const c of g.conversations)
		titles[c.conversation] = c.title || c.conversation.slice(0, 8);
	svg.setAttribute("width", String(textX + 640));	/* until measured */
	svg.setAttribute("height", String(Y0 + rows * ROW + 8));
	for (const n of g.nodes)
		pos.set(n.id, { x: at.x(lay.col.get(n.id)), y: at.y(n.row) });
	const edges = el("g", {}, svg);
	for (const n of g.nodes) {
		if (n.parent_row === null)
			continue;
		const p = pos.get(g.nodes[n.parent_row].id), c = pos.get(n.id);
		const d = p.x === c.x ? `M${p.x},${p.y} L${c.x},${c.y}` :
			`M${p.x},${p.y} C${p.x},${p.y + ROW * 0.8} ${c.x},` +
			`${p.y + ROW * 0.2} ${c.x},${p.y + ROW} L${c.x},${c.y}`;
		el("path", { d: d, class: "edge" }, edges);
	}
	for (const n of g.nodes)
		drawNode(svg, g, n, pos.get(n.id), textX, titles);
	if (state.ghost)
		drawGhost(svg, edges, g, at, pos, textX);
	/* as wide as the longest label: no scrolling for nothing */
	let w = 0;
	for (const t of svg.querySelectorAll(".node text:not(.mark)"))
		w = Math.max(w, t.getComputedTextLength());
	svg.setAttribute("width", String(Math.ceil(textX + w + 12)));
}

/* Scroll the graph pane so that an element of the graph is in sight. */
function reveal(e) {
	if (e)
		e.scrollIntoView({ block: "nearest", inline: "nearest" });
}

async function loadGraph(selectId) {
	try {
		setStatus("loading\u2026");
		const g = await api("/api/graph?" + listQuery());
		state.graph = g;
		state.cursors[state.page + 1] = g.next_cursor;
		$("older").disabled = !g.next_cursor;
		$("newer").disabled = state.page === 0;
		$("pageinfo").textContent = `page ${state.page + 1}`;
		setStatus(`${g.conversations.length} conversation` +
			  (g.conversations.length === 1 ? "" : "s") +
			  `, ${g.nodes.length} turns`);
		draw(g);
		showEmpty(g);
		if (!selectId && !state.shown && g.head && g.head.session)
			reveal(document.querySelector(
				`#graph .node[data-id="${g.head.session}"]`));
		state.shown = true;
		document.body.dataset.graph = "ready";
		if (selectId)
			await select(selectId);
	} catch (e) {
		setStatus("error: " + e.message);
	}
}

/* Nothing to draw: say how to start. */
function showEmpty(g) {
	const none = !g.conversations.length && state.page === 0;
	const filtered = $("q").value || $("all").checked;

	$("empty").hidden = !none;
	$("empty-other").hidden = !none || filtered;
	$("graph").style.display = none ? "none" : "";
	document.body.dataset.empty = none ? "yes" : "no";
	if (none && !state.running)
		$("instruction").focus();
}

/* ---- a turn ---- */

function fillList(ul, items, text) {
	ul.textContent = "";
	for (const it of items) {
		const li = document.createElement("li");
		li.textContent = text(it);
		ul.appendChild(li);
	}
	ul.previousElementSibling.hidden = !items.length;
	ul.hidden = !items.length;
}

function fillMeta(t) {
	const dl = $("t-meta");
	const u = t.usage || {};
	const rows = [
		["session", t.session], ["conversation", t.conversation],
		["parent", t.parent || "none (a root)"],
		["status", t.failed ? `${t.status} (turn ${t.turn_status})` :
		 t.status],
		["created", t.created_at], ["model", t.model],
		["usage", `${u.input_tokens || 0} in, ${u.output_tokens || 0}` +
		 ` out, ${u.total_tokens || 0} tokens`],
		["duration", `${t.duration_ms} ms`]
	];
	if (t.forked_from)
		rows.push(["forked from", t.forked_from]);
	dl.textContent = "";
	for (const [k, v] of rows) {
		const dt = document.createElement("dt");
		const dd = document.createElement("dd");
		dt.textContent = k;
		dd.textContent = v === null || v === undefined ? "-" :
			String(v);
		dl.appendChild(dt);
		dl.appendChild(dd);
	}
}

/* Pretty JSON when it parses (a call's arguments), else as it is. */
function pretty(text) {
	try {
		return JSON.stringify(JSON.parse(text), null, 2);
	} catch (e) {
		return text;
	}
}

/* Folded entries: a summary line each, the body shown on a click. */
function fillFolded(div, items, summary, body) {
	div.textContent = "";
	for (const it of items) {
		const d = document.createElement("details");
		const s = document.createElement("summary");
		const pre = document.createElement("pre");

		s.textContent = summary(it);
		pre.textContent = body(it);
		d.append(s, pre);
		div.appendChild(d);
	}
	div.previousElementSibling.hidden = !items.length;
	div.hidden = !items.length;
}

function resultSummary(r) {
	const how = r.exit_code !== null && r.exit_code !== undefined ?
		`exit ${r.exit_code}` : r.status;
	return `${r.name || "?"}  ${r.call_id}  ${how}` +
		(r.exit_code !== null && r.status !== "ok" &&
		 r.status !== "error" ? ` (${r.status})` : "") +
		`  ${r.output_bytes} bytes` +
		(r.duration_ms ? `  ${r.duration_ms} ms` : "") +
		(r.truncated ? "  truncated" : "");
}

function fillTools(t) {
	fillFolded($("t-calls"), t.tool_calls || [], (c) =>
		`${c.name}  ${c.call_id}`, (c) => pretty(c.arguments || ""));
	fillFolded($("t-results"), t.tool_results || [], resultSummary,
		   (r) => (r.cwd ? `cwd ${r.cwd}\n` : "") +
		   (r.argv && r.argv.length ? `argv ${r.argv.join(" ")}\n` :
		    "") + (r.output === null ? "(output not stored)" :
			   r.output));
}

function lines(div, items, heading) {
	div.textContent = "";
	if (!items.length)
		return;
	const h = document.createElement("h3");
	h.textContent = heading;
	div.appendChild(h);
	for (const s of items) {
		const p = document.createElement("pre");
		p.textContent = s;
		div.appendChild(p);
	}
}

function rawPayload(details, id) {
	const pre = details.querySelector("pre");

	details.hidden = !id;
	details.open = false;
	pre.textContent = "";
	details.ontoggle = async () => {
		if (!details.open || pre.textContent)
			return;
		try {
			const body = await api("/api/objects/" + id);
			let text = typeof body === "string" ? body :
				JSON.stringify(body, null, 2);
			try {
				text = JSON.stringify(JSON.parse(text), null,
						      2);
			} catch (e) {
				/* not JSON: as it is */
			}
			pre.textContent = text;
		} catch (e) {
			pre.textContent = "error: " + e.message;
		}
	};
}

/* A turn clicked: the panel of a turn that has ended makes way. */
function pick(id) {
	if (!state.running && !state.starting)
		$("live").hidden = true;
	return select(id);
}

async function select(id) {
	try {
		const t = await api("/api/turns/" + id + "/full");
		let node = null;
		state.selected = t;
		for (const g of document.querySelectorAll("#graph .node")) {
			g.classList.toggle("selected", g.dataset.id === id);
			if (g.dataset.id === id)
				node = g;
		}
		reveal(node);
		$("hint").hidden = true;
		$("turn").hidden = false;
		$("turnview").scrollTop = 0;
		$("t-title").textContent = `Turn #${t.seq} of ` +
			conversationTitle(t.conversation);
		setButtons();
		fillMeta(t);
		lines($("t-errors"), t.errors, "Errors");
		$("t-instruction").textContent = t.instruction ||
			(t.tool_results && t.tool_results.length ?
			 "(none: this turn sends the tool results below)" :
			 "");
		$("t-answer").textContent = t.answer === null ?
			"(no answer)" : t.answer;
		fillList($("t-sources"), t.sources, (c) =>
			`${c.path}:${c.start_line}-${c.end_line}  score ` +
			c.score.toFixed(3) +
			(c.sent ? "" : "  (already sent)"));
		fillList($("t-files"), t.files, (f) =>
			`${f.path}  ${f.size} bytes  ` +
			(f.too_large ? "too large" : f.binary ? "binary" :
			 f.sent ? "sent" : "unchanged") +
			(f.touched ? ", touched" : ""));
		fillTools(t);
		lines($("t-warnings"), t.warnings, "Warnings");
		rawPayload($("t-request"), t.request_payload_id);
		rawPayload($("t-response"), t.response_payload_id);
		document.body.dataset.selected = id;
	} catch (e) {
		setStatus("error: " + e.message);
	}
}

function conversationTitle(id) {
	const c = state.graph && state.graph.conversations.find(
		(c) => c.conversation === id);
	return c && c.title ? `\u201c${c.title}\u201d` : id.slice(0, 8);
}

/* ---- running a turn ---- */

function parseEvents(buf, onEvent) {
	let i;

	while ((i = buf.indexOf("\n\n")) >= 0) {
		const block = buf.slice(0, i);
		let name = "message", data = "";

		buf = buf.slice(i + 2);
		for (const line of block.split("\n")) {
			if (line.startsWith("event: "))
				name = line.slice(7);
			else if (line.startsWith("data: "))
				data += line.slice(6);
		}
		if (data)
			onEvent(name, JSON.parse(data));
	}
	return buf;
}

/* What the buttons act on, and which of them can. */
function setButtons() {
	const t = state.selected, busy = !!state.running || state.starting;

	$("continue").disabled = !t || busy;
	$("fork").disabled = !t || busy;
	$("rerun").disabled = !t || busy;
	$("start").disabled = busy;
	$("interrupt").disabled = !state.running;
	$("act-target").textContent = t ? `On turn #${t.seq} ` +
		`(${t.session.slice(0, 8)}) of ` +
		conversationTitle(t.conversation) : "No turn selected: " +
		"start a conversation, or click a turn in the graph.";
}

/*
 * Show the turn starting where the user looks: the live panel at the top
 * of the turn pane (its answer streams into #stream), and a pulsing node
 * in the graph where the turn will be.
 */
function showLive(body, title) {
	const parent = body.kind === "continue" && state.graph ?
		(state.graph.conversations.find(
			(c) => c.conversation === body.conversation) || {}).head :
		body.session;

	$("live").hidden = false;
	$("live-title").textContent = title;
	$("live-instruction").textContent = body.instruction ||
		(state.selected ? state.selected.instruction : "");
	$("stream").textContent = "";
	state.ghost = { parent: parent || null,
			instruction: $("live-instruction").textContent };
	if (state.graph) {
		draw(state.graph);
		$("graph").style.display = "";
		$("empty").hidden = true;
		reveal($("ghost"));
	}
	$("live").scrollTop = 0;
}

function onEvent(name, d, out) {
	if (name === "started") {
		state.running = d.conversation;
		setButtons();
		document.body.dataset.state = "streaming";
	} else if (name === "delta") {
		state.deltas++;
		out.textContent += d.text;
		$("live").scrollTop = $("live").scrollHeight;
	}
}

async function run(body, title) {
	const out = $("stream");
	let final = null;

	state.deltas = 0;
	state.starting = true;
	document.body.dataset.state = "starting";
	setButtons();
	showLive(body, title);
	try {
		const r = await fetch("/api/ai/agent/execute", {
			method: "POST",
			headers: { Authorization: "Bearer " + state.token,
				   "Content-Type": "application/json",
				   Accept: "text/event-stream" },
			body: JSON.stringify(body)
		});
		if (!r.ok) {
			const e = await r.json();
			throw new Error(e.error ? e.error.message :
					"HTTP " + r.status);
		}
		const reader = r.body.getReader();
		const dec = new TextDecoder();
		let buf = "";
		for (;;) {
			const { value, done } = await reader.read();
			if (done)
				break;
			buf = parseEvents(buf + dec.decode(value,
				{ stream: true }), (name, d) => {
				if (name === "completed")
					final = d;
				else
					onEvent(name, d, out);
			});
		}
		if (!final)
			throw new Error("the stream ended early");
		if (final.kind === "error")
			out.textContent += `\n\n[${final.status}: ` +
				`${final.error_message}]`;
		$("live-title").textContent = title.replace(/^Running/,
			final.status === "completed" ? "Done" : "Failed");
		document.body.dataset.state = "done";
		document.body.dataset.result = final.status;
		$("instruction").value = "";
		state.ghost = null;
		state.running = null;
		await loadGraph(final.session);
	} catch (e) {
		out.textContent += "\nerror: " + e.message;
		$("live-title").textContent = title.replace(/^Running/,
			"Not run");
		document.body.dataset.state = "error";
		state.ghost = null;
		if (state.graph)
			draw(state.graph);
	} finally {
		state.running = null;
		state.starting = false;
		setButtons();
	}
}

function instruction() {
	const s = $("instruction").value;

	if (!s.trim()) {
		$("act-target").textContent = "Type an instruction first.";
		$("instruction").focus();
		return null;
	}
	return s;
}

function turnName(t) {
	return `turn #${t.seq} of ${conversationTitle(t.conversation)}`;
}

function setupActions() {
	$("continue").addEventListener("click", () => {
		const s = instruction(), t = state.selected;
		if (s && t)
			run({ kind: "continue", conversation: t.conversation,
			      instruction: s },
			    "Running: continuing " +
			    conversationTitle(t.conversation));
	});
	$("fork").addEventListener("click", () => {
		const s = instruction(), t = state.selected;
		if (s && t)
			run({ kind: "fork", session: t.session,
			      instruction: s },
			    "Running: a fork from " + turnName(t));
	});
	$("rerun").addEventListener("click", () => {
		const t = state.selected;
		if (t)
			run({ kind: "rerun", session: t.session },
			    "Running: " + turnName(t) + " again");
	});
	$("start").addEventListener("click", () => {
		const s = instruction();
		if (s)
			run({ kind: "continue", instruction: s },
			    "Running: a new conversation");
	});
	$("interrupt").addEventListener("click", () => {
		if (state.running)
			api("/api/conversations/" + state.running +
			    "/interrupt", { method: "POST", body: "{}" }).catch(
				(e) => setStatus("error: " + e.message));
	});
}

/* ---- the store's updates, live ---- */

/* Read the graph again soon (a burst of updates is one reading). */
function reloadSoon() {
	if (state.reload)
		return;
	state.reload = setTimeout(async () => {
		state.reload = null;
		/* a turn of this page's own reloads when it ends */
		if (state.running || state.starting)
			return;
		await loadGraph(state.selected ? state.selected.session :
				undefined);
		document.body.dataset.updates = String(state.updates);
	}, 150);
}

function onUpdate(name, d) {
	if (name === "hello") {
		document.body.dataset.live = d.live ? "announced" : "polled";
	} else if (name === "ref" || name === "resync") {
		state.updates++;
		reloadSoon();
	}
}

async function listen() {
	for (let wait = 1000; ; wait = Math.min(wait * 2, 30000)) {
		try {
			const r = await fetch("/api/events", {
				headers: { Authorization: "Bearer " +
					   state.token,
					   Accept: "text/event-stream" } });
			if (r.status === 401) {
				showLogin();
				return;
			}
			const reader = r.body.getReader();
			const dec = new TextDecoder();
			let buf = "";

			wait = 1000;
			for (;;) {
				const { value, done } = await reader.read();
				if (done)
					break;
				buf = parseEvents(buf + dec.decode(value,
					{ stream: true }), onUpdate);
			}
		} catch (e) {
			/* the server went away: try again, slower */
		}
		document.body.dataset.live = "lost";
		await new Promise((res) => setTimeout(res, wait));
	}
}

/* ---- search ---- */

/*
 * The turns whose words best match the search box (GET /api/search,
 * ranked by BM25), above the graph; a click shows the turn.
 */
async function search() {
	const q = $("sq").value.trim();
	const ol = $("hits");

	if (!q) {
		closeResults();
		return;
	}
	try {
		const p = new URLSearchParams({ q: q, limit: "20" });
		const r = await api("/api/search?" + p.toString());
		ol.textContent = "";
		$("results-title").textContent = r.hits.length ?
			`${r.hits.length} turn${r.hits.length === 1 ? "" : "s"} ` +
			`matching “${q}”` :
			`No turn matches “${q}”`;
		for (const h of r.hits) {
			const li = document.createElement("li");
			const b = document.createElement("button");
			b.type = "button";
			b.className = "hit" + (h.failed ? " failed" : "");
			b.dataset.id = h.session;
			textSpan(b, "summary", h.summary || "(no instruction)");
			textSpan(b, "where", conversationTitle(h.conversation) +
				 "  " + h.session.slice(0, 12) + "  " +
				 shortDate(h.created_at) +
				 (h.failed ? "  failed" : ""));
			b.addEventListener("click", () => pick(h.session));
			li.appendChild(b);
			ol.appendChild(li);
		}
		$("results").hidden = false;
		$("graphpane").scrollTop = 0;	/* where the results are */
		document.body.dataset.search = "ready";
	} catch (e) {
		setStatus("error: " + e.message);
	}
}

function textSpan(parent, cls, text) {
	const e = document.createElement("span");

	e.className = cls;
	e.textContent = text;
	parent.appendChild(e);
	return e;
}

function closeResults() {
	$("results").hidden = true;
	$("hits").textContent = "";
	delete document.body.dataset.search;
}

function setup() {
	initToken();
	$("tokenform").addEventListener("submit", (ev) => {
		ev.preventDefault();
		sessionStorage.setItem("aptix-token", $("token").value.trim());
		state.token = $("token").value.trim();
		$("login").hidden = true;
		loadGraph();
		listen();
	});
	$("filter").addEventListener("submit", (ev) => ev.preventDefault());
	$("searchform").addEventListener("submit", (ev) => {
		ev.preventDefault();
		search();
	});
	$("results-close").addEventListener("click", () => {
		$("sq").value = "";
		closeResults();
	});
	$("act").addEventListener("submit", (ev) => ev.preventDefault());
	for (const id of ["q", "all", "archived"])
		$(id).addEventListener("change", () => {
			state.page = 0;
			state.cursors = [null];
			loadGraph();
		});
	$("older").addEventListener("click", () => {
		state.page++;
		loadGraph();
	});
	$("newer").addEventListener("click", () => {
		state.page = Math.max(0, state.page - 1);
		loadGraph();
	});
	setupActions();
	setButtons();
	if (state.token) {
		loadGraph();
		listen();
	}
}

document.addEventListener("DOMContentLoaded", setup);
